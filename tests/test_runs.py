"""Runs over the public API: create (pre-populated), list with filters and pages, status moves, events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Tenant, assert_problem, connect_db
from tests.test_cases import new_case

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)


def events_of(tenant: Tenant, event: str) -> list[dict[str, Any]]:
    """The outbox rows of one tenant and event, oldest first (the dispatcher delivers from there)."""
    with connect_db(tenant.server.db_path) as conn:
        rows = conn.execute(
            "SELECT body FROM events WHERE tenant_id = ? AND event = ? ORDER BY rowid", (tenant.id, event)
        ).fetchall()
    return [json.loads(body) for (body,) in rows]


def new_run(tenant: Tenant, project: dict[str, Any], **fields: Any) -> dict[str, Any]:
    response = tenant.api.post("/api/v1/runs", json={"name": "Nightly", "project_id": project["id"], **fields})
    assert response.status_code == 201, response.text
    return response.json()["data"]


def test_create_run_is_pending_with_the_spec_fields(tenant: Tenant) -> None:
    project = tenant.create_project()
    run = new_run(tenant, project, environment="staging")
    assert {k: run[k] for k in ("name", "project_id", "environment", "status")} == {
        "name": "Nightly", "project_id": project["id"], "environment": "staging", "status": "PENDING"}
    assert run["created_at"] == run["updated_at"] and run["completed_at"] is None
    assert run["counts"] == {"total": 0, "passed": 0, "failed": 0, "broken": 0, "skipped": 0, "unknown": 0}
    assert "test_case_ids" not in run
    assert new_run(tenant, project)["environment"] is None
    assert tenant.client("read").get(f"/api/v1/runs/{run['id']}").json() == {"data": run}


def test_test_case_ids_prepopulate_unknown_results(tenant: Tenant) -> None:
    project = tenant.create_project()
    one, two = new_case(tenant, title="One"), new_case(tenant, code="PAY-3")
    run = new_run(tenant, project, test_case_ids=[one["id"], "PAY-3", one["code"]])
    assert run["status"] == "PENDING"  # placeholders are not reported results
    assert run["counts"]["total"] == 2 and run["counts"]["unknown"] == 2
    results = tenant.api.get(f"/api/v1/runs/{run['id']}/results").json()["data"]
    assert [(r["test_case_code"], r["test_case_id"], r["status"], r["title"]) for r in results] == [
        (one["code"], one["id"], "UNKNOWN", "One"), ("PAY-3", two["id"], "UNKNOWN", two["title"])]


def test_unknown_test_case_ids_are_400_naming_them(tenant: Tenant, other_tenant: Tenant) -> None:
    project = tenant.create_project()
    mine = new_case(tenant)
    foreign = new_case(other_tenant, code="FOREIGN-1")
    body = {"name": "r", "project_id": project["id"], "test_case_ids": [mine["code"], "NOPE-9", foreign["id"]]}
    problem = assert_problem(tenant.api.post("/api/v1/runs", json=body), 400)
    assert "NOPE-9" in problem["detail"] and foreign["id"] in problem["detail"]
    assert tenant.api.get("/api/v1/runs").json()["pagination"]["total"] == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"project_id": "x"}, "name"),
        ({"name": "r"}, "project_id"),
        ({"name": "", "project_id": "x"}, "name"),
        ({"name": 1, "project_id": "x"}, "name"),
        ({"name": "r", "project_id": "x", "environment": 3}, "environment"),
        ({"name": "r", "project_id": "x", "test_case_ids": "TC-1"}, "test_case_ids"),
        ({"name": "r", "project_id": "x", "status": "COMPLETED"}, "status"),
        ({"name": "r", "project_id": "x", "id": "c1"}, "id"),
    ],
)
def test_invalid_run_bodies_are_400(tenant: Tenant, body: dict, field: str) -> None:
    problem = assert_problem(tenant.api.post("/api/v1/runs", json=body), 400)
    assert field in problem["detail"] or any(field in e["field"] for e in problem.get("errors", []))


@pytest.mark.parametrize("content", [b"{", b"", b"[]", b"null"])
def test_malformed_json_is_400(tenant: Tenant, content: bytes) -> None:
    assert_problem(tenant.api.post("/api/v1/runs", content=content, headers={"Content-Type": "application/json"}),
                   400)
    run = new_run(tenant, tenant.create_project())
    assert_problem(tenant.api.patch(f"/api/v1/runs/{run['id']}", content=content,
                                    headers={"Content-Type": "application/json"}), 400)


def test_unknown_or_foreign_project_is_404(tenant: Tenant, other_tenant: Tenant) -> None:
    for project_id in ("cnothere", other_tenant.create_project()["id"]):
        problem = assert_problem(tenant.api.post("/api/v1/runs", json={"name": "r", "project_id": project_id}), 404)
        assert "project" in problem["detail"]


def test_other_tenants_run_is_404_on_every_route(tenant: Tenant, other_tenant: Tenant) -> None:
    run = new_run(other_tenant, other_tenant.create_project())
    for run_id in (run["id"], "cmissing"):
        assert_problem(tenant.api.get(f"/api/v1/runs/{run_id}"), 404)
        assert_problem(tenant.api.patch(f"/api/v1/runs/{run_id}", json={"status": "COMPLETED"}), 404)
        assert_problem(tenant.api.get(f"/api/v1/runs/{run_id}/results"), 404)
        assert_problem(tenant.api.post(f"/api/v1/runs/{run_id}/results",
                                       json={"results": [{"test_case_code": "TC-1", "status": "PASSED"}]}), 404)
    assert other_tenant.api.get(f"/api/v1/runs/{run['id']}").json()["data"]["status"] == "PENDING"
    assert events_of(other_tenant, "test_run.completed") == []


def test_status_moves_and_completed_fires_once_per_entry(tenant: Tenant) -> None:
    project = tenant.create_project()
    case = new_case(tenant)
    run = new_run(tenant, project, environment="qa")
    posted = tenant.api.post(f"/api/v1/runs/{run['id']}/results",
                             json={"results": [{"test_case_id": case["id"], "status": "PASSED"}]})
    assert posted.status_code == 201
    assert tenant.api.get(f"/api/v1/runs/{run['id']}").json()["data"]["status"] == "IN_PROGRESS"

    def patch(**body: Any) -> dict[str, Any]:
        response = tenant.api.patch(f"/api/v1/runs/{run['id']}", json=body)
        assert response.status_code == 200, response.text
        return response.json()["data"]

    done = patch(status="COMPLETED")
    assert done["status"] == "COMPLETED" and done["completed_at"] and done["updated_at"] > run["updated_at"]
    patch(status="COMPLETED")  # already completed: nothing new
    patch(name="Renamed")
    fired = events_of(tenant, "test_run.completed")
    assert len(fired) == 1
    assert fired[0]["tenant_id"] == tenant.id and fired[0]["event"] == "test_run.completed"
    assert fired[0]["data"] == {"run_id": run["id"], "run_name": "Nightly", "project_id": project["id"],
                                "environment": "qa", "total": 1, "passed": 1, "failed": 0, "broken": 0,
                                "skipped": 0}
    assert patch(status="SYNCED")["status"] == "SYNCED"
    assert len(events_of(tenant, "test_run.completed")) == 1  # SYNCED fires nothing
    assert patch(status="PENDING")["status"] == "PENDING"  # the contract allows any move
    patch(status="COMPLETED")
    assert len(events_of(tenant, "test_run.completed")) == 2  # entering COMPLETED again fires again
    renamed = patch(name="Final", environment=None)
    assert renamed["name"] == "Final" and renamed["environment"] is None


@pytest.mark.parametrize(
    "body", [{"status": "completed"}, {"status": "DONE"}, {"status": None}, {"name": ""}, {"name": None},
             {"project_id": "x"}, {"bogus": 1}, {"environment": 5}],
)
def test_invalid_patches_are_400_and_change_nothing(tenant: Tenant, body: dict) -> None:
    run = new_run(tenant, tenant.create_project())
    assert_problem(tenant.api.patch(f"/api/v1/runs/{run['id']}", json=body), 400)
    assert tenant.api.get(f"/api/v1/runs/{run['id']}").json()["data"] == run


def test_scopes(tenant: Tenant) -> None:
    reader = tenant.client("read")
    project = tenant.create_project()
    run = new_run(tenant, project)
    assert reader.get("/api/v1/runs").status_code == 200
    assert reader.get(f"/api/v1/runs/{run['id']}").status_code == 200
    assert_problem(reader.post("/api/v1/runs", json={"name": "r", "project_id": project["id"]}), 403)
    assert_problem(reader.patch(f"/api/v1/runs/{run['id']}", json={"status": "COMPLETED"}), 403)


def test_list_filters_and_pages(tenant: Tenant, other_tenant: Tenant) -> None:
    alpha, beta = tenant.create_project("Alpha"), tenant.create_project("Beta")
    runs = [new_run(tenant, alpha if i % 2 else beta, name=f"run {i}") for i in range(7)]
    for run in runs[:3]:
        tenant.api.patch(f"/api/v1/runs/{run['id']}", json={"status": "COMPLETED"})
    new_run(other_tenant, other_tenant.create_project())
    names = [r["name"] for r in runs]

    def page(**params: Any) -> dict[str, Any]:
        response = tenant.client("read").get("/api/v1/runs", params=params)
        assert response.status_code == 200, response.text
        return response.json()

    assert [r["name"] for r in page()["data"]] == names
    assert page()["pagination"] == {"total": 7, "limit": 100, "offset": 0}
    assert [r["name"] for r in page(limit=2, offset=3)["data"]] == names[3:5]
    assert page(limit=1000)["pagination"]["limit"] == 500
    assert [r["name"] for r in page(project_id=alpha["id"])["data"]] == names[1::2]
    assert [r["name"] for r in page(status="COMPLETED")["data"]] == names[:3]
    assert [r["name"] for r in page(status="PENDING", project_id=beta["id"])["data"]] == [names[4], names[6]]
    assert page(status="SYNCED")["data"] == []
    for params in ({"limit": 0}, {"offset": -1}, {"status": "done"}, {"limit": "x"}):
        assert_problem(tenant.api.get("/api/v1/runs", params=params), 400)
