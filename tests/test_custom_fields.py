"""Custom fields (issue 26): definitions per project, their values on cases, filters, versions, CSV and
TestRail import. Both databases."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Tenant, assert_problem
from tests.team_helpers import add_member, web_as
from tests.web_helpers import HTML, every_post_form_has_csrf, field_error, flashes, follow

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)

TESTRAIL = Path(__file__).parent / "fixtures" / "testrail" / "shop_suite.xml"
GHERKIN = "Feature: F\n  Scenario: S\n    Given a step\n"


def define(api: httpx.Client, project: str, key: str, type_: str, **more: Any) -> dict[str, Any]:
    response = api.post("/api/v1/custom-fields", json={"project_id": project, "key": key, "name": key.title(),
                                                       "type": type_, **more})
    assert response.status_code == 201, response.text
    return response.json()["data"]


def create_case(api: httpx.Client, project: str, **more: Any) -> httpx.Response:
    return api.post("/api/v1/cases", json={"project_id": project, "title": "A case", "bdd_content": GHERKIN, **more})


def problem_field(response: httpx.Response, status: int = 400) -> str:
    body = assert_problem(response, status)
    fields = [error["field"] for error in body.get("errors", [])]
    return fields[0] if fields else ""


# ------------------------------------------------------------------------------------------- definitions


def test_define_list_get_update_and_order(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    browser = define(tenant.api, project, "browser", "select", options=["Chrome", "Firefox"], required=True,
                     default="Chrome")
    assert browser["options"] == ["Chrome", "Firefox"] and browser["required"] is True
    assert browser["default"] == "Chrome" and browser["entity"] == "case" and browser["retired"] is False
    notes = define(tenant.api, project, "notes", "textarea")
    assert notes["position"] > browser["position"]
    build = define(tenant.api, project, "build", "number", entity="result", position=0)
    listed = tenant.api.get("/api/v1/custom-fields", params={"project_id": project}).json()["data"]
    assert [f["key"] for f in listed] == ["browser", "build", "notes"]  # position 0 twice: then by name
    only_cases = tenant.api.get("/api/v1/custom-fields", params={"project_id": project, "entity": "case"})
    assert [f["key"] for f in only_cases.json()["data"]] == ["browser", "notes"]
    got = tenant.api.get(f"/api/v1/custom-fields/{build['id']}")
    assert got.status_code == 200 and got.json()["data"]["entity"] == "result"

    renamed = tenant.api.patch(f"/api/v1/custom-fields/{browser['id']}",
                               json={"name": "Browser used", "position": 9, "options": ["Chrome", "Firefox", "Safari"]})
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["data"]["name"] == "Browser used"
    assert renamed.json()["data"]["options"] == ["Chrome", "Firefox", "Safari"]
    listed = tenant.api.get("/api/v1/custom-fields", params={"project_id": project}).json()["data"]
    assert [f["key"] for f in listed] == ["build", "notes", "browser"]
    # the key, type and entity never change
    changed_key = tenant.api.patch(f"/api/v1/custom-fields/{browser['id']}", json={"key": "b"})
    assert "key" in assert_problem(changed_key, 400)["detail"]


@pytest.mark.parametrize(("body", "field"), [
    ({"key": "Bad Key", "type": "text"}, "key"),
    ({"key": "k", "type": "colour"}, "type"),
    ({"key": "k", "type": "text", "entity": "run"}, "entity"),
    ({"key": "k", "type": "select"}, "options"),
    ({"key": "k", "type": "select", "options": ["a", "a"]}, "options"),
    ({"key": "k", "type": "text", "options": ["a"]}, "options"),
    ({"key": "k", "type": "multiselect", "options": ["a;b"]}, "options"),
    ({"key": "k", "type": "number", "default": "seven"}, "default"),
    ({"key": "k", "type": "select", "options": ["a"], "default": "b"}, "default"),
    ({"key": "k", "type": "date", "default": "2024-13-01"}, "default"),
    ({"key": "k", "type": "user", "default": "nobody@example.com"}, "default"),
])
def test_bad_definitions_name_the_field(tenant: Tenant, body: dict[str, Any], field: str) -> None:
    project = tenant.create_project()["id"]
    response = tenant.api.post("/api/v1/custom-fields", json={"project_id": project, "name": "N", **body})
    assert problem_field(response) == field


def test_key_is_unique_per_project_and_project_is_needed(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    define(tenant.api, project, "browser", "text")
    again = tenant.api.post("/api/v1/custom-fields",
                            json={"project_id": project, "key": "browser", "name": "B", "type": "text"})
    assert problem_field(again, 409) == "key"
    other = tenant.create_project("Other")["id"]
    define(tenant.api, other, "browser", "text")  # another project may use the same key
    assert problem_field(tenant.api.get("/api/v1/custom-fields")) == "project_id"
    missing = tenant.api.post("/api/v1/custom-fields",
                              json={"project_id": "cnope", "key": "k", "name": "K", "type": "text"})
    assert_problem(missing, 404)


def test_other_tenants_fields_are_404_and_read_tokens_cannot_write(tenant: Tenant, other_tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    field = define(tenant.api, project, "browser", "text")
    for method, body in (("GET", None), ("PATCH", {"name": "x"}), ("DELETE", None)):
        response = other_tenant.api.request(method, f"/api/v1/custom-fields/{field['id']}", json=body)
        assert_problem(response, 404)
    assert_problem(other_tenant.api.get("/api/v1/custom-fields", params={"project_id": project}), 404)
    read = tenant.client("read")
    assert read.get(f"/api/v1/custom-fields/{field['id']}").status_code == 200
    assert_problem(read.post("/api/v1/custom-fields",
                             json={"project_id": project, "key": "k", "name": "K", "type": "text"}), 403)
    assert_problem(read.patch(f"/api/v1/custom-fields/{field['id']}", json={"name": "x"}), 403)
    assert_problem(read.delete(f"/api/v1/custom-fields/{field['id']}"), 403)


def test_retire_keeps_values_and_hides_nothing_stored(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    field = define(tenant.api, project, "browser", "text")
    case = create_case(tenant.api, project, custom_fields={"browser": "Chrome"}).json()["data"]
    assert tenant.api.delete(f"/api/v1/custom-fields/{field['id']}").status_code == 204
    retired = tenant.api.get(f"/api/v1/custom-fields/{field['id']}").json()["data"]
    assert retired["retired"] is True
    got = tenant.api.get(f"/api/v1/cases/{case['id']}").json()["data"]
    assert got["custom_fields"] == {"browser": "Chrome"}
    # the value stays, a new one is refused, the same one is fine (a GET sent back as a PATCH)
    refused = tenant.api.patch(f"/api/v1/cases/{case['id']}", json={"custom_fields": {"browser": "Firefox"}})
    assert problem_field(refused) == "custom_fields.browser"
    same = tenant.api.patch(f"/api/v1/cases/{case['id']}", json={"custom_fields": {"browser": "Chrome"}})
    assert same.status_code == 200 and same.json()["data"]["version"] == 1
    assert_problem(create_case(tenant.api, project, custom_fields={"browser": "Safari"}), 400)
    restored = tenant.api.patch(f"/api/v1/custom-fields/{field['id']}", json={"retired": False})
    assert restored.json()["data"]["retired"] is False
    changed = tenant.api.patch(f"/api/v1/cases/{case['id']}", json={"custom_fields": {"browser": "Firefox"}})
    assert changed.json()["data"]["custom_fields"] == {"browser": "Firefox"}


# ------------------------------------------------------------------------------------------- cases


@pytest.fixture
def typed(tenant: Tenant) -> dict[str, Any]:
    """A project with one field of every type."""
    project = tenant.create_project()["id"]
    for key, kind, more in (
        ("summary", "text", {}), ("notes", "textarea", {}), ("effort", "number", {}), ("smoke", "checkbox", {}),
        ("due", "date", {}), ("spec", "url", {}), ("browser", "select", {"options": ["Chrome", "Firefox"]}),
        ("platforms", "multiselect", {"options": ["Linux", "macOS", "Windows"]}), ("owner", "user", {}),
    ):
        define(tenant.api, project, key, kind, **more)
    return {"project": project}


@pytest.mark.parametrize(("key", "value"), [
    ("summary", 5), ("summary", ["x"]), ("notes", True), ("effort", "3"), ("effort", True), ("smoke", "yes"),
    ("smoke", 1), ("due", "2024-02-30"), ("due", "tomorrow"), ("spec", "javascript:alert(1)"), ("spec", "ftp://x"),
    ("browser", "Opera"), ("browser", ["Chrome"]), ("platforms", "Linux"), ("platforms", ["Linux", "BeOS"]),
    ("owner", "nobody@example.com"), ("summary", {"nested": 1}), ("nope", "x"),
])
def test_a_wrong_value_is_a_400_naming_the_field(tenant: Tenant, typed: dict[str, Any], key: str, value: Any) -> None:
    response = create_case(tenant.api, typed["project"], custom_fields={key: value})
    assert problem_field(response) == f"custom_fields.{key}"
    case = create_case(tenant.api, typed["project"]).json()["data"]
    patched = tenant.api.patch(f"/api/v1/cases/{case['id']}", json={"custom_fields": {key: value}})
    assert problem_field(patched) == f"custom_fields.{key}"


def test_values_of_every_type_round_trip(tenant: Tenant, typed: dict[str, Any]) -> None:
    values = {"summary": "  Pay by card ", "notes": "line one\nline two", "effort": 2.0, "smoke": True,
              "due": "2024-02-29", "spec": "https://example.com/spec", "browser": "Firefox",
              "platforms": ["macOS", "Linux", "macOS"], "owner": tenant.email.upper()}
    response = create_case(tenant.api, typed["project"], custom_fields=values)
    assert response.status_code == 201, response.text
    stored = response.json()["data"]["custom_fields"]
    me = tenant.api.get("/api/v1/users").json()["data"]
    owner = next(user["id"] for user in me if user["email"] == tenant.email)
    assert stored == {"summary": "Pay by card", "notes": "line one\nline two", "effort": 2, "smoke": True,
                      "due": "2024-02-29", "spec": "https://example.com/spec", "browser": "Firefox",
                      "platforms": ["macOS", "Linux"], "owner": owner}
    got = tenant.api.get(f"/api/v1/cases/{response.json()['data']['code']}").json()["data"]
    assert got["custom_fields"] == stored
    # a PATCH changes the keys it names; null removes a value
    patched = tenant.api.patch(f"/api/v1/cases/{got['id']}", json={"custom_fields": {"effort": 3.5, "notes": None}})
    assert patched.status_code == 200, patched.text
    after = patched.json()["data"]
    assert after["custom_fields"]["effort"] == 3.5 and "notes" not in after["custom_fields"]
    assert after["custom_fields"]["browser"] == "Firefox" and after["version"] == 2
    listed = tenant.api.get("/api/v1/cases", params={"project_id": typed["project"]}).json()["data"]
    assert listed[0]["custom_fields"] == after["custom_fields"]


def test_defaults_apply_on_create_and_required_is_enforced(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    define(tenant.api, project, "browser", "select", options=["Chrome", "Firefox"], default="Chrome")
    define(tenant.api, project, "ticket", "text", required=True)
    missing = create_case(tenant.api, project)
    assert problem_field(missing) == "custom_fields.ticket"
    created = create_case(tenant.api, project, custom_fields={"ticket": "T-1"})
    assert created.json()["data"]["custom_fields"] == {"browser": "Chrome", "ticket": "T-1"}
    case_id = created.json()["data"]["id"]
    emptied = tenant.api.patch(f"/api/v1/cases/{case_id}", json={"custom_fields": {"ticket": ""}})
    assert problem_field(emptied) == "custom_fields.ticket"
    # a change that leaves custom_fields alone does not ask for them
    assert tenant.api.patch(f"/api/v1/cases/{case_id}", json={"title": "Renamed"}).status_code == 200
    # a case without a project has no fields
    loose = tenant.api.post("/api/v1/cases", json={"title": "t", "bdd_content": GHERKIN,
                                                   "custom_fields": {"browser": "Chrome"}})
    assert problem_field(loose) == "custom_fields.browser"


def test_versions_carry_the_values(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    define(tenant.api, project, "browser", "select", options=["Chrome", "Firefox"])
    case = create_case(tenant.api, project, custom_fields={"browser": "Chrome"}).json()["data"]
    tenant.api.patch(f"/api/v1/cases/{case['id']}", json={"custom_fields": {"browser": "Firefox"}})
    versions = tenant.api.get(f"/api/v1/cases/{case['id']}/versions").json()["data"]
    assert [(v["version"], v["custom_fields"]) for v in versions] == [
        (2, {"browser": "Firefox"}), (1, {"browser": "Chrome"})]
    history = tenant.web().get(f"/cases/{case['id']}/history", params={"a": 1, "b": 2})
    if history.status_code == 200:
        assert "Firefox" in history.text


def test_filter_by_field_value(tenant: Tenant, other_tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    define(tenant.api, project, "browser", "select", options=["Chrome", "Firefox", "Safari"])
    define(tenant.api, project, "platforms", "multiselect", options=["Linux", "macOS"])
    define(tenant.api, project, "effort", "number")
    define(tenant.api, project, "smoke", "checkbox")
    define(tenant.api, project, "summary", "text")
    codes = {}
    for name, fields in (
        ("chrome", {"browser": "Chrome", "platforms": ["Linux"], "effort": 1, "smoke": True}),
        ("firefox", {"browser": "Firefox", "platforms": ["Linux", "macOS"], "effort": 2.5, "smoke": False,
                     "summary": "voucher redemption"}),
        ("safari", {"browser": "Safari", "platforms": ["macOS"], "effort": 1.0}),
    ):
        codes[name] = create_case(tenant.api, project, title=name, custom_fields=fields).json()["data"]["code"]

    def found(**params: Any) -> list[str]:
        response = tenant.api.get("/api/v1/cases", params={"project_id": project, **params})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["pagination"]["total"] == len(body["data"])
        return sorted(case["title"] for case in body["data"])

    assert found(**{"cf.browser": "Chrome"}) == ["chrome"]
    assert found(**{"cf.browser": ["Chrome", "Safari"]}) == ["chrome", "safari"]
    assert found(**{"cf.platforms": "macOS"}) == ["firefox", "safari"]
    assert found(**{"cf.effort": "1"}) == ["chrome", "safari"]
    assert found(**{"cf.effort": "2.5"}) == ["firefox"]
    assert found(**{"cf.smoke": "true"}) == ["chrome"]
    assert found(**{"cf.smoke": "false"}) == ["firefox"]
    assert found(**{"cf.platforms": "Linux", "cf.browser": "Firefox"}) == ["firefox"]
    assert found(**{"cf.platforms": "Linux", "q": "firefox"}) == ["firefox"]
    assert found(**{"cf.platforms": "macOS", "priority": "MEDIUM", "status": "DRAFT"}) == ["firefox", "safari"]
    # full-text search reads the text of field values
    assert found(q="voucher") == ["firefox"]
    # without a project: the tenant's fields with that key
    anywhere = tenant.api.get("/api/v1/cases", params={"cf.browser": "Safari"}).json()["data"]
    assert [case["code"] for case in anywhere] == [codes["safari"]]
    assert problem_field(tenant.api.get("/api/v1/cases", params={"project_id": project, "cf.nope": "x"})) == "cf.nope"
    assert problem_field(tenant.api.get("/api/v1/cases", params={"project_id": project, "cf.effort": "lots"})) \
        == "cf.effort"
    # another tenant's values never match
    assert other_tenant.api.get("/api/v1/cases", params={"cf.browser": "Safari"}).status_code == 400


def test_filter_pages_and_follows_a_moved_case(tenant: Tenant) -> None:
    """A filter in a project reads its page and total off the values' index (migration 0043): pages in
    both orders, totals past the page, and a case moved to another project is found there, not here."""
    here, there = tenant.create_project()["id"], tenant.create_project()["id"]
    for project in (here, there):
        define(tenant.api, project, "browser", "select", options=["Chrome", "Firefox"])
        define(tenant.api, project, "platforms", "multiselect", options=["Linux", "macOS"])
    ids = [create_case(tenant.api, here, title=f"case {n}", custom_fields={
        "browser": "Chrome" if n % 2 else "Firefox", "platforms": ["Linux", "macOS"] if n % 3 else ["Linux"]},
    ).json()["data"]["id"] for n in range(7)]

    def page(project: str, **params: Any) -> tuple[list[str], int]:
        response = tenant.api.get("/api/v1/cases", params={"project_id": project, "limit": 2, **params})
        assert response.status_code == 200, response.text
        return [case["id"] for case in response.json()["data"]], response.json()["pagination"]["total"]

    chrome = [ids[n] for n in (1, 3, 5)]
    assert page(here, **{"cf.browser": "Chrome"}) == (chrome[:2], 3)
    assert page(here, **{"cf.browser": "Chrome", "offset": 2}) == (chrome[2:], 3)
    assert page(here, **{"cf.browser": "Chrome", "order": "desc"}) == (chrome[::-1][:2], 3)
    assert page(here, **{"cf.browser": "Chrome", "order": "desc", "offset": 2}) == (chrome[:1], 3)
    # a multiselect named twice counts each case once; two filters intersect
    assert page(here, **{"cf.platforms": ["Linux", "macOS"], "limit": 50}) == (ids, 7)
    assert page(here, **{"cf.platforms": "macOS", "cf.browser": "Chrome", "limit": 50}) == ([ids[1], ids[5]], 2)
    moved = tenant.api.patch(f"/api/v1/cases/{ids[1]}", json={"project_id": there})
    assert moved.status_code == 200, moved.text
    assert page(here, **{"cf.browser": "Chrome"}) == ([ids[3], ids[5]], 2)
    assert page(there, **{"cf.browser": "Chrome"}) == ([ids[1]], 1)
    # without a project: every project defining the key
    anywhere = tenant.api.get("/api/v1/cases", params={"cf.browser": "Chrome", "limit": 50}).json()
    assert sorted(case["id"] for case in anywhere["data"]) == sorted(chrome) and anywhere["pagination"]["total"] == 3


# ------------------------------------------------------------------------------------------- import, export


def upload(tenant: Tenant, project: str, data: bytes | str, fmt: str = "csv") -> httpx.Response:
    content = data.encode() if isinstance(data, str) else data
    return tenant.api.post("/api/v1/cases/import", params={"project_id": project, "format": fmt},
                           files={"file": ("cases." + ("csv" if fmt == "csv" else "xml"), content, "text/plain")})


def export(tenant: Tenant, project: str) -> list[dict[str, str]]:
    response = tenant.api.get("/api/v1/cases/export", params={"project_id": project, "format": "csv"})
    assert response.status_code == 200, response.text
    return list(csv.DictReader(io.StringIO(response.text)))


def test_csv_round_trip_with_field_columns(tenant: Tenant, typed: dict[str, Any]) -> None:
    project = typed["project"]
    values = {"summary": "=SUM(A1)", "notes": "two\nlines", "effort": 2.5, "smoke": True, "due": "2024-02-29",
              "spec": "https://example.com/x", "browser": "Chrome", "platforms": ["Linux", "Windows"],
              "owner": tenant.email}
    first = create_case(tenant.api, project, custom_fields=values).json()["data"]
    second = create_case(tenant.api, project, title="bare").json()["data"]
    rows = export(tenant, project)
    header = list(rows[0])
    assert header[11:] == ["cf:summary", "cf:notes", "cf:effort", "cf:smoke", "cf:due", "cf:spec", "cf:browser",
                           "cf:platforms", "cf:owner"]
    one = next(row for row in rows if row["code"] == first["code"])
    assert (one["cf:summary"], one["cf:effort"], one["cf:smoke"], one["cf:platforms"], one["cf:owner"]) == (
        "'=SUM(A1)", "2.5", "true", "Linux;Windows", tenant.email)
    text = tenant.api.get("/api/v1/cases/export", params={"project_id": project}).text
    again = upload(tenant, project, text)
    assert again.status_code == 201, again.text
    assert (again.json()["unchanged"], again.json()["updated"], again.json()["created"]) == (2, 0, 0)

    # a changed cell updates that case (a new version); a bad one rejects its row, naming the column
    edited = [dict(row) for row in rows]
    for row in edited:
        if row["code"] == second["code"]:
            row["cf:browser"], row["cf:effort"] = "Firefox", "7"
        else:
            row["cf:smoke"] = "maybe"
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=header, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(edited)
    result = upload(tenant, project, buffer.getvalue())
    assert result.status_code == 207, result.text
    assert result.json()["updated"] == 1 and result.json()["errors"][0]["error"].startswith("cf:smoke:")
    got = tenant.api.get(f"/api/v1/cases/{second['id']}").json()["data"]
    assert got["custom_fields"] == {"browser": "Firefox", "effort": 7} and got["version"] == 2

    # a column naming no field of the project is a file error; a new row gets the defaults
    unknown = upload(tenant, project, "title,bdd_content,cf:nope\r\nT," + GHERKIN.replace("\n", " ") + ",x\r\n")
    assert problem_field(unknown) == "file"
    bad_option = upload(tenant, project, f'title,bdd_content,cf:browser\r\nT,"{GHERKIN}",Opera\r\n')
    assert bad_option.status_code == 207 and bad_option.json()["errors"][0]["error"].startswith("cf:browser:")


def test_a_bulk_import_leaves_the_planner_knowing_the_new_size(tenant: Tenant) -> None:
    """1,000 cases at once: on PostgreSQL the library's tables are analyzed after the commit (with the
    statistics of an empty project, a list filtered by a field and a priority took 8 s at 20,000 cases)."""
    project = tenant.create_project("Bulk")["id"]
    define(tenant.api, project, "browser", "select", options=["Chrome", "Firefox"])
    lines = ["title,bdd_content,priority,cf:browser"]
    lines += [f'Case {i},"{GHERKIN}",{("LOW", "HIGH")[i % 2]},{("Chrome", "Firefox")[i % 2]}' for i in range(1000)]
    response = upload(tenant, project, "\r\n".join(lines) + "\r\n")
    assert response.status_code == 201 and response.json()["created"] == 1000, response.text

    async def planner_rows(db: Any) -> list[tuple[float, int]]:
        if db.dialect != "postgres":
            return []
        return [(float(await db.fetch_value("SELECT reltuples FROM pg_class WHERE relname = ?", (table,))),
                 int(await db.fetch_value(f"SELECT COUNT(*) FROM {table}")))
                for table in ("test_cases", "case_field_values")]

    for estimated, counted in tenant.server.run_admin(planner_rows):  # tables this small are read whole
        assert estimated == counted
    listed = tenant.api.get("/api/v1/cases", params={"project_id": project, "cf.browser": "Chrome",
                                                     "priority": "LOW", "limit": 5}).json()
    assert listed["pagination"]["total"] == 500 and len(listed["data"]) == 5


def test_a_project_holds_a_bounded_number_of_fields(tenant: Tenant) -> None:
    from tms.library.fields.service import MAX_FIELDS_PER_PROJECT

    project = tenant.create_project()["id"]
    ids = [define(tenant.api, project, f"f{n}", "text")["id"] for n in range(MAX_FIELDS_PER_PROJECT)]
    # a retired field keeps its values, so it keeps its place too
    assert tenant.api.patch(f"/api/v1/custom-fields/{ids[0]}", json={"retired": True}).status_code == 200
    one_more = tenant.api.post("/api/v1/custom-fields",
                               json={"project_id": project, "key": "extra", "name": "Extra", "type": "text"})
    assert problem_field(one_more, 409) == "project_id"
    assert str(MAX_FIELDS_PER_PROJECT) in one_more.json()["detail"]
    listed = tenant.api.get("/api/v1/custom-fields", params={"project_id": project}).json()["data"]
    assert len(listed) == MAX_FIELDS_PER_PROJECT  # nothing half-written
    # the TestRail import creates fields too: a file that needs more than the room left is refused whole
    imported = upload(tenant, project, TESTRAIL.read_text(), "testrail-xml")
    assert problem_field(imported, 409) == "project_id", imported.text
    assert tenant.api.get("/api/v1/cases", params={"project_id": project}).json()["data"] == []
    other = tenant.create_project("Other")["id"]
    define(tenant.api, other, "extra", "text")  # the bound is per project


def test_testrail_custom_fields_become_fields(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    define(tenant.api, project, "browser", "select", options=["Chrome"])
    xml = TESTRAIL.read_text().replace(
        "<mission>", "<custom_platforms><value>Linux</value><value>macOS</value></custom_platforms><mission>", 1)
    response = upload(tenant, project, xml, "testrail-xml")
    assert response.status_code == 201, response.text
    fields = {f["key"]: f for f in tenant.api.get("/api/v1/custom-fields", params={"project_id": project})
              .json()["data"]}
    assert fields["browser"]["type"] == "select" and fields["browser"]["options"] == ["Chrome", "Firefox"]
    assert fields["mission"]["type"] == "text" and fields["mission"]["name"] == "Mission"
    cases = {c["code"]: c for c in tenant.api.get("/api/v1/cases", params={"project_id": project}).json()["data"]}
    assert cases["C-101"]["custom_fields"] == {"browser": "Firefox"}
    assert fields["platforms"]["type"] == "multiselect" and fields["platforms"]["options"] == ["Linux", "macOS"]
    assert cases["C-103"]["custom_fields"] == {"mission": "Make sure refunds never double-pay",
                                               "platforms": ["Linux", "macOS"]}
    assert "Firefox" not in cases["C-101"]["bdd_content"]
    filtered = tenant.api.get("/api/v1/cases", params={"project_id": project, "cf.browser": "Firefox"})
    assert [c["code"] for c in filtered.json()["data"]] == ["C-101"]
    # the same export again changes nothing
    again = upload(tenant, project, xml, "testrail-xml")
    assert again.json()["unchanged"] == 4, again.text


# ------------------------------------------------------------------------------------------- web UI


def test_settings_page_manages_fields(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    web = tenant.web()
    token = web.cookies.get("csrftoken", "")
    added = web.post("/custom-fields", data={
        "_csrf_token": token, "project_id": project, "field_name": "Browser", "field_key": "browser",
        "field_type": "select", "field_options": "Chrome, Firefox", "field_default": "Chrome", "field_entity": "case"})
    page = follow(web, added)
    assert "Custom field “Browser” added." in flashes(page.text) and every_post_form_has_csrf(page.text)
    define(tenant.api, project, "notes", "textarea")
    bad = web.post("/custom-fields", data={"_csrf_token": token, "project_id": project, "field_name": "B",
                                           "field_key": "browser", "field_type": "text"})
    assert bad.status_code == 400 and "already" in (field_error(bad.text, "field_key") or "")
    fields = tenant.api.get("/api/v1/custom-fields", params={"project_id": project}).json()["data"]
    browser, notes = fields
    assert browser["default"] == "Chrome" and browser["options"] == ["Chrome", "Firefox"]
    follow(web, web.post(f"/custom-fields/{notes['id']}/move", data={"_csrf_token": token, "direction": "up"}))
    order = tenant.api.get("/api/v1/custom-fields", params={"project_id": project}).json()["data"]
    assert [f["key"] for f in order] == ["notes", "browser"]
    follow(web, web.post(f"/custom-fields/{browser['id']}", data={
        "_csrf_token": token, "name": "Browser used", "options": "Chrome, Firefox, Safari", "default": "Chrome"}))
    follow(web, web.post(f"/custom-fields/{notes['id']}/retire", data={"_csrf_token": token}))
    after = {f["key"]: f for f in tenant.api.get("/api/v1/custom-fields", params={"project_id": project})
             .json()["data"]}
    assert after["browser"]["name"] == "Browser used" and after["browser"]["options"][-1] == "Safari"
    assert after["notes"]["retired"] is True
    # testers fill fields in; only admins manage them
    tester = add_member(tenant, "tester")
    as_tester = web_as(tenant, tester.email, tester.password)
    refused = as_tester.post(f"/custom-fields/{notes['id']}/restore",
                             data={"_csrf_token": as_tester.cookies.get("csrftoken", "")})
    assert refused.status_code == 403


def test_case_form_page_list_and_history_show_fields(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    define(tenant.api, project, "browser", "select", options=["Chrome", "Firefox"])
    define(tenant.api, project, "platforms", "multiselect", options=["Linux", "macOS"])
    define(tenant.api, project, "effort", "number", required=True)
    define(tenant.api, project, "smoke", "checkbox")
    web = tenant.web()
    token = web.cookies.get("csrftoken", "")
    form = {"_csrf_token": token, "title": "Pay", "bdd_content": GHERKIN, "project_id": project, "status": "DRAFT",
            "priority": "MEDIUM", "automation_status": "MANUAL", "cf.browser": "Firefox",
            "cf.platforms": ["Linux", "macOS"], "cf.smoke": "on", "cf.effort": "many"}
    bad = web.post("/cases/new", data=form)
    assert bad.status_code == 400 and "not a number" in (field_error(bad.text, "cf-effort") or "")
    assert 'selected>macOS' in bad.text.replace("<option selected>", "selected>")  # the ticks are kept
    form["cf.effort"] = "3"
    created = web.post("/cases/new", data=form)
    page = follow(web, created)
    code = created.headers["location"].rsplit("/", 1)[-1]
    case = tenant.api.get(f"/api/v1/cases/{code}").json()["data"]
    assert case["custom_fields"] == {"browser": "Firefox", "effort": 3, "platforms": ["Linux", "macOS"],
                                     "smoke": True}
    assert "Firefox" in page.text and "Linux, macOS" in page.text
    edit = web.get(f"/cases/{code}/edit", headers=HTML)
    assert 'name="cf.effort" value="3"' in edit.text
    form.update({"cf.browser": "Chrome", "cf.smoke": ""})
    form.pop("cf.smoke")
    follow(web, web.post(f"/cases/{code}/edit", data={**form, "code": code}))
    case = tenant.api.get(f"/api/v1/cases/{code}").json()["data"]
    assert case["custom_fields"]["browser"] == "Chrome" and case["custom_fields"]["smoke"] is False
    history = web.get(f"/cases/{code}/versions", params={"a": 1, "b": 2}, headers=HTML)
    assert history.status_code == 200 and "Firefox" in history.text and "Chrome" in history.text
    # the list: the filter and the chosen columns live in the URL
    create_case(tenant.api, project, title="Zanzibar", custom_fields={"browser": "Firefox", "effort": 1})
    listed = web.get("/cases", params={"project_id": project, "cf.browser": "Chrome", "cols": "browser,effort"},
                     headers=HTML)
    assert listed.status_code == 200
    assert f"/cases/{code}" in listed.text and "Zanzibar" not in listed.text
    assert '<th scope="col" class="cf-col">Browser</th>' in listed.text
