"""Planning over the public API: projects (get, edit, archive), milestones, test plans, and the runs
that belong to them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Tenant, assert_problem, connect_db
from tests.test_cases import new_case

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)

ZERO = {"total": 0, "passed": 0, "failed": 0, "broken": 0, "skipped": 0, "unknown": 0}


def audit_of(tenant: Tenant, action: str) -> list[dict[str, Any]]:
    with connect_db(tenant.server.db_path) as conn:
        rows = conn.execute(
            "SELECT entity_id, actor_type, changes FROM audit_log WHERE tenant_id = ? AND action = ? ORDER BY rowid",
            (tenant.id, action),
        ).fetchall()
    return [{"entity_id": e, "actor_type": a, "changes": json.loads(c) if c else None} for e, a, c in rows]


def new_milestone(tenant: Tenant, project: dict[str, Any], **fields: Any) -> dict[str, Any]:
    response = tenant.api.post("/api/v1/milestones", json={"project_id": project["id"], "name": "1.0", **fields})
    assert response.status_code == 201, response.text
    return response.json()["data"]


def new_plan(tenant: Tenant, project: dict[str, Any], **fields: Any) -> dict[str, Any]:
    response = tenant.api.post("/api/v1/plans", json={"project_id": project["id"], "name": "Release", **fields})
    assert response.status_code == 201, response.text
    return response.json()["data"]


# --- projects -------------------------------------------------------------------------------------

def test_get_and_patch_a_project(tenant: Tenant) -> None:
    project = tenant.create_project("Shop", environments=["staging"])
    got = tenant.client("read").get(f"/api/v1/projects/{project['id']}")
    assert got.status_code == 200 and got.json() == {"data": project}
    assert project["archived"] is False and project["archived_at"] is None

    response = tenant.api.patch(f"/api/v1/projects/{project['id']}", json={
        "name": " Web shop ", "description": "The storefront", "environments": ["staging", " prod ", "staging"]})
    assert response.status_code == 200, response.text
    changed = response.json()["data"]
    assert (changed["name"], changed["description"], changed["environments"]) == (
        "Web shop", "The storefront", ["staging", "prod"])
    assert changed["updated_at"] > project["updated_at"]
    [entry] = audit_of(tenant, "project.updated")
    assert entry["entity_id"] == project["id"] and entry["actor_type"] == "token"
    assert entry["changes"]["name"] == ["Shop", "Web shop"]
    assert entry["changes"]["environments"] == [["staging"], ["staging", "prod"]]
    assert set(entry["changes"]) == {"name", "description", "environments"}


@pytest.mark.parametrize(("body", "field"), [
    ({"name": ""}, "name"),
    ({"name": "   "}, "name"),
    ({"archived": "yes"}, "archived"),
    ({"environments": "staging"}, "environments"),
    ({"active": True}, None),  # not a field of the body: activation is web-only
])
def test_bad_project_patches_are_400(tenant: Tenant, body: dict[str, Any], field: str | None) -> None:
    project = tenant.create_project()
    problem = assert_problem(tenant.api.patch(f"/api/v1/projects/{project['id']}", json=body), 400)
    if field:
        assert field in json.dumps(problem)


def test_patch_needs_write_scope(tenant: Tenant) -> None:
    project = tenant.create_project()
    assert_problem(tenant.client("read").patch(f"/api/v1/projects/{project['id']}", json={"name": "x"}), 403)


def test_an_archived_project_refuses_new_runs_ingests_and_plans_with_409(tenant: Tenant) -> None:
    project = tenant.create_project()
    case = new_case(tenant, project_id=project["id"], tags=["smoke"])
    archived = tenant.api.patch(f"/api/v1/projects/{project['id']}", json={"archived": True}).json()["data"]
    assert archived["archived"] is True and archived["archived_at"]
    assert [e["changes"] for e in audit_of(tenant, "project.archived")] == [{"archived": [False, True]}]

    run = assert_problem(tenant.api.post("/api/v1/runs", json={"name": "r", "project_id": project["id"]}), 409)
    assert "archived" in run["detail"]
    ingest = tenant.api.post("/api/v1/ingest", json={"project_id": project["id"],
                                                     "results": [{"test_case_code": case["code"], "status": "PASSED"}]})
    assert "archived" in assert_problem(ingest, 409)["detail"]
    plan = tenant.api.post("/api/v1/plans", json={"project_id": project["id"], "name": "p", "tags": ["smoke"]})
    assert_problem(plan, 409)
    assert tenant.api.get("/api/v1/runs", params={"project_id": project["id"]}).json()["pagination"]["total"] == 0
    # the API still lists it (flagged); reading is unaffected
    listed = {p["id"]: p for p in tenant.api.get("/api/v1/projects").json()["data"]}
    assert listed[project["id"]]["archived"] is True

    reopened = tenant.api.patch(f"/api/v1/projects/{project['id']}", json={"archived": False}).json()["data"]
    assert reopened["archived"] is False and reopened["archived_at"] is None
    assert len(audit_of(tenant, "project.unarchived")) == 1
    assert tenant.api.post("/api/v1/runs", json={"name": "r", "project_id": project["id"]}).status_code == 201


# --- milestones -----------------------------------------------------------------------------------

def test_milestone_lifecycle_with_counts_from_its_runs(tenant: Tenant) -> None:
    project = tenant.create_project()
    case_a, case_b = new_case(tenant, project_id=project["id"]), new_case(tenant, project_id=project["id"])
    milestone = new_milestone(tenant, project, description="First release", due_on="2026-12-24")
    assert {k: milestone[k] for k in ("project_id", "name", "description", "due_on", "status", "completed_at")} == {
        "project_id": project["id"], "name": "1.0", "description": "First release", "due_on": "2026-12-24",
        "status": "OPEN", "completed_at": None}
    assert milestone["counts"] == ZERO and milestone["runs_count"] == 0
    assert milestone["id"] and milestone["created_at"] == milestone["updated_at"]

    run = tenant.api.post("/api/v1/runs", json={"name": "r1", "project_id": project["id"],
                                                "milestone_id": milestone["id"]}).json()["data"]
    assert run["milestone_id"] == milestone["id"] and run["plan_id"] is None
    posted = tenant.api.post(f"/api/v1/runs/{run['id']}/results", json={"results": [
        {"test_case_code": case_a["code"], "status": "PASSED"},
        {"test_case_code": case_b["code"], "status": "FAILED"}]})
    assert posted.status_code == 201, posted.text
    other = tenant.api.post("/api/v1/runs", json={"name": "r2", "project_id": project["id"]}).json()["data"]
    tenant.api.post(f"/api/v1/runs/{other['id']}/results", json={"results": [
        {"test_case_code": case_a["code"], "status": "SKIPPED"}]})
    # a run joins the milestone later through PATCH
    patched = tenant.api.patch(f"/api/v1/runs/{other['id']}", json={"milestone_id": milestone["id"]})
    assert patched.status_code == 200 and patched.json()["data"]["milestone_id"] == milestone["id"]

    got = tenant.client("read").get(f"/api/v1/milestones/{milestone['id']}").json()["data"]
    assert got["runs_count"] == 2
    assert got["counts"] == {"total": 3, "passed": 1, "failed": 1, "broken": 0, "skipped": 1, "unknown": 0}
    listed = tenant.api.get("/api/v1/runs", params={"milestone_id": milestone["id"]}).json()
    assert {r["id"] for r in listed["data"]} == {run["id"], other["id"]} and listed["pagination"]["total"] == 2

    done = tenant.api.patch(f"/api/v1/milestones/{milestone['id']}", json={"status": "COMPLETED", "due_on": None})
    assert done.status_code == 200, done.text
    assert done.json()["data"]["status"] == "COMPLETED" and done.json()["data"]["completed_at"]
    assert done.json()["data"]["due_on"] is None
    reopened = tenant.api.patch(f"/api/v1/milestones/{milestone['id']}", json={"status": "OPEN"}).json()["data"]
    assert reopened["completed_at"] is None

    assert tenant.api.delete(f"/api/v1/milestones/{milestone['id']}").status_code == 204
    assert_problem(tenant.api.get(f"/api/v1/milestones/{milestone['id']}"), 404)
    kept = tenant.api.get(f"/api/v1/runs/{run['id']}").json()["data"]
    assert kept["milestone_id"] is None and kept["counts"]["total"] == 2
    assert [e["changes"]["runs_unlinked"] for e in audit_of(tenant, "milestone.deleted")] == [2]
    assert len(audit_of(tenant, "milestone.created")) == 1
    assert [set(e["changes"]) for e in audit_of(tenant, "milestone.updated")] == [{"status", "due_on"}, {"status"}]


def test_milestone_list_is_paginated_and_filtered(tenant: Tenant) -> None:
    one, two = tenant.create_project("One"), tenant.create_project("Two")
    first = new_milestone(tenant, one, name="a")
    new_milestone(tenant, one, name="b")
    new_milestone(tenant, two, name="c")
    tenant.api.patch(f"/api/v1/milestones/{first['id']}", json={"status": "COMPLETED"})
    page = tenant.api.get("/api/v1/milestones", params={"project_id": one["id"], "limit": 1}).json()
    assert page["pagination"] == {"total": 2, "limit": 1, "offset": 0} and page["data"][0]["name"] == "a"
    assert [m["name"] for m in tenant.api.get("/api/v1/milestones", params={"status": "OPEN"}).json()["data"]] == [
        "b", "c"]
    assert_problem(tenant.api.get("/api/v1/milestones", params={"status": "DONE"}), 400)


@pytest.mark.parametrize(("body", "field"), [
    ({"name": "x", "due_on": "2026-02-30"}, "due_on"),
    ({"name": "x", "due_on": "next week"}, "due_on"),
    ({"name": ""}, "name"),
    ({"name": "x", "status": "OPEN"}, "status"),  # status is PATCH-only
    ({"name": "x", "colour": "red"}, "colour"),
])
def test_bad_milestones_are_400_naming_the_field(tenant: Tenant, body: dict[str, Any], field: str) -> None:
    project = tenant.create_project()
    problem = assert_problem(tenant.api.post("/api/v1/milestones", json={"project_id": project["id"], **body}), 400)
    assert field in json.dumps(problem)


def test_milestone_references_are_checked(tenant: Tenant, other_tenant: Tenant) -> None:
    project, elsewhere = tenant.create_project("A"), tenant.create_project("B")
    assert_problem(tenant.api.post("/api/v1/milestones", json={"project_id": "nope", "name": "x"}), 404)
    foreign_project = other_tenant.create_project()
    assert_problem(tenant.api.post("/api/v1/milestones", json={"project_id": foreign_project["id"], "name": "x"}), 404)
    theirs = new_milestone(tenant, elsewhere)
    problem = assert_problem(tenant.api.post("/api/v1/runs", json={
        "name": "r", "project_id": project["id"], "milestone_id": theirs["id"]}), 400)
    assert problem["errors"][0]["field"] == "milestone_id"
    foreign = new_milestone(other_tenant, foreign_project)
    assert_problem(tenant.api.post("/api/v1/runs", json={
        "name": "r", "project_id": project["id"], "milestone_id": foreign["id"]}), 404)
    assert_problem(tenant.api.patch(f"/api/v1/milestones/{project['id']}", json={"status": "DONE"}), 400)


# --- plans ----------------------------------------------------------------------------------------

def test_plan_selects_the_union_and_starts_one_prepopulated_run_per_environment(tenant: Tenant) -> None:
    project = tenant.create_project(environments=["staging", "prod"])
    other_project = tenant.create_project("Other")
    listed = new_case(tenant, project_id=project["id"], title="Listed by code")
    by_id = new_case(tenant, project_id=project["id"], title="Listed by id", tags=["smoke"])
    smoke = new_case(tenant, project_id=project["id"], title="Smoke", tags=["smoke", "ui"])
    api_tag = new_case(tenant, project_id=project["id"], title="Api", tags=["api"])
    new_case(tenant, project_id=project["id"], title="Not chosen", tags=["slow"])
    new_case(tenant, project_id=other_project["id"], title="Other project", tags=["smoke"])
    milestone = new_milestone(tenant, project)

    plan = new_plan(tenant, project, description="Go/no-go", milestone_id=milestone["id"],
                    case_ids=[listed["code"], by_id["id"], listed["id"]], tags=["smoke", "api"],
                    environments=["staging", "prod"])
    assert {k: plan[k] for k in ("project_id", "milestone_id", "name", "description", "case_count")} == {
        "project_id": project["id"], "milestone_id": milestone["id"], "name": "Release",
        "description": "Go/no-go", "case_count": 4}
    assert plan["counts"] == {**ZERO, "total": 8, "unknown": 8}
    assert plan["selection"] == {"case_ids": [listed["code"], by_id["id"], listed["id"]], "section_ids": [],
                                 "tags": ["smoke", "api"], "environments": ["staging", "prod"]}
    assert len(plan["run_ids"]) == 2
    runs = [tenant.api.get(f"/api/v1/runs/{run_id}").json()["data"] for run_id in plan["run_ids"]]
    assert [(r["environment"], r["status"], r["plan_id"], r["milestone_id"]) for r in runs] == [
        ("staging", "PENDING", plan["id"], milestone["id"]), ("prod", "PENDING", plan["id"], milestone["id"])]
    assert [r["name"] for r in runs] == ["Release · staging", "Release · prod"]
    for run in runs:
        assert run["counts"] == {**ZERO, "total": 4, "unknown": 4}
        results = tenant.api.get(f"/api/v1/runs/{run['id']}/results").json()["data"]
        assert [(r["test_case_code"], r["status"]) for r in results] == [
            (c["code"], "UNKNOWN") for c in (listed, by_id, smoke, api_tag)]

    # results arrive: the plan's and the milestone's progress move, from the run summaries
    staging = runs[0]["id"]
    tenant.api.post(f"/api/v1/runs/{staging}/results", json={"results": [
        {"test_case_code": listed["code"], "status": "PASSED"}, {"test_case_code": smoke["code"], "status": "FAILED"}]})
    got = tenant.api.get(f"/api/v1/plans/{plan['id']}").json()["data"]
    assert got["counts"] == {"total": 8, "passed": 1, "failed": 1, "broken": 0, "skipped": 0, "unknown": 6}
    assert tenant.api.get(f"/api/v1/runs/{staging}").json()["data"]["status"] == "IN_PROGRESS"
    progress = tenant.api.get(f"/api/v1/milestones/{milestone['id']}").json()["data"]
    assert progress["runs_count"] == 2 and progress["counts"] == got["counts"]
    assert tenant.api.get("/api/v1/runs", params={"plan_id": plan["id"]}).json()["pagination"]["total"] == 2

    [entry] = audit_of(tenant, "plan.created")
    assert entry["entity_id"] == plan["id"]
    assert {k: entry["changes"][k] for k in ("cases", "runs", "results")} == {"cases": 4, "runs": 2, "results": 8}


def test_a_plan_without_environments_starts_one_run_without_one(tenant: Tenant) -> None:
    project = tenant.create_project()
    case = new_case(tenant, project_id=project["id"])
    plan = new_plan(tenant, project, case_ids=[case["code"]])
    [run_id] = plan["run_ids"]
    run = tenant.api.get(f"/api/v1/runs/{run_id}").json()["data"]
    assert (run["name"], run["environment"], run["milestone_id"]) == ("Release", None, None)
    assert plan["counts"]["unknown"] == 1


def test_plan_patch_list_and_delete_keeping_the_runs(tenant: Tenant) -> None:
    project = tenant.create_project()
    case = new_case(tenant, project_id=project["id"])
    plan = new_plan(tenant, project, case_ids=[case["code"]], environments=["a", "b"])
    second = new_plan(tenant, project, name="Second", case_ids=[case["code"]])
    milestone = new_milestone(tenant, project)

    patched = tenant.api.patch(f"/api/v1/plans/{plan['id']}", json={
        "name": "Renamed", "description": "d", "milestone_id": milestone["id"]})
    assert patched.status_code == 200, patched.text
    data = patched.json()["data"]
    assert (data["name"], data["description"], data["milestone_id"]) == ("Renamed", "d", milestone["id"])
    # the plan's runs follow it into the milestone
    assert tenant.api.get(f"/api/v1/milestones/{milestone['id']}").json()["data"]["runs_count"] == 2
    assert set(audit_of(tenant, "plan.updated")[0]["changes"]) == {"name", "description", "milestone_id"}

    page = tenant.api.get("/api/v1/plans", params={"project_id": project["id"], "limit": 1, "offset": 1}).json()
    assert page["pagination"] == {"total": 2, "limit": 1, "offset": 1}
    assert [p["id"] for p in page["data"]] == [second["id"]] and page["data"][0]["run_ids"] == second["run_ids"]
    by_milestone = tenant.api.get("/api/v1/plans", params={"milestone_id": milestone["id"]}).json()["data"]
    assert [p["id"] for p in by_milestone] == [plan["id"]]

    assert tenant.api.delete(f"/api/v1/plans/{plan['id']}").status_code == 204
    assert_problem(tenant.api.get(f"/api/v1/plans/{plan['id']}"), 404)
    for run_id in plan["run_ids"]:
        run = tenant.api.get(f"/api/v1/runs/{run_id}").json()["data"]
        assert run["plan_id"] is None and run["counts"]["total"] == 1
    assert audit_of(tenant, "plan.deleted")[0]["changes"]["runs_kept"] == 2


@pytest.mark.parametrize(("fields", "status", "field"), [
    ({}, 400, "case_ids"),
    ({"case_ids": ["NOPE-1"]}, 400, "case_ids"),
    ({"tags": ["no-such-tag"]}, 400, "tags"),
    ({"case_ids": "TC-1"}, 400, "case_ids"),
    ({"tags": ["smoke"], "environments": [""]}, 400, "environments"),
    ({"tags": ["smoke"], "run_ids": []}, 400, "run_ids"),
    ({"tags": ["smoke"], "milestone_id": "nope"}, 404, "milestone_id"),
    ({"tags": ["smoke"], "name": "  "}, 400, "name"),
])
def test_bad_plans_are_refused_naming_the_field(tenant: Tenant, fields: dict[str, Any], status: int,
                                                field: str) -> None:
    project = tenant.create_project()
    new_case(tenant, project_id=project["id"], tags=["smoke"])
    body = {"project_id": project["id"], "name": "Plan", **fields}
    problem = assert_problem(tenant.api.post("/api/v1/plans", json=body), status)
    assert field in json.dumps(problem)
    assert tenant.api.get("/api/v1/runs").json()["pagination"]["total"] == 0
    assert tenant.api.get("/api/v1/plans").json()["pagination"]["total"] == 0


def test_plan_cases_must_be_of_its_project_and_tenant(tenant: Tenant, other_tenant: Tenant) -> None:
    project, other = tenant.create_project("A"), tenant.create_project("B")
    elsewhere = new_case(tenant, project_id=other["id"])
    problem = assert_problem(tenant.api.post("/api/v1/plans", json={
        "project_id": project["id"], "name": "p", "case_ids": [elsewhere["code"]]}), 400)
    assert "another project" in problem["detail"] and elsewhere["code"] in problem["detail"]
    foreign = new_case(other_tenant, project_id=other_tenant.create_project()["id"])
    problem = assert_problem(tenant.api.post("/api/v1/plans", json={
        "project_id": project["id"], "name": "p", "case_ids": [foreign["id"]]}), 400)
    assert foreign["id"] in problem["detail"]
    assert_problem(tenant.api.post("/api/v1/plans", json={"project_id": "nope", "name": "p", "tags": ["x"]}), 404)


def test_unknown_section_ids_are_400_naming_them(tenant: Tenant) -> None:
    project = tenant.create_project()
    new_case(tenant, project_id=project["id"], tags=["smoke"])
    body = {"project_id": project["id"], "name": "p", "section_ids": ["no-such-section"], "tags": ["smoke"]}
    problem = assert_problem(tenant.api.post("/api/v1/plans", json=body), 400)
    assert problem["errors"][0]["field"] == "section_ids" and "no-such-section" in problem["detail"]
    assert tenant.api.get("/api/v1/plans").json()["data"] == []


def test_section_ids_select_the_sections_with_their_subsections(tenant: Tenant) -> None:
    """A section brings every case of its subtree."""
    project, other = tenant.create_project(), tenant.create_project("Other")

    def section(name: str, parent: str | None = None, project_id: str = project["id"]) -> str:
        response = tenant.api.post("/api/v1/sections", json={"project_id": project_id, "name": name,
                                                             "parent_id": parent})
        assert response.status_code == 201, response.text
        return response.json()["data"]["id"]

    checkout = section("Checkout")
    cards = section("Cards", checkout)
    deep = section("3-D Secure", cards)
    account = section("Account")
    elsewhere = section("Elsewhere", project_id=other["id"])
    in_checkout = new_case(tenant, project_id=project["id"], section_id=checkout, title="In checkout")
    in_deep = new_case(tenant, project_id=project["id"], section_id=deep, title="Deep down")
    in_account = new_case(tenant, project_id=project["id"], section_id=account, title="Account", tags=["smoke"])
    new_case(tenant, project_id=project["id"], title="Unfiled")

    plan = new_plan(tenant, project, section_ids=[checkout], tags=["smoke"])
    assert plan["case_count"] == 3 and plan["selection"]["section_ids"] == [checkout]
    results = tenant.api.get(f"/api/v1/runs/{plan['run_ids'][0]}/results").json()["data"]
    assert [r["test_case_code"] for r in results] == [c["code"] for c in (in_checkout, in_deep, in_account)]

    only_cards = new_plan(tenant, project, section_ids=[cards])
    assert only_cards["case_count"] == 1
    problem = assert_problem(tenant.api.post("/api/v1/plans", json={
        "project_id": project["id"], "name": "p", "section_ids": [elsewhere]}), 400)
    assert problem["errors"][0]["field"] == "section_ids" and elsewhere in problem["detail"]
    empty = section("Empty")
    assert_problem(tenant.api.post("/api/v1/plans", json={
        "project_id": project["id"], "name": "p", "section_ids": [empty]}), 400)
