"""Custom fields on results (issue 26) and the source location of a test (issue 24): every entry point
of the one writer of results stores them, checks them per item (207), returns them in every result
shape, the failed webhook carries them, and the execution view shows and saves them. Both databases."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.conftest import Tenant, assert_problem, connect_db
from tests.test_cases import new_case
from tests.test_custom_fields import define
from tests.test_runs import events_of, new_run
from tests.web_helpers import field_error, input_value


def _project_with_fields(tenant: Tenant) -> dict[str, Any]:
    project = tenant.create_project()
    define(tenant.api, project["id"], "browser", "select", entity="result", options=["Chrome", "Firefox"],
           default="Chrome")
    define(tenant.api, project["id"], "build", "number", entity="result")
    define(tenant.api, project["id"], "areas", "multiselect", entity="result", options=["cart", "pay"])
    # a case field of the same project: not a result field
    define(tenant.api, project["id"], "owner_team", "text")
    return project


def _result(tenant: Tenant, result_id: str) -> dict[str, Any]:
    response = tenant.api.get(f"/api/v1/results/{result_id}")
    assert response.status_code == 200, response.text
    return response.json()["data"]  # type: ignore[no-any-return]


def _values_rows(tenant: Tenant, result_id: str) -> list[tuple[str, Any, Any]]:
    with connect_db(tenant.server.db_path) as conn:
        rows = conn.execute("SELECT field_key, value_text, value_number FROM result_field_values "
                            "WHERE result_id = ? ORDER BY field_key, value_text", (result_id,)).fetchall()
    return [(key, text, None if number is None else float(number)) for key, text, number in rows]


def test_ingest_stores_values_and_location_per_item(tenant: Tenant) -> None:
    project = _project_with_fields(tenant)
    case = new_case(tenant, title="Pay", project_id=project["id"])
    answer = tenant.api.post("/api/v1/ingest", json={"project_id": project["id"], "results": [
        {"test_case_code": case["code"], "status": "FAILED", "error_message": "boom",
         "custom_fields": {"browser": "Firefox", "build": 412, "areas": ["pay", "cart", "pay"]},
         "file": "tests/test_pay.py", "line": 42},
        {"title": "unlinked one", "status": "PASSED", "custom_fields": {"build": 7.5}, "file": "spec/a.rb"},
        {"title": "wrong type", "status": "PASSED", "custom_fields": {"build": "seven"}},
        {"title": "unknown option", "status": "PASSED", "custom_fields": {"browser": "Lynx"}},
        {"title": "a case field", "status": "PASSED", "custom_fields": {"owner_team": "x"}},
        {"title": "line zero", "status": "PASSED", "line": 0},
        {"title": "long file", "status": "PASSED", "file": "x" * 1001},
        {"title": "no values", "status": "PASSED"},
    ]})
    assert answer.status_code == 207, answer.text
    body = answer.json()
    errors = {e["index"]: e["error"] for e in body["errors"]}
    assert sorted(errors) == [2, 3, 4, 5, 6]
    assert "custom_fields.build" in errors[2] and "number" in errors[2]
    assert "custom_fields.browser" in errors[3] and "Lynx" in errors[3]
    assert "custom_fields.owner_team" in errors[4]
    assert "line" in errors[5] and "file" in errors[6]
    linked_id, unlinked_id, plain_id = body["result_ids"][0], body["result_ids"][1], body["result_ids"][7]

    linked = _result(tenant, linked_id)
    assert linked["custom_fields"] == {"areas": ["pay", "cart"], "browser": "Firefox", "build": 412}
    assert (linked["file"], linked["line"]) == ("tests/test_pay.py", 42)
    unlinked = _result(tenant, unlinked_id)
    # a field left out gets its default; required is not enforced on reported results
    assert unlinked["custom_fields"] == {"browser": "Chrome", "build": 7.5}
    assert (unlinked["file"], unlinked["line"]) == ("spec/a.rb", None)
    assert _result(tenant, plain_id)["custom_fields"] == {"browser": "Chrome"}

    # every result shape: the page, the whole list (streamed)
    for params in ({"limit": 10}, {}):
        listed = tenant.api.get(f"/api/v1/runs/{body['run_id']}/results", params=params).json()["data"]
        by_id = {r["id"]: r for r in listed}
        assert by_id[linked_id]["custom_fields"] == linked["custom_fields"]
        assert by_id[linked_id]["file"] == "tests/test_pay.py" and by_id[linked_id]["line"] == 42
        assert by_id[plain_id]["file"] is None
    # indexed: one value row per value (a multiselect's options one each)
    assert _values_rows(tenant, linked_id) == [("areas", "cart", None), ("areas", "pay", None),
                                               ("browser", "Firefox", None), ("build", None, 412.0)]
    # the failed webhook payload carries them
    [event] = [e for e in events_of(tenant, "test_run_result.failed") if e["data"]["run_id"] == body["run_id"]]
    assert event["data"]["custom_fields"] == linked["custom_fields"]
    assert (event["data"]["file"], event["data"]["line"]) == ("tests/test_pay.py", 42)
    # the run page shows the location
    assert "tests/test_pay.py:42" in tenant.web().get(f"/runs/{body['run_id']}").text
    # the values go with their results
    assert _values_rows(tenant, unlinked_id) == [("browser", "Chrome", None), ("build", None, 7.5)]
    deleted = tenant.web().post(f"/projects/{project['id']}/delete", data={"confirm_name": project["name"]})
    assert deleted.status_code == 303, deleted.text
    assert _values_rows(tenant, linked_id) == [] and _values_rows(tenant, unlinked_id) == []


def test_post_results_and_shards_check_each_item(tenant: Tenant) -> None:
    project = _project_with_fields(tenant)
    first = new_case(tenant, title="One", project_id=project["id"])
    second = new_case(tenant, title="Two", project_id=project["id"])
    run = new_run(tenant, project)
    posted = tenant.api.post(f"/api/v1/runs/{run['id']}/results", json={"results": [
        {"test_case_code": first["code"], "status": "PASSED", "custom_fields": {"build": 1}, "file": "a.py",
         "line": 3},
        {"test_case_code": second["code"], "status": "PASSED", "custom_fields": {"areas": "cart"}},
    ]})
    assert posted.status_code == 207, posted.text
    [error] = posted.json()["errors"]
    assert error["index"] == 1 and "custom_fields.areas" in error["error"]
    shard = tenant.api.post("/api/v1/ingest", json={"project_id": project["id"], "run_id": run["id"], "results": [
        {"test_case_code": first["code"], "status": "FAILED", "custom_fields": {"build": 2, "browser": None}},
        {"test_case_code": second["code"], "status": "PASSED", "custom_fields": {"nope": 1}},
    ]})
    assert shard.status_code == 207, shard.text
    assert "custom_fields.nope" in shard.json()["errors"][0]["error"]
    [result] = tenant.api.get(f"/api/v1/runs/{run['id']}/results").json()["data"]
    # last write wins: the shard's values replaced the first write's (a null is no value: the default
    # applies, as when a case is created)
    assert result["custom_fields"] == {"browser": "Chrome", "build": 2}
    assert result["file"] is None
    assert _values_rows(tenant, result["id"]) == [("browser", "Chrome", None), ("build", None, 2.0)]
    # every item wrong: a 400 listing them, nothing stored
    refused = tenant.api.post("/api/v1/ingest", json={"project_id": project["id"], "results": [
        {"title": "t", "status": "PASSED", "custom_fields": {"build": True}}]})
    assert "custom_fields.build" in json.dumps(assert_problem(refused, 400))


def test_patch_checks_values_and_required_fields(tenant: Tenant) -> None:
    project = _project_with_fields(tenant)
    checked = define(tenant.api, project["id"], "checked_by", "user", entity="result", required=True)
    case = new_case(tenant, title="Pay", project_id=project["id"])
    run = new_run(tenant, project, test_case_ids=[case["id"]])
    [placeholder] = tenant.api.get(f"/api/v1/runs/{run['id']}/results").json()["data"]
    result_id = placeholder["id"]
    assert placeholder["custom_fields"] == {}

    # a comment alone needs no required field; an outcome does
    assert tenant.api.patch(f"/api/v1/results/{result_id}", json={"comment": "later"}).status_code == 200
    missing = tenant.api.patch(f"/api/v1/results/{result_id}", json={"status": "PASSED"})
    assert assert_problem(missing, 400)["errors"][0]["field"] == "custom_fields.checked_by"
    wrong = tenant.api.patch(f"/api/v1/results/{result_id}", json={"custom_fields": {"build": [1]}})
    assert assert_problem(wrong, 400)["errors"][0]["field"] == "custom_fields.build"
    bad_user = tenant.api.patch(f"/api/v1/results/{result_id}", json={
        "status": "PASSED", "custom_fields": {"checked_by": "nobody@example.invalid"}})
    assert assert_problem(bad_user, 400)["errors"][0]["field"] == "custom_fields.checked_by"
    assert _result(tenant, result_id)["status"] == "UNKNOWN"  # nothing of a refused save is kept

    saved = tenant.api.patch(f"/api/v1/results/{result_id}", json={
        "status": "FAILED", "custom_fields": {"checked_by": tenant.email.upper(), "build": 9}})
    assert saved.status_code == 200, saved.text
    values = saved.json()["data"]["custom_fields"]
    assert values["build"] == 9 and values["checked_by"] not in (None, tenant.email.upper())  # stored as the id
    # keys given replace theirs, others stay; null removes one
    again = tenant.api.patch(f"/api/v1/results/{result_id}", json={"custom_fields": {"build": None}})
    assert again.json()["data"]["custom_fields"] == {"checked_by": values["checked_by"]}
    assert _values_rows(tenant, result_id) == [("checked_by", values["checked_by"], None)]
    # the failed event of the manual save carries the values it saved
    [event] = [e for e in events_of(tenant, "test_run_result.failed") if e["data"]["result_id"] == result_id]
    assert event["data"]["custom_fields"] == values
    # a retired required field is no longer asked for
    tenant.api.delete(f"/api/v1/custom-fields/{checked['id']}")
    assert tenant.api.patch(f"/api/v1/results/{result_id}", json={"status": "PASSED"}).status_code == 200


def test_unknown_types_and_huge_input_are_clear_errors(tenant: Tenant) -> None:
    project = _project_with_fields(tenant)
    case = new_case(tenant, title="Pay", project_id=project["id"])
    run = new_run(tenant, project, test_case_ids=[case["id"]])
    [placeholder] = tenant.api.get(f"/api/v1/runs/{run['id']}/results").json()["data"]
    not_object = tenant.api.patch(f"/api/v1/results/{placeholder['id']}", json={"custom_fields": ["a"]})
    assert "custom_fields" in assert_problem(not_object, 400)["detail"]
    many = {f"k{i}": "v" for i in range(201)}
    too_many = tenant.api.patch(f"/api/v1/results/{placeholder['id']}", json={"custom_fields": many})
    assert "custom_fields" in assert_problem(too_many, 400)["detail"]
    nul = tenant.api.patch(f"/api/v1/results/{placeholder['id']}", json={"custom_fields": {"browser": "a\u0000"}})
    assert_problem(nul, 400)


def test_execution_view_shows_saves_and_keeps_input_on_error(tenant: Tenant) -> None:
    project = _project_with_fields(tenant)
    define(tenant.api, project["id"], "ticket", "text", entity="result", required=True)
    case = new_case(tenant, title="Pay", project_id=project["id"])
    run = new_run(tenant, project, test_case_ids=[case["id"]])
    [placeholder] = tenant.api.get(f"/api/v1/runs/{run['id']}/results").json()["data"]
    result_id = placeholder["id"]
    web: httpx.Client = tenant.web()
    page = web.get(f"/results/{result_id}/execute").text
    assert 'name="cf.browser"' in page and 'name="cf.ticket"' in page and 'name="cf.owner_team"' not in page
    assert "<option selected>Chrome</option>" in page  # the default offered

    refused = web.post(f"/results/{result_id}/execute", data={"status": "PASSED", "cf.browser": "Firefox",
                                                               "cf.build": "12", "cf.ticket": ""})
    assert refused.status_code == 400
    assert "required" in (field_error(refused.text, "cf-ticket") or "")
    assert "<option selected>Firefox</option>" in refused.text  # the input kept
    assert input_value(refused.text, "cf.build") == "12"
    not_number = web.post(f"/results/{result_id}/execute", data={"status": "PASSED", "cf.build": "twelve",
                                                                  "cf.ticket": "T-1"})
    assert not_number.status_code == 400 and input_value(not_number.text, "cf.ticket") == "T-1"
    assert _result(tenant, result_id)["status"] == "UNKNOWN"

    saved = web.post(f"/results/{result_id}/execute", data={"status": "PASSED", "cf.browser": "Firefox",
                                                             "cf.build": "12", "cf.ticket": "T-1",
                                                             "cf.areas": ["cart", "pay"]})
    assert saved.status_code == 303, saved.text
    assert _result(tenant, result_id)["custom_fields"] == {"areas": ["cart", "pay"], "browser": "Firefox",
                                                           "build": 12, "ticket": "T-1"}
    shown = web.get(f"/results/{result_id}/execute").text
    assert input_value(shown, "cf.ticket") == "T-1" and "<option selected>Firefox</option>" in shown


def test_location_shows_on_the_execution_view(tenant: Tenant) -> None:
    project = tenant.create_project()
    case = new_case(tenant, title="Pay", project_id=project["id"])
    answer = tenant.api.post("/api/v1/ingest", json={"project_id": project["id"], "results": [
        {"test_case_code": case["code"], "status": "PASSED", "file": "src/<pay>_test.go", "line": 10_000_000}]})
    assert answer.status_code == 201, answer.text
    result_id = answer.json()["result_ids"][0]
    page = tenant.web().get(f"/results/{result_id}/execute").text
    assert 'id="result-location"' in page and "src/&lt;pay&gt;_test.go:10000000" in page


def test_the_reporter_sends_file_and_line_from_reports(tenant: Tenant) -> None:
    """`tms ingest` of a JUnit report (pytest's file/line attributes) and a Playwright CTRF report
    (filePath/line): each result comes back with the location its report gave; --dry-run --json shows it."""
    from tests.test_reporter_e2e import REPORTS, ROOT, ingest, results_of

    project = tenant.create_project()
    junit = REPORTS / "pytest" / "junit.xml"
    ctrf = ROOT / "tests" / "fixtures" / "ctrf" / "playwright-ctrf.json"
    done = ingest(tenant, str(junit), str(ctrf), "--project", project["id"], "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    results = results_of(tenant, summary["run_id"])
    [total] = [r for r in results if r["title"].endswith("test_total_is_wrong")]
    assert (total["file"], total["line"]) == ("sample_checkout.py", 21)
    # the CTRF tests name their filePath and no line
    located = [r for r in results if r["file"] and r["file"].endswith("source/shop.spec.mjs")]
    assert len(located) == len([r for r in results if r["title"].startswith("shop.spec.mjs")]) >= 5
    assert all(r["line"] is None for r in located)

    dry = ingest(tenant, str(junit), "--project", project["id"], "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    items = json.loads(dry.stdout)["payload"]["results"]
    assert {"file": "sample_checkout.py", "line": 21}.items() <= next(
        i for i in items if i["title"].endswith("test_total_is_wrong")).items()


def test_many_results_with_values_are_all_indexed(tenant: Tenant) -> None:
    """Above VALUES_IN_THREAD results holding values, their value rows are made in a worker thread."""
    project = _project_with_fields(tenant)
    answer = tenant.api.post("/api/v1/ingest", json={"project_id": project["id"], "results": [
        {"title": f"t{i}", "status": "PASSED", "custom_fields": {"build": i, "areas": ["cart"]}} for i in range(600)]})
    assert answer.status_code == 201, answer.text
    ids = answer.json()["result_ids"]
    with connect_db(tenant.server.db_path) as conn:
        counted = conn.execute(
            "SELECT field_key, COUNT(*) FROM result_field_values WHERE tenant_id = ? GROUP BY field_key "
            "ORDER BY field_key", (tenant.id,)).fetchall()
    # each result: its build, its area and the browser's default
    assert [tuple(row) for row in counted] == [("areas", 600), ("browser", 600), ("build", 600)]
    assert _values_rows(tenant, ids[599]) == [("areas", "cart", None), ("browser", "Chrome", None),
                                              ("build", None, 599.0)]
