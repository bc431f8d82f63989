"""One result over the API: GET/PATCH /results/{id}, step results, assignment, filters, counts, events."""

from __future__ import annotations

from tests.conftest import Tenant, assert_problem, connect_db
from tests.team_helpers import add_member
from tests.test_cases import new_case
from tests.test_runs import events_of, new_run

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)

GHERKIN = """Feature: Checkout
  Background:
    Given a signed-in shopper
  Scenario Outline: Pay
    When I pay with <card>
    Then the order is paid
    Examples:
      | card |
      | visa |
      | amex |
"""


def _run_with_results(tenant: Tenant, n: int = 2) -> tuple[dict, list[dict]]:
    project = tenant.create_project()
    cases = [new_case(tenant, title=f"Case {i}", bdd_content=GHERKIN) for i in range(n)]
    run = new_run(tenant, project, test_case_ids=[c["id"] for c in cases])
    results = tenant.api.get(f"/api/v1/runs/{run['id']}/results").json()["data"]
    return run, results


def test_get_and_patch_one_result_keeps_counts_and_fires_failed(tenant: Tenant) -> None:
    run, results = _run_with_results(tenant)
    first = results[0]
    got = tenant.client("read").get(f"/api/v1/results/{first['id']}")
    assert got.status_code == 200
    assert got.json()["data"]["assignee_id"] is None and got.json()["data"]["step_results"] is None
    assert got.json()["data"]["case_version"] == 1
    tester = add_member(tenant, "tester")
    steps = [{"index": 1, "status": "PASSED"}, {"index": 2, "status": "FAILED", "comment": "declined"}]
    patched = tenant.api.patch(f"/api/v1/results/{first['id']}", json={
        "status": "FAILED", "comment": "card declined", "bug_ticket_key": "PAY-9",
        "bug_ticket_url": "https://bugs.example.com/PAY-9", "assignee_id": tester.id, "step_results": steps})
    assert patched.status_code == 200, patched.text
    data = patched.json()["data"]
    assert data["status"] == "FAILED" and data["assignee_id"] == tester.id and data["step_results"] == steps
    assert data["bug_ticket_key"] == "PAY-9" and data["executed_at"]
    run_now = tenant.api.get(f"/api/v1/runs/{run['id']}").json()["data"]
    assert run_now["status"] == "IN_PROGRESS"
    assert run_now["counts"] == {"total": 2, "passed": 0, "failed": 1, "broken": 0, "skipped": 0, "unknown": 1}
    failed = events_of(tenant, "test_run_result.failed")
    assert len(failed) == 1 and failed[0]["data"]["result_id"] == first["id"]
    assert failed[0]["data"]["bug_ticket_key"] == "PAY-9"
    # staying FAILED fires nothing more; PASSED moves the counts back
    tenant.api.patch(f"/api/v1/results/{first['id']}", json={"comment": "still"})
    tenant.api.patch(f"/api/v1/results/{first['id']}", json={"status": "PASSED"})
    assert len(events_of(tenant, "test_run_result.failed")) == 1
    counts = tenant.api.get(f"/api/v1/runs/{run['id']}").json()["data"]["counts"]
    assert counts["passed"] == 1 and counts["failed"] == 0 and counts["unknown"] == 1

    by_assignee = tenant.api.get(f"/api/v1/runs/{run['id']}/results", params={"assignee_id": tester.id})
    assert [r["id"] for r in by_assignee.json()["data"]] == [first["id"]]
    by_status = tenant.api.get(f"/api/v1/runs/{run['id']}/results", params={"status": "UNKNOWN"})
    assert [r["id"] for r in by_status.json()["data"]] == [results[1]["id"]]
    assert_problem(tenant.api.get(f"/api/v1/runs/{run['id']}/results", params={"status": "NOPE"}), 400)
    with connect_db(tenant.server.db_path) as conn:
        actions = [r[0] for r in conn.execute(
            "SELECT action FROM audit_log WHERE tenant_id = ? AND entity_id = ? ORDER BY rowid",
            (tenant.id, first["id"]))]
    assert actions == ["result.updated"] * 3


def test_bad_patches_are_400_naming_the_field(tenant: Tenant, other_tenant: Tenant) -> None:
    _, results = _run_with_results(tenant, 1)
    url = f"/api/v1/results/{results[0]['id']}"
    foreign = add_member(other_tenant, "tester")
    gone = add_member(tenant, "tester")
    with connect_db(tenant.server.db_path) as conn:
        conn.execute("UPDATE users SET active = 0 WHERE id = ?", (gone.id,))
    for body, field in [
        ({"status": "DONE"}, "status"),
        ({"assignee_id": foreign.id}, "assignee_id"),
        ({"assignee_id": gone.id}, "assignee_id"),
        ({"step_results": [{"index": 0, "status": "PASSED"}]}, "step_results"),
        ({"step_results": [{"index": 8, "status": "PASSED"}]}, "step_results"),  # the checklist has 5 steps
        ({"step_results": [{"index": 1, "status": "PASSED"}, {"index": 1, "status": "FAILED"}]}, "step_results"),
        ({"step_results": [{"index": 1, "status": "PASSED", "x": 1}]}, "step_results"),
        ({"title": "no"}, "title"),
    ]:
        problem = assert_problem(tenant.api.patch(url, json=body), 400)
        assert field in problem["detail"] or any(field in e["field"] for e in problem.get("errors", [])), body
    assert tenant.api.patch(url, json={"step_results": [{"index": 5, "status": "SKIPPED"}]}).status_code == 200
    assert_problem(tenant.client("read").patch(url, json={"status": "PASSED"}), 403)


def test_assign_in_bulk_and_unassign(tenant: Tenant) -> None:
    run, results = _run_with_results(tenant, 3)
    tester = add_member(tenant, "tester")
    ids = [r["id"] for r in results[:2]]
    answer = tenant.api.post(f"/api/v1/runs/{run['id']}/assign", json={"result_ids": ids, "assignee_id": tester.id})
    assert answer.status_code == 200 and answer.json() == {"data": {"assigned": 2}}
    mine = tenant.api.get(f"/api/v1/runs/{run['id']}/results", params={"assignee_id": tester.id}).json()["data"]
    assert sorted(r["id"] for r in mine) == sorted(ids)
    assert_problem(tenant.api.post(f"/api/v1/runs/{run['id']}/assign",
                                   json={"result_ids": ["nope"], "assignee_id": tester.id}), 400)
    tenant.api.post(f"/api/v1/runs/{run['id']}/assign", json={"result_ids": ids[:1], "assignee_id": None})
    mine = tenant.api.get(f"/api/v1/runs/{run['id']}/results", params={"assignee_id": tester.id}).json()["data"]
    assert [r["id"] for r in mine] == ids[1:]


def test_users_and_audit_lists(tenant: Tenant) -> None:
    viewer = add_member(tenant, "viewer")
    users = tenant.client("read").get("/api/v1/users").json()["data"]
    assert [u["role"] for u in users] == ["owner", "viewer"]
    assert set(users[0]) == {"id", "email", "name", "role", "active", "created_at"}
    assert users[1]["id"] == viewer.id and users[1]["active"] is True
    project = tenant.create_project()
    new_run(tenant, project)
    audit = tenant.client("read").get("/api/v1/audit", params={"limit": 1}).json()
    assert audit["pagination"] == {"total": audit["pagination"]["total"], "limit": 1, "offset": 0}
    entry = audit["data"][0]
    assert entry["action"] == "run.created" and entry["actor"]["type"] == "token"
    assert set(entry) == {"id", "actor", "action", "entity_type", "entity_id", "changes", "created_at"}
    only_users = tenant.api.get("/api/v1/audit", params={"entity_type": "user"}).json()["data"]
    assert {e["action"] for e in only_users} == {"user.created"}
