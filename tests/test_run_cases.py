"""Adding cases to an open run and removing them: UNKNOWN placeholders, counts, audit, 409 when closed."""

from __future__ import annotations

from tests.conftest import Tenant, assert_problem, connect_db
from tests.test_cases import new_case
from tests.test_runs import new_run

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)


def test_add_cases_prepopulates_unknown_results_and_keeps_counts(tenant: Tenant) -> None:
    project = tenant.create_project()
    one, two, three = (new_case(tenant, title=t) for t in ("One", "Two", "Three"))
    run = new_run(tenant, project, test_case_ids=[one["id"]])
    tenant.api.post(f"/api/v1/runs/{run['id']}/results",
                    json={"results": [{"test_case_code": one["code"], "status": "PASSED"}]})
    answer = tenant.api.post(f"/api/v1/runs/{run['id']}/cases",
                             json={"case_ids": [one["code"], two["id"], three["code"], two["code"]]})
    assert answer.status_code == 200, answer.text
    data = answer.json()["data"]
    assert data["added"] == 2  # one was already there and keeps its PASSED result
    assert data["run"]["counts"] == {"total": 3, "passed": 1, "failed": 0, "broken": 0, "skipped": 0, "unknown": 2}
    results = {r["test_case_code"]: r["status"]
               for r in tenant.api.get(f"/api/v1/runs/{run['id']}/results").json()["data"]}
    assert results == {one["code"]: "PASSED", two["code"]: "UNKNOWN", three["code"]: "UNKNOWN"}

    removed = tenant.api.request("DELETE", f"/api/v1/runs/{run['id']}/cases",
                                 json={"case_ids": [one["code"], two["code"]]})
    assert removed.status_code == 200, removed.text
    assert removed.json()["data"]["removed"] == 2
    assert removed.json()["data"]["run"]["counts"] == {
        "total": 1, "passed": 0, "failed": 0, "broken": 0, "skipped": 0, "unknown": 1}
    with connect_db(tenant.server.db_path) as conn:
        actions = [row[0] for row in conn.execute(
            "SELECT action FROM audit_log WHERE tenant_id = ? AND entity_id = ? ORDER BY rowid",
            (tenant.id, run["id"]))]
    assert actions == ["run.created", "run.results_posted", "run.cases_added", "run.cases_removed"]


def test_adding_to_a_completed_run_is_409_and_unknown_cases_400(tenant: Tenant, other_tenant: Tenant) -> None:
    project = tenant.create_project()
    case = new_case(tenant)
    foreign = new_case(other_tenant)
    run = new_run(tenant, project)
    problem = assert_problem(tenant.api.post(f"/api/v1/runs/{run['id']}/cases",
                                             json={"case_ids": [case["code"], foreign["id"], "NOPE-1"]}), 400)
    assert "NOPE-1" in problem["detail"] and foreign["id"] in problem["detail"]
    assert_problem(tenant.api.post(f"/api/v1/runs/{run['id']}/cases", json={"case_ids": []}), 400)
    assert_problem(tenant.api.post(f"/api/v1/runs/{run['id']}/cases", json={"case_ids": ["x"], "x": 1}), 400)
    tenant.api.patch(f"/api/v1/runs/{run['id']}", json={"status": "COMPLETED"})
    assert_problem(tenant.api.post(f"/api/v1/runs/{run['id']}/cases", json={"case_ids": [case["code"]]}), 409)
    assert_problem(tenant.client("read").post(f"/api/v1/runs/{run['id']}/cases",
                                              json={"case_ids": [case["code"]]}), 403)
