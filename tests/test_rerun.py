"""Rerun (issue 26): a new run of a run's failed/broken/untested cases, same environment and milestone,
assigned as before; the run's edit form (name, environment, milestone). Both databases."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import Tenant, assert_problem
from tests.team_helpers import add_member, web_as
from tests.web_helpers import HTML, every_post_form_has_csrf, flashes, follow, text_of

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)

GHERKIN = "Feature: F\n  Scenario: S\n    Given a step\n"


def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, f"{response.status_code}: {response.text[:500]}"
    return response.json()


def world(tenant: Tenant) -> dict[str, Any]:
    """A run in staging and a milestone: five cases PASSED, FAILED, BROKEN, SKIPPED and UNKNOWN, two of
    them assigned."""
    api = tenant.api
    project = tenant.create_project("Rerun", environments=["staging", "production"])["id"]
    milestone = ok(api.post("/api/v1/milestones", json={"project_id": project, "name": "1.0"}), 201)["data"]["id"]
    cases = [ok(api.post("/api/v1/cases", json={"project_id": project, "title": f"Case {s}", "bdd_content": GHERKIN}),
                201)["data"] for s in ("P", "F", "B", "S", "U")]
    run = ok(api.post("/api/v1/runs", json={"name": "Nightly", "project_id": project, "environment": "staging",
                                            "milestone_id": milestone,
                                            "test_case_ids": [c["code"] for c in cases]}), 201)["data"]
    results = [{"test_case_code": c["code"], "status": s}
               for c, s in zip(cases[:4], ("PASSED", "FAILED", "BROKEN", "SKIPPED"), strict=True)]
    ok(api.post(f"/api/v1/runs/{run['id']}/results", json={"results": results}), 201)
    rows = {r["test_case_code"]: r for r in ok(api.get(f"/api/v1/runs/{run['id']}/results",
                                                       params={"limit": 100}))["data"] if r.get("test_case_code")}
    tester = add_member(tenant, "tester")
    ok(api.post(f"/api/v1/runs/{run['id']}/assign",
                json={"result_ids": [rows[cases[1]["code"]]["id"], rows[cases[4]["code"]]["id"]],
                      "assignee_id": tester.id}))
    return {"project": project, "milestone": milestone, "cases": cases, "run": run, "tester": tester}


def results_of(tenant: Tenant, run_id: str) -> dict[str, dict[str, Any]]:
    data = ok(tenant.api.get(f"/api/v1/runs/{run_id}/results", params={"limit": 100}))["data"]
    return {r["test_case_code"]: r for r in data}


def test_rerun_failures_api(tenant: Tenant) -> None:
    w = world(tenant)
    cases, run = w["cases"], w["run"]
    answer = tenant.api.post(f"/api/v1/runs/{run['id']}/rerun", json={"statuses": ["FAILED", "BROKEN", "UNKNOWN"]})
    new = ok(answer, 201)["data"]
    assert new["id"] != run["id"] and new["name"] == "Nightly (rerun)" and new["status"] == "PENDING"
    assert (new["project_id"], new["environment"], new["milestone_id"]) == (w["project"], "staging", w["milestone"])
    assert new["counts"]["total"] == 3 and new["counts"]["unknown"] == 3
    rows = results_of(tenant, new["id"])
    assert sorted(rows) == sorted(c["code"] for c in cases[1:3] + cases[4:])
    assert {r["status"] for r in rows.values()} == {"UNKNOWN"}
    assert rows[cases[1]["code"]]["assignee_id"] == w["tester"].id
    assert rows[cases[4]["code"]]["assignee_id"] == w["tester"].id
    assert rows[cases[2]["code"]]["assignee_id"] is None
    # the source run is untouched; the new one is listed under the milestone
    assert ok(tenant.api.get(f"/api/v1/runs/{run['id']}"))["data"]["counts"]["total"] == 5
    in_milestone = ok(tenant.api.get("/api/v1/runs", params={"milestone_id": w["milestone"]}))["data"]
    assert {r["id"] for r in in_milestone} == {run["id"], new["id"]}
    audit = ok(tenant.api.get("/api/v1/audit", params={"entity_type": "run", "entity_id": new["id"]}))["data"]
    assert audit[0]["action"] == "run.created" and audit[0]["changes"]["rerun_of"] == run["id"]

    named = ok(tenant.api.post(f"/api/v1/runs/{run['id']}/rerun", json={"statuses": ["PASSED"], "name": "Again"}),
               201)["data"]
    assert named["name"] == "Again" and list(results_of(tenant, named["id"])) == [cases[0]["code"]]


def test_rerun_bad_input(tenant: Tenant, other_tenant: Tenant) -> None:
    w = world(tenant)
    url = f"/api/v1/runs/{w['run']['id']}/rerun"

    def field(response: httpx.Response, status: int = 400) -> str:
        body = assert_problem(response, status)
        named = str(body["errors"][0]["field"]) if body.get("errors") else ""
        return named if named and named != "body" else str(body["detail"])

    assert "statuses" in field(tenant.api.post(url, json={"statuses": []}))
    assert "statuses" in field(tenant.api.post(url, json={"statuses": ["FLAKY"]}))
    assert "statuses" in field(tenant.api.post(url, json={"statuses": "FAILED"}))
    assert "statuses" in field(tenant.api.post(url, json={}))
    assert "name" in field(tenant.api.post(url, json={"statuses": ["FAILED"], "name": ""}))
    assert "name" in field(tenant.api.post(url, json={"statuses": ["FAILED"], "name": "   "}))
    assert "name" in field(tenant.api.post(url, json={"statuses": ["FAILED"], "name": "x" * 201}))
    assert_problem(tenant.api.post(url, json={"statuses": ["FAILED"], "extra": 1}), 400)
    assert_problem(tenant.api.post(url, json={"statuses": ["FAILED"], "name": "a\u0000b"}), 400)
    # a run with no such result: 400 naming statuses
    only_cases = ok(tenant.api.post("/api/v1/runs", json={"name": "Empty", "project_id": w["project"]}), 201)["data"]
    assert field(tenant.api.post(f"/api/v1/runs/{only_cases['id']}/rerun", json={"statuses": ["FAILED"]})) \
        == "statuses"
    assert_problem(tenant.client("read").post(url, json={"statuses": ["FAILED"]}), 403)
    assert_problem(other_tenant.api.post(url, json={"statuses": ["FAILED"]}), 404)
    # an archived project takes no new run
    tenant.api.patch(f"/api/v1/projects/{w['project']}", json={"archived": True})
    assert_problem(tenant.api.post(url, json={"statuses": ["FAILED"]}), 409)
    runs = ok(tenant.api.get("/api/v1/runs", params={"project_id": w["project"]}))["data"]
    assert len(runs) == 2  # nothing was created by the refused calls


def test_rerun_and_edit_on_the_web(tenant: Tenant) -> None:
    w = world(tenant)
    run = w["run"]
    web = tenant.web()
    page = web.get(f"/runs/{run['id']}", headers=HTML)
    assert page.status_code == 200 and every_post_form_has_csrf(page.text)
    assert "Rerun failures" in page.text and f'href="/runs/{run["id"]}/edit"' in page.text
    # the defaults: Failed, Blocked and Untested ticked
    for status, word in (("FAILED", "Failed"), ("BROKEN", "Blocked"), ("UNKNOWN", "Untested")):
        assert f'value="{status}" checked> {word}' in page.text
    assert 'value="PASSED"> Passed' in page.text

    nothing = web.post(f"/runs/{run['id']}/rerun", data={"name": "Kept"}, headers=HTML)
    assert nothing.status_code == 400 and "Tick at least one status." in text_of(nothing.text)
    assert 'value="Kept"' in nothing.text
    bad = web.post(f"/runs/{run['id']}/rerun", data={"statuses": ["FAILED", "FLAKY"], "name": "Kept"}, headers=HTML)
    assert bad.status_code == 400 and 'id="f-statuses-error"' in bad.text and 'value="Kept"' in bad.text
    empty_run = ok(tenant.api.post("/api/v1/runs", json={"name": "Empty", "project_id": w["project"]}), 201)["data"]
    none_match = web.post(f"/runs/{empty_run['id']}/rerun", data={"statuses": ["FAILED"]}, headers=HTML)
    assert none_match.status_code == 400 and "nothing to rerun" in text_of(none_match.text)
    created = web.post(f"/runs/{run['id']}/rerun", data={"statuses": ["FAILED", "BROKEN", "UNKNOWN"]},
                       headers=HTML)
    shown = follow(web, created)
    assert "Run “Nightly (rerun)” created with 3 cases." in flashes(shown.text)

    edit = web.get(f"/runs/{run['id']}/edit", headers=HTML)
    assert edit.status_code == 200 and every_post_form_has_csrf(edit.text)
    assert 'value="Nightly"' in edit.text and f'<option value="{w["milestone"]}" selected>' in edit.text
    blank = web.post(f"/runs/{run['id']}/edit", data={"name": "", "environment": "prod-eu", "milestone_id": ""},
                     headers=HTML)
    assert blank.status_code == 400 and 'id="f-name-error"' in blank.text and 'value="prod-eu"' in blank.text
    saved = follow(web, web.post(f"/runs/{run['id']}/edit",
                                 data={"name": "Nightly 2", "environment": "production", "milestone_id": ""},
                                 headers=HTML))
    assert "Run “Nightly 2” saved." in flashes(saved.text)
    got = ok(tenant.api.get(f"/api/v1/runs/{run['id']}"))["data"]
    assert (got["name"], got["environment"], got["milestone_id"]) == ("Nightly 2", "production", None)
    back = web.post(f"/runs/{run['id']}/edit", data={"name": "Nightly 2", "environment": "production",
                                                     "milestone_id": w["milestone"]}, headers=HTML)
    assert back.status_code == 303
    assert ok(tenant.api.get(f"/api/v1/runs/{run['id']}"))["data"]["milestone_id"] == w["milestone"]
    wrong = web.post(f"/runs/{run['id']}/edit",
                     data={"name": "Nightly 2", "milestone_id": "cnosuch0000000000000000000"}, headers=HTML)
    assert wrong.status_code == 400 and 'id="f-milestone_id-error"' in wrong.text

    # the milestone page no longer sends people to the API
    milestone_page = web.get(f"/milestones/{w['milestone']}", headers=HTML)
    assert "through the API" not in milestone_page.text

    viewer = add_member(tenant, "viewer")
    as_viewer = web_as(tenant, viewer.email, viewer.password)
    assert "Rerun failures" not in as_viewer.get(f"/runs/{run['id']}", headers=HTML).text
    assert as_viewer.post(f"/runs/{run['id']}/rerun", data={"statuses": ["FAILED"]}).status_code == 403
    assert as_viewer.post(f"/runs/{run['id']}/edit", data={"name": "x"}).status_code == 403
