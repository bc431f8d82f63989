"""A result's comments go with the result, however it goes (migration 0044: a row trigger on SQLite,
a statement trigger on PostgreSQL): the retention sweep of old runs and of unlinked results, a run's
deletion, a case taken out of a run. Nothing else's comments go with them."""

from __future__ import annotations

from typing import Any

from tests import postgres_cluster
from tests.conftest import Tenant, connect_db, run_admin, storage_env
from tests.test_cases import new_case
from tests.test_retention import age_unlinked_rows, sweep
from tests.test_runs import new_run
from tms.attachments.objects import store_for


def _comment(tenant: Tenant, path: str) -> str:
    response = tenant.api.post(f"/api/v1/{path}/comments", json={"body": "seen on CI"})
    assert response.status_code == 201, response.text
    return response.json()["data"]["id"]  # type: ignore[no-any-return]


def _ingest(tenant: Tenant, project_id: str, items: list[dict[str, Any]]) -> tuple[str, list[str]]:
    response = tenant.api.post("/api/v1/ingest", json={"project_id": project_id, "results": items})
    assert response.status_code == 201, response.text
    return response.json()["run_id"], response.json()["result_ids"]


def _comment_ids(tenant: Tenant) -> set[str]:
    with connect_db(tenant.server.db_path) as conn:
        return {row[0] for row in conn.execute("SELECT id FROM comments WHERE tenant_id = ?", (tenant.id,))}


def test_the_sweep_of_old_runs_takes_their_results_comments(tenant: Tenant) -> None:
    from tms.config import load_config
    from tms.runs.retention import service as retention

    project = tenant.create_project()["id"]
    case = new_case(tenant, project_id=project)
    old_run, [old_linked, old_unlinked] = _ingest(tenant, project, [
        {"test_case_code": case["code"], "status": "FAILED"}, {"title": "loose", "status": "FAILED"}])
    _, [new_linked] = _ingest(tenant, project, [{"test_case_code": case["code"], "status": "FAILED"}])
    gone = {_comment(tenant, f"results/{old_linked}"), _comment(tenant, f"results/{old_linked}"),
            _comment(tenant, f"results/{old_unlinked}")}
    kept = {_comment(tenant, f"results/{new_linked}"), _comment(tenant, f"cases/{case['id']}")}
    with connect_db(tenant.server.db_path) as conn:
        conn.execute("UPDATE test_runs SET created_at = '2020-01-01T00:00:00.000Z' WHERE id = ?", (old_run,))

    config = load_config(None, storage_env(tenant.server.data_dir))
    assert run_admin(tenant.server.db_path, lambda db: retention.sweep_old_runs(db, store_for(config), 10)) == 1
    assert _comment_ids(tenant) == kept
    assert tenant.api.get(f"/api/v1/results/{new_linked}/comments").json()["pagination"]["total"] == 1
    assert gone.isdisjoint(_comment_ids(tenant))


def test_the_sweep_of_unlinked_results_takes_their_comments(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    run, results = _ingest(tenant, project, [{"title": f"t{n}", "status": "FAILED"} for n in range(3)])
    comments = {result: _comment(tenant, f"results/{result}") for result in results}
    age_unlinked_rows(tenant, run, days=45, count=2)  # the first two rows, by insertion
    assert sweep(tenant) == {"data": {"deleted": 2}}
    assert _comment_ids(tenant) == {comments[results[2]]}


def test_a_deleted_run_and_a_case_taken_out_of_a_run_take_their_results_comments(
        tenant: Tenant, other_tenant: Tenant) -> None:
    project = tenant.create_project()
    one, two = new_case(tenant, project_id=project["id"]), new_case(tenant, project_id=project["id"])
    run = new_run(tenant, project, test_case_ids=[one["id"], two["id"]])
    results = {r["test_case_code"]: r["id"] for r in tenant.api.get(f"/api/v1/runs/{run['id']}/results").json()["data"]}
    first, second = (_comment(tenant, f"results/{results[case['code']]}") for case in (one, two))
    _, [foreign] = _ingest(other_tenant, other_tenant.create_project()["id"], [{"title": "x", "status": "PASSED"}])
    elsewhere = _comment(other_tenant, f"results/{foreign}")

    removed = tenant.api.request("DELETE", f"/api/v1/runs/{run['id']}/cases", json={"case_ids": [one["code"]]})
    assert removed.status_code == 200, removed.text
    assert _comment_ids(tenant) == {second}
    assert first not in _comment_ids(tenant)

    with connect_db(tenant.server.db_path) as conn:  # the run's own deletion (its cascade to its results)
        if not postgres_cluster.selected():
            conn.execute("PRAGMA foreign_keys = ON")  # as the server's own connections have it
        conn.execute("DELETE FROM test_runs WHERE id = ?", (run["id"],))
        conn.commit()
    assert _comment_ids(tenant) == set()
    assert _comment_ids(other_tenant) == {elsewhere}
