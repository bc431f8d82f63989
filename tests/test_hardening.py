"""Hardening (issue 12): each reproducer of the outside attack on the release, as a regression test."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from tests.conftest import ServerProcess, Tenant, assert_problem

IN_PROCESS = True  # tests/inprocess.py


@pytest.fixture
def server(app_server: ServerProcess) -> ServerProcess:
    """The app the tenants live on (in-process here): its answers, its log."""
    return app_server

# --- OPTIONS and CORS preflight ------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/v1/projects", "/api/v1/runs/some-id/results", "/api/v1/me",
                                  "/api/webhooks", "/projects"])
def test_options_answers_204_with_allow_unauthenticated_and_logs_nothing(server: ServerProcess, path: str) -> None:
    log_before = len(server.log())
    plain = server.http_client().options(path)
    preflight = server.http_client().options(path, headers={
        "Origin": "https://elsewhere.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})
    for response in (plain, preflight):
        assert response.status_code == 204, response.text
        allowed = {m.strip() for m in response.headers["allow"].split(",")}
        assert "OPTIONS" in allowed and allowed & {"GET", "POST"}
        # no CORS policy: a cross-origin page is not invited in
        assert "access-control-allow-origin" not in response.headers
    assert {m.strip() for m in plain.headers["allow"].split(",")} >= (
        {"GET", "POST"} if path in ("/api/v1/projects", "/api/webhooks") else {"GET"})
    assert "Traceback" not in server.log()[log_before:]


# --- inputs that were 500s: each a 400 (or a per-item error in a batch) naming the field ---------

FEATURE = "Feature: Pay\n  Scenario: card\n    Given a card\n"


def _case_and_run(tenant: Tenant) -> tuple[str, str, str]:
    project = tenant.create_project()
    case = tenant.api.post("/api/v1/cases", json={"title": "Pay", "bdd_content": FEATURE,
                                                  "project_id": project["id"]})
    assert case.status_code == 201, case.text
    run = tenant.api.post("/api/v1/runs", json={"name": "nightly", "project_id": project["id"]})
    assert run.status_code == 201, run.text
    return project["id"], case.json()["data"]["code"], run.json()["data"]["id"]


@pytest.mark.parametrize(("field", "value", "says"), [
    ("duration_ms", 10**22, "duration_ms"),
    ("duration_ms", 2**63, "duration_ms"),
    ("executed_at", "9999-12-31T23:59:59-01:00", "executed_at"),
    ("executed_at", "0001-01-01T00:00:00+01:00", "executed_at"),
])
def test_out_of_range_result_fields_are_item_errors_naming_the_field(
    tenant: Tenant, field: str, value: object, says: str
) -> None:
    project_id, code, run_id = _case_and_run(tenant)
    item = {"test_case_code": code, "status": "PASSED", field: value}
    response = tenant.api.post(f"/api/v1/runs/{run_id}/results", json={"results": [item]})
    assert response.status_code == 207, response.text
    body = response.json()
    assert body["accepted"] == 0 and body["rejected"] == 1
    assert says in body["errors"][0]["error"]
    # an ingest none of whose items can be stored is a 400 that creates nothing
    response = tenant.api.post("/api/v1/ingest", json={"project_id": project_id, "results": [item]})
    problem = assert_problem(response, 400)
    assert problem["errors"][0]["field"] == "results[0]" and says in problem["errors"][0]["message"]
    assert len(tenant.api.get("/api/v1/runs", params={"project_id": project_id}).json()["data"]) == 1
    assert tenant.api.get(f"/api/v1/runs/{run_id}/results").json()["data"] == []
    # the largest value SQLite stores is fine
    ok = {"test_case_code": code, "status": "PASSED", "duration_ms": 2**63 - 1,
          "executed_at": "9999-12-31T23:59:59+01:00"}
    assert tenant.api.post(f"/api/v1/runs/{run_id}/results", json={"results": [ok]}).status_code == 201


DEEP = b"[" * 50_000 + b"]" * 50_000


@pytest.mark.parametrize(("path", "body", "message"), [
    ("/api/v1/runs/{run}/results", b'{"results": ' + DEEP + b"}", "nested too deeply"),
    ("/api/v1/ingest", b'{"project_id": "{project}", "results": ' + DEEP + b"}", "nested too deeply"),
    ("/api/v1/runs/{run}/results", b'{"results": [{"status": "PASSED", "title": "\xff"}]}', "UTF-8"),
    ("/api/v1/ingest", b'{"project_id": "\xfe", "results": []}', "UTF-8"),
    ("/api/v1/projects", b'{"name": "caf\xe9"}', "UTF-8"),
    ("/api/v1/runs", b'{"name": "\xff", "project_id": "{project}"}', "UTF-8"),
])
def test_unreadable_json_bodies_are_400_naming_the_body(tenant: Tenant, path: str, body: bytes,
                                                         message: str) -> None:
    project_id, _, run_id = _case_and_run(tenant)
    url = path.replace("{run}", run_id)
    content = body.replace(b"{project}", project_id.encode())
    response = tenant.api.post(url, content=content, headers={"Content-Type": "application/json"})
    problem = assert_problem(response, 400)
    assert problem["errors"] == [{"field": "body", "message": problem["errors"][0]["message"]}]
    assert message in problem["detail"]
    assert tenant.api.get(f"/api/v1/runs/{run_id}/results").json()["data"] == []
    assert len(tenant.api.get("/api/v1/runs", params={"project_id": project_id}).json()["data"]) == 1


@pytest.mark.parametrize("path", ["/api/v1/runs", "/api/v1/cases"])
def test_an_offset_beyond_64_bits_is_400_naming_offset(tenant: Tenant, path: str) -> None:
    problem = assert_problem(tenant.api.get(path, params={"offset": "99999999999999999999"}), 400)
    assert problem["errors"][0]["field"] == "offset"
    assert tenant.api.get(path, params={"offset": str(2**63 - 1)}).json()["data"] == []


@pytest.mark.parametrize("path", ["/cases", "/runs"])
def test_web_lists_take_any_offset(tenant: Tenant, path: str) -> None:
    web = tenant.web()
    assert web.get(path, params={"offset": "99999999999999999999"}).status_code == 200


# --- one CSRF mechanism for forms and the session JSON API ---------------------------------------


def test_webhooks_api_refuses_a_made_up_csrf_pair_like_the_forms_do(tenant: Tenant) -> None:
    """/api/webhooks took any equal csrftoken cookie/header pair (unsigned double submit)."""
    web = tenant.web()
    body = {"url": "https://example.com/hook", "events": ["test_run.completed"]}
    made_up = "x" * 128
    forged = tenant.server.http_client(headers={"x-csrftoken": made_up})
    forged.cookies.set("tms_session", web.cookies["tms_session"], domain="127.0.0.1")
    forged.cookies.set("csrftoken", made_up, domain="127.0.0.1")
    assert_problem(forged.post("/api/webhooks", json=body), 403)
    # the same made-up pair on a form is refused too (the middleware's check)
    assert forged.post("/projects", data={"name": "x", "_csrf_token": made_up}).status_code == 403
    # a token the server signed passes both
    assert web.post("/api/webhooks", json=body).status_code == 201
    # ... and no session is still a 401 first, CSRF or not
    anonymous = tenant.server.http_client(headers={"x-csrftoken": made_up})
    assert_problem(anonymous.post("/api/webhooks", json=body), 401)


# --- security headers on every response ----------------------------------------------------------


@pytest.mark.parametrize("path", ["/login", "/api/v1/me", "/no-such-page", "/schema", "/static/app.css"])
def test_every_response_carries_the_security_headers(server: ServerProcess, path: str) -> None:
    response = server.http_client().get(path, headers={"Accept": "text/html"})
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]
    assert "frame-ancestors 'none'" in csp and "object-src 'none'" in csp
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["referrer-policy"] in ("same-origin", "strict-origin-when-cross-origin")
    assert response.headers["x-content-type-options"] == "nosniff"


def test_no_template_carries_inline_script() -> None:
    from pathlib import Path

    import tms

    templates = Path(tms.__file__).parent / "templates"
    for template in templates.rglob("*.html"):
        text = template.read_text()
        for tag in re.findall(r"<script\b[^>]*>", text):
            assert "src=" in tag, f"{template}: inline script {tag}"
        assert not re.search(r"\son[a-z]+\s*=", text), f"{template}: inline event handler"


def test_the_favicon_is_served_and_linked(tenant: Tenant) -> None:
    icon = tenant.server.http_client().get("/static/favicon.svg")
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    assert '<link rel="icon" href="/static/favicon.svg"' in tenant.server.http_client().get("/login").text


# --- disk full: 507 with a clear problem, reads keep working, and it recovers by itself ----------
#
# Filling the real disk is not an option on a shared machine, and a product hook that fakes the
# error would test the hook. So the failure is produced at the true edge, in-process:
# - SQLite: ``PRAGMA max_page_count`` on the server's own writer connection caps the database at
#   its current size, and SQLite then fails the write exactly as on a full disk (SQLITE_FULL,
#   "database or disk is full"). The pragma lives only on that connection; lifting it is the
#   "space came back" moment.
# - Attachments: the upload's file is opened on /dev/full, where the kernel answers every write
#   with ENOSPC, as a full file system does.


def _in_process(tmp_path: Path, database_url: str = "") -> tuple[TestClient, dict[str, str]]:
    import warnings

    from litestar.exceptions import LitestarDeprecationWarning

    from tms.app import create_app
    from tms.config import load_config

    if not database_url:
        ServerProcess(tmp_path, {}).seed_migrated()  # the migrated start every test server gets (conftest)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LitestarDeprecationWarning)
        app = create_app(load_config(None, {"TMS_STORAGE_DATA_DIR": str(tmp_path),
                                            "TMS_STORAGE_DATABASE_URL": database_url}))
    return TestClient(app), {}


def _token(client: TestClient) -> str:
    from tms.team import accounts
    from tms.team.tokens import service as tokens

    async def make() -> str:
        db = client.app.state.db
        tenant_id = await accounts.create_tenant(db, "Full disk")
        return (await tokens.create_token(db, tenant_id, "ci", "read,write")).token

    return client.blocking_portal.call(make)  # type: ignore[no-any-return]


def _cap_database(client: TestClient, pages: int | None) -> None:
    async def cap() -> None:
        writer = client.app.state.db._writer
        if pages is None:
            await writer.execute("PRAGMA max_page_count = 1073741823")
        else:
            cursor = await writer.execute("PRAGMA page_count")
            count = int((await cursor.fetchone())["page_count"])
            await writer.execute(f"PRAGMA max_page_count = {count}")

    client.blocking_portal.call(cap)


def test_a_full_database_answers_507_and_keeps_serving_reads(tmp_path: Path) -> None:
    client, _ = _in_process(tmp_path)
    with client:
        client.headers["Authorization"] = f"Bearer {_token(client)}"
        assert client.post("/api/v1/projects", json={"name": "Before"}).status_code == 201
        _cap_database(client, 0)
        statuses = []
        for number in range(200):  # until the free space inside the last pages is used up
            response = client.post("/api/v1/projects", json={"name": f"P{number}", "description": "x" * 5000})
            statuses.append(response.status_code)
            if response.status_code != 201:
                break
        assert statuses[-1] == 507, statuses
        problem = response.json()
        assert response.headers["content-type"].startswith("application/problem+json")
        assert problem["status"] == 507 and "disk is full" in problem["detail"]
        names = [p["name"] for p in client.get("/api/v1/projects").json()["data"]]
        assert "Before" in names and f"P{len(statuses) - 1}" not in names  # read works, nothing half-written
        _cap_database(client, None)  # space is back: writes work again, no restart
        assert client.post("/api/v1/projects", json={"name": "After"}).status_code == 201


def test_a_full_disk_on_an_attachment_write_answers_507_and_keeps_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tms.attachments import upload as attachments

    client, _ = _in_process(tmp_path)
    with client:
        client.headers["Authorization"] = f"Bearer {_token(client)}"
        project = client.post("/api/v1/projects", json={"name": "P"}).json()["data"]
        answer = client.post("/api/v1/ingest", json={"project_id": project["id"],
                                                     "results": [{"title": "t", "status": "FAILED"}]})
        run_id = answer.json()["run_id"]
        [result] = client.get(f"/api/v1/runs/{run_id}/results").json()["data"]

        real_fdopen = os.fdopen

        def on_full_disk(fd: int, mode: str = "r", *args: object, **kwargs: object) -> object:
            os.close(fd)
            return real_fdopen(os.open("/dev/full", os.O_WRONLY), "wb", buffering=0)

        monkeypatch.setattr(attachments.os, "fdopen", on_full_disk)
        response = client.post(f"/api/v1/results/{result['id']}/attachments",
                               files={"file": ("log.txt", b"a log line\n" * 100, "text/plain")})
        problem = assert_problem(response, 507)  # type: ignore[arg-type]
        assert "disk is full" in problem["detail"]
        monkeypatch.undo()
        # nothing stored: no object, and nothing left in the folder uploads are written to first
        assert [p for p in (tmp_path / "attachments").rglob("*") if p.is_file()] == []
        assert client.get(f"/api/v1/runs/{run_id}/results").json()["data"][0]["attachments"] == []
        again = client.post(f"/api/v1/results/{result['id']}/attachments",
                            files={"file": ("log.txt", b"a log line\n", "text/plain")})
        assert again.status_code == 201


# PostgreSQL: no file system of its own to fill without root (a tablespace on a tiny tmpfs or loop
# device needs a mount), so the failure is PostgreSQL's own error from the real driver: a trigger on
# `projects` raises SQLSTATE 53100 (disk_full) with the words PostgreSQL uses when it cannot extend a
# file, asyncpg turns it into asyncpg.exceptions.DiskFullError, and the request fails as it would.
_POSTGRES_DISK_FULL = """
CREATE FUNCTION tms_test_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = '53100', MESSAGE = 'could not extend file "base/16384/16385": '
        'No space left on device', HINT = 'Check free disk space.';
END $$;
CREATE TRIGGER tms_test_disk_full BEFORE INSERT ON projects FOR EACH ROW EXECUTE FUNCTION tms_test_disk_full();
"""


def _postgres_url(data_dir: Path) -> str:
    from tests import postgres_cluster

    try:
        postgres_cluster.binary("initdb")
    except RuntimeError as exc:
        pytest.skip(f"PostgreSQL binaries are missing ({exc}); `make test` installs them")
    return postgres_cluster.database_url_for(data_dir)


def _run_on(url: str, sql: str) -> None:
    import asyncpg

    from tests import postgres_cluster

    async def run() -> None:
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    postgres_cluster.run_sync(run)


def _full_disk_problem(client: TestClient, fill: Callable[[], None], free: Callable[[], None]) -> dict[str, Any]:
    """The problem a write answers once ``fill`` has filled the disk; reads keep working meanwhile,
    and writes work again once ``free`` has made room."""
    client.headers["Authorization"] = f"Bearer {_token(client)}"
    assert client.post("/api/v1/projects", json={"name": "Before"}).status_code == 201
    fill()
    for number in range(200):  # SQLite: until the free space inside its last pages is used up
        response = client.post("/api/v1/projects", json={"name": f"P{number}", "description": "x" * 5000})
        if response.status_code != 201:
            break
    problem = assert_problem(response, 507)  # type: ignore[arg-type]
    names = [p["name"] for p in client.get("/api/v1/projects").json()["data"]]
    assert "Before" in names and f"P{number}" not in names
    free()
    assert client.post("/api/v1/projects", json={"name": "After"}).status_code == 201
    return problem


def test_a_full_disk_answers_the_same_507_on_postgresql_as_on_sqlite(tmp_path: Path) -> None:
    import asyncpg

    from tms.errors import DISK_FULL_DETAIL

    url = _postgres_url(tmp_path / "pg")

    def fill_postgres() -> None:
        _run_on(url, _POSTGRES_DISK_FULL)
        # what the request meets: asyncpg's own class for 53100, raised by a real failing statement
        with pytest.raises(asyncpg.exceptions.DiskFullError):
            _run_on(url, "INSERT INTO projects (id, tenant_id, name, created_at, updated_at) "
                         "VALUES ('p', 't', 'n', 'now', 'now')")

    sqlite_client, _ = _in_process(tmp_path / "sqlite")
    with sqlite_client:
        on_sqlite = _full_disk_problem(sqlite_client, lambda: _cap_database(sqlite_client, 0),
                                       lambda: _cap_database(sqlite_client, None))
    postgres_client, _ = _in_process(tmp_path / "pg", database_url=url)
    with postgres_client:
        on_postgres = _full_disk_problem(
            postgres_client, fill_postgres,
            lambda: _run_on(url, "DROP TRIGGER tms_test_disk_full ON projects; DROP FUNCTION tms_test_disk_full();"))
    assert on_postgres == on_sqlite == {
        "type": "about:blank", "title": "Insufficient Storage", "status": 507, "detail": DISK_FULL_DETAIL}


def test_a_whole_number_float_is_an_integer_as_the_openapi_document_allows(tenant: Tenant) -> None:
    """JSON Schema's ``integer`` admits 2.0; a fractional position stays a 400 naming the field."""
    project = tenant.create_project()
    section = tenant.api.post("/api/v1/sections", json={"project_id": project["id"], "name": "A"})
    assert section.status_code == 201, section.text
    moved = tenant.api.patch(f"/api/v1/sections/{section.json()['data']['id']}", json={"position": 2.0})
    assert moved.status_code == 200, moved.text
    assert moved.json()["data"]["position"] == 2
    problem = assert_problem(tenant.api.patch(f"/api/v1/sections/{section.json()['data']['id']}",
                                              json={"position": 2.5}), 400)
    assert "position" in str(problem)
