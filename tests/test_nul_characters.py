"""NUL characters (U+0000) in input: one behaviour on SQLite and PostgreSQL (issue 22, items 7 and 10).

PostgreSQL cannot store NUL in text (and answered 500), SQLite stored it. Now:
- a name, id or any other string of a JSON body with NUL is a 400 naming the field (its path);
- free text of result items (``error_message``, ``error_stack``, ``comment`` of POST /ingest and
  POST /runs/{id}/results: output of test reports) is stored with each NUL replaced by U+FFFD;
- a query parameter with NUL is a 400 naming it, except the search text ``q``, which drops it;
  a path (an id) with NUL is a 404;
- a web form field with NUL is a 400 naming the field;
- typed search syntax is never an error.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import postgres_cluster
from tests.conftest import ServerProcess, Tenant, assert_problem, make_tenant_on

NUL = "\x00"
ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
FEATURE = "Feature: Checkout\n  Scenario: pay\n    Given a cart\n    When I pay\n    Then it is paid\n"

IN_PROCESS = True  # tests/inprocess.py; `tms ingest` (a subprocess) runs on a server: test_nul_characters_cli.py


@pytest.fixture(scope="module")
def server(app_server: ServerProcess) -> ServerProcess:
    """The app the world lives on (in-process here)."""
    return app_server


@pytest.fixture(scope="module")
def world(server: ServerProcess) -> dict[str, Any]:
    """One tenant with one of each object the scenarios write to."""
    tenant = make_tenant_on(server)
    api = tenant.api
    project = tenant.create_project("NUL project")["id"]

    def made(response: httpx.Response) -> dict[str, Any]:
        assert response.status_code == 201, response.text
        return response.json()["data"]  # type: ignore[no-any-return]

    case = made(api.post("/api/v1/cases", json={"project_id": project, "title": "Pay", "bdd_content": FEATURE}))
    run = made(api.post("/api/v1/runs", json={"project_id": project, "name": "Nightly", "test_case_ids": [case["id"]]}))
    section = made(api.post("/api/v1/sections", json={"project_id": project, "name": "Checkout"}))
    milestone = made(api.post("/api/v1/milestones", json={"project_id": project, "name": "1.0"}))
    plan = made(api.post("/api/v1/plans", json={"project_id": project, "name": "Release", "case_ids": [case["id"]]}))
    issue = made(api.post("/api/v1/known-issues", json={"project_id": project, "bug_ticket_key": "BUG-1",
                                                          "pattern": "timeout"}))
    results = api.get(f"/api/v1/runs/{run['id']}/results").json()["data"]
    web = tenant.web()
    hook = web.post("/api/webhooks", json={"url": "https://example.com/hook", "events": ["test_run.completed"]})
    assert hook.status_code == 201, hook.text
    return {"tenant": tenant, "project": project, "case": case["id"], "code": case["code"], "run": run["id"],
            "section": section["id"], "milestone": milestone["id"], "plan": plan["id"], "issue": issue["id"],
            "result": results[0]["id"], "hook": hook.json()["data"]["id"]}


# (method, path, body, the field the 400 names); "{project}" etc. are filled from ``world``
BODY_SCENARIOS: list[tuple[str, str, dict[str, Any], str]] = [
    ("POST", "/api/v1/projects", {"name": "a\x00b"}, "name"),
    ("POST", "/api/v1/projects", {"name": "ok", "description": "x\x00"}, "description"),
    ("POST", "/api/v1/projects", {"name": "ok", "environments": ["ci", "st\x00ge"]}, "environments[1]"),
    ("PATCH", "/api/v1/projects/{project}", {"name": "\x00"}, "name"),
    ("POST", "/api/v1/cases", {"project_id": "{project}", "title": "Pay\x00", "bdd_content": FEATURE}, "title"),
    ("POST", "/api/v1/cases", {"project_id": "{project}", "title": "Pay", "bdd_content": FEATURE + "\x00"},
     "bdd_content"),
    ("POST", "/api/v1/cases", {"project_id": "{project}\x00", "title": "Pay", "bdd_content": FEATURE},
     "project_id"),
    ("POST", "/api/v1/cases", {"project_id": "{project}", "title": "Pay", "bdd_content": FEATURE,
                               "tags": ["smoke", "sm\x00ke"]}, "tags[1]"),
    ("PATCH", "/api/v1/cases/{case}", {"title": "t\x00"}, "title"),
    ("POST", "/api/v1/runs", {"project_id": "{project}", "name": "Run\x00"}, "name"),
    ("POST", "/api/v1/runs", {"project_id": "{project}", "name": "Run", "test_case_ids": ["{case}\x00"]},
     "test_case_ids[0]"),
    ("PATCH", "/api/v1/runs/{run}", {"name": "\x00run"}, "name"),
    ("POST", "/api/v1/runs/{run}/cases", {"case_ids": ["\x00"]}, "case_ids[0]"),
    ("POST", "/api/v1/sections", {"project_id": "{project}", "name": "Sec\x00"}, "name"),
    ("PATCH", "/api/v1/sections/{section}", {"name": "Sec\x00"}, "name"),
    ("POST", "/api/v1/milestones", {"project_id": "{project}", "name": "2.0\x00"}, "name"),
    ("PATCH", "/api/v1/milestones/{milestone}", {"description": "d\x00"}, "description"),
    ("POST", "/api/v1/plans", {"project_id": "{project}", "name": "P\x00"}, "name"),
    ("PATCH", "/api/v1/plans/{plan}", {"name": "P\x00"}, "name"),
    ("POST", "/api/v1/known-issues", {"project_id": "{project}", "bug_ticket_key": "BUG-\x002"}, "bug_ticket_key"),
    ("PATCH", "/api/v1/known-issues/{issue}", {"note": "n\x00"}, "note"),
    ("POST", "/api/v1/quarantine", {"project_id": "{project}", "title": "t\x00", "reason": "flaky"}, "title"),
    ("PATCH", "/api/v1/results/{result}", {"comment": "c\x00"}, "comment"),
    ("POST", "/api/webhooks", {"url": "https://example.com/h\x00", "events": ["test_run.completed"]}, "url"),
    ("PATCH", "/api/webhooks/{hook}", {"secret": "s" * 20 + "\x00"}, "secret"),
    ("POST", "/api/v1/ingest", {"project_id": "{project}", "run_name": "r\x00", "results": []}, "run_name"),
    ("POST", "/api/v1/ingest", {"project_id": "{project}", "results": [
        {"title": "ok", "status": "PASSED"}, {"title": "x\x00", "status": "FAILED"}]}, "results[1].title"),
    ("POST", "/api/v1/ingest", {"project_id": "{project}", "results": [
        {"test_case_code": "{code}\x00", "status": "FAILED"}]}, "results[0].test_case_code"),
    ("POST", "/api/v1/runs/{run}/results", {"results": [{"test_case_id": "{case}", "status": "PASSED",
                                                          "bug_ticket_key": "B\x00"}]}, "results[0].bug_ticket_key"),
]


def _fill(value: Any, world: dict[str, Any]) -> Any:
    if isinstance(value, str):
        for key, text in world.items():
            if isinstance(text, str):
                value = value.replace("{" + key + "}", text)
        return value
    if isinstance(value, list):
        return [_fill(v, world) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, world) for k, v in value.items()}
    return value


def _client(world: dict[str, Any], path: str) -> httpx.Client:
    tenant: Tenant = world["tenant"]
    return tenant.web() if path.startswith("/api/webhooks") else tenant.api


@pytest.mark.parametrize(("method", "path", "body", "field"), BODY_SCENARIOS,
                         ids=[f"{m} {p} {f}" for m, p, _, f in BODY_SCENARIOS])
def test_a_string_with_nul_in_a_body_is_a_400_naming_its_field(
    world: dict[str, Any], method: str, path: str, body: dict[str, Any], field: str
) -> None:
    response = _client(world, path).request(method, _fill(path, world), json=_fill(body, world))
    problem = assert_problem(response, 400)
    assert [e["field"] for e in problem["errors"]] == [field], problem
    assert "NUL" in problem["errors"][0]["message"]


def test_a_gzip_ingest_with_nul_in_a_name_is_a_400_too(world: dict[str, Any]) -> None:
    body = json.dumps({"project_id": world["project"], "results": [{"title": "a\x00", "status": "PASSED"}]})
    response = world["tenant"].api.post("/api/v1/ingest", content=gzip.compress(body.encode()),
                                        headers={"content-type": "application/json", "content-encoding": "gzip"})
    assert [e["field"] for e in assert_problem(response, 400)["errors"]] == ["results[0].title"]


def test_an_escaped_backslash_before_u0000_is_no_nul(world: dict[str, Any]) -> None:
    """The raw body holds the bytes \\u0000 without a NUL character: a literal text, stored as sent."""
    name = "C:\\u0000 path"
    response = world["tenant"].api.post("/api/v1/projects", json={"name": name})
    assert response.status_code == 201, response.text
    assert response.json()["data"]["name"] == name


def _results_of(tenant: Tenant, run_id: str) -> list[dict[str, Any]]:
    response = tenant.api.get(f"/api/v1/runs/{run_id}/results", params={"limit": 100})
    assert response.status_code == 200, response.text
    return response.json()["data"]  # type: ignore[no-any-return]


def test_ingest_stores_free_text_with_nul_replaced(world: dict[str, Any]) -> None:
    """What `tms ingest` sends for a CTRF or go test report whose failure output holds NUL."""
    tenant: Tenant = world["tenant"]
    response = tenant.api.post("/api/v1/ingest", json={"project_id": world["project"], "run_name": "nul", "results": [
        {"test_case_code": world["code"], "status": "FAILED", "error_message": "expected \x00 got 1",
         "error_stack": "line 1\x00\nline 2", "comment": "stdout:\x00\x00"},
        {"title": "unlinked one", "status": "BROKEN", "error_message": "\x00boom"},
    ]})
    assert response.status_code == 201, response.text
    answer = response.json()
    assert answer["accepted"] == 2 and answer["rejected"] == 0
    linked, unlinked = _results_of(tenant, answer["run_id"])
    assert linked["test_case_code"] == world["code"] and unlinked["title"] == "unlinked one"
    assert unlinked["error_message"] == "\ufffdboom"
    assert linked["error_message"] == "expected \ufffd got 1"
    assert linked["error_stack"] == "line 1\ufffd\nline 2"
    assert linked["comment"] == "stdout:\ufffd\ufffd"
    failures = tenant.api.get(f"/api/v1/runs/{answer['run_id']}/failures")
    assert failures.status_code == 200, failures.text
    assert "\x00" not in failures.text and "\\u0000" not in failures.text


def test_post_results_stores_free_text_with_nul_replaced(world: dict[str, Any]) -> None:
    tenant: Tenant = world["tenant"]
    run = tenant.api.post("/api/v1/runs", json={"project_id": world["project"], "name": "by hand"}).json()["data"]
    response = tenant.api.post(f"/api/v1/runs/{run['id']}/results", json={"results": [
        {"test_case_id": world["case"], "status": "FAILED", "error_message": "a\x00b"}]})
    assert response.status_code in (200, 201), response.text
    [result] = _results_of(tenant, run["id"])
    assert result["error_message"] == "a\ufffdb"


@pytest.mark.parametrize("path", ["/api/v1/cases/{case}\x00", "/api/v1/runs/\x00", "/api/v1/projects/{project}\x00x"])
def test_an_id_with_nul_in_the_path_is_a_404(world: dict[str, Any], path: str) -> None:
    url = _fill(path, world).replace("\x00", "%00")
    assert_problem(world["tenant"].api.get(url), 404)


@pytest.mark.parametrize(("path", "param"), [
    ("/api/v1/cases", "tag"), ("/api/v1/cases", "project_id"), ("/api/v1/cases", "status"),
    ("/api/v1/runs", "project_id"), ("/api/v1/known-issues", "project_id"),
    ("/api/v1/runs/{run}/results", "assignee_id"),
])
def test_a_query_parameter_with_nul_is_a_400_naming_it(world: dict[str, Any], path: str, param: str) -> None:
    response = world["tenant"].api.get(_fill(path, world), params={param: "a\x00b"})
    problem = assert_problem(response, 400)
    assert [e["field"] for e in problem["errors"]] == [param]


TYPED_SEARCHES = [
    "a\x00b", "\x00", "pay\x00", '"pay', 'pay"', '"', "*", "pay*", "-pay", "pay -cart", "pay OR cart", "OR", "AND",
    "NOT pay", "NEAR(pay cart)", "NEAR(", "(pay", "pay)", "()", "title:pay", ":", "code:", "{title}: pay", "^pay",
    "pay + cart", "'pay'", "pay's", "\\", "\\u0000", "a\x00\x00b c\x00", "%", "_", "pay:*", "!pay", "pay & cart",
    "pay | cart", "<->", "'", "é\x00ü", "🙂", "a" * 300, "x y z " * 30,
]


def test_typed_search_syntax_is_never_an_error(world: dict[str, Any]) -> None:
    tenant: Tenant = world["tenant"]
    failures = []
    for q in TYPED_SEARCHES:
        for params in ({"q": q}, {"q": q, "project_id": world["project"]}, {"q": q, "tag": "smoke"},
                       {"q": q, "status": "DRAFT", "priority": "MEDIUM"}):
            response = tenant.api.get("/api/v1/cases", params=params)
            if response.status_code != 200:
                failures.append((params, response.status_code, response.text[:200]))
    assert not failures, failures


def test_search_with_nul_finds_the_words_on_both_sides_of_it(world: dict[str, Any]) -> None:
    tenant: Tenant = world["tenant"]
    found = tenant.api.get("/api/v1/cases", params={"q": "pay\x00checkout", "project_id": world["project"]})
    assert found.status_code == 200, found.text
    assert [c["id"] for c in found.json()["data"]] == [world["case"]]


def test_the_web_search_and_library_pages_take_nul_in_q(world: dict[str, Any]) -> None:
    web = world["tenant"].web()
    for q in ("a\x00b", "NEAR(", '"'):
        response = web.get("/cases", params={"q": q})
        assert response.status_code == 200, (q, response.status_code)


def test_a_web_form_field_with_nul_is_a_400_naming_it(world: dict[str, Any]) -> None:
    web = world["tenant"].web()
    response = web.post("/projects", data={"name": "Web\x00project"}, headers={"accept": "text/html"})
    assert response.status_code == 400, response.text
    assert "name" in response.text and "NUL" in response.text
    names = [p["name"] for p in world["tenant"].api.get("/api/v1/projects").json()["data"]]
    assert not any("Web" in name for name in names)


def test_a_web_page_query_parameter_with_nul_is_a_400(world: dict[str, Any]) -> None:
    web = world["tenant"].web()
    response = web.get("/cases", params={"status": "\x00"}, headers={"accept": "text/html"})
    assert response.status_code == 400
    assert "status" in response.text


def _in_process(server: ServerProcess, action: Callable[[Any], Any]) -> Any:
    from tests.conftest import run_admin

    return run_admin(server.db_path, action)


def test_the_database_refuses_a_nul_parameter_on_both_backends(server: ServerProcess) -> None:
    """The backstop under every check above: text with NUL never reaches either database."""
    from tms.errors import InvalidInput

    async def write(db: Any) -> str:
        try:
            async with db.transaction() as tx:
                await tx.execute("UPDATE tenants SET name = ? WHERE id = ?", ("x\x00", "none"))
        except InvalidInput as exc:
            return exc.detail
        return "stored"

    async def read(db: Any) -> str:
        try:
            await db.fetch_all("SELECT id FROM tenants WHERE name = ?", ("x\x00",))
        except InvalidInput as exc:
            return exc.detail
        return "read"

    assert "NUL" in _in_process(server, write)
    assert "NUL" in _in_process(server, read)


@pytest.mark.skipif(not postgres_cluster.selected(), reason="PostgreSQL's own refusal of NUL (SQLite stores it)")
@pytest.mark.parametrize("how", ["copy", "executemany", "json", "array"])
def test_postgres_refusing_nul_in_a_bulk_write_is_invalid_input(server: ServerProcess, how: str) -> None:
    """Bulk paths are not scanned (cost); PostgreSQL's refusal there is the same 400, never a 500."""
    from tms.errors import InvalidInput

    async def write(db: Any) -> str:
        try:
            async with db.transaction() as tx:
                await tx.execute("CREATE TEMP TABLE nul_probe (t TEXT)")
                if how == "copy":
                    await tx.insert_rows("nul_probe", ["t"], [("ok",), ("a\x00b",)])
                elif how == "executemany":
                    await tx.executemany("INSERT INTO nul_probe (t) VALUES (?)", [("ok",), ("a\x00b",)])
                elif how == "json":
                    await tx.fetch_all("SELECT value FROM json_each(?)", (json.dumps(["a\x00b"]),))
                else:
                    await tx.execute("INSERT INTO nul_probe (t) SELECT unnest(?::text[])", (["ok", "a\x00b"],))
        except InvalidInput as exc:
            return exc.detail
        return "stored"

    assert "NUL" in _in_process(server, write)
