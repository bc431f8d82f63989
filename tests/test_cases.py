"""Test cases over the public API: defaults, codes, Gherkin, filters, pagination, isolation, bad input."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.conftest import Tenant, assert_problem

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)

FEATURE = (
    "Feature: Login\n  Scenario: valid password\n    Given a user\n    When she signs in\n    Then she sees home\n"
)


def new_case(tenant: Tenant, **fields: Any) -> dict[str, Any]:
    response = tenant.api.post("/api/v1/cases", json={"title": "Login works", "bdd_content": FEATURE, **fields})
    assert response.status_code == 201, response.text
    return response.json()["data"]


def test_create_applies_every_contract_default(tenant: Tenant) -> None:
    case = new_case(tenant)
    assert case["code"] == "TC-1"
    assert case["id"].startswith("c") and len(case["id"]) == 25
    assert {k: case[k] for k in ("status", "priority", "layer", "is_e2e", "automation_status", "tags", "tickets",
                                 "project_id")} == {
        "status": "DRAFT", "priority": "MEDIUM", "layer": None, "is_e2e": False, "automation_status": "MANUAL",
        "tags": [], "tickets": [], "project_id": None,
    }
    assert case["title"] == "Login works" and case["bdd_content"] == FEATURE
    assert case["created_at"].endswith("Z") and case["updated_at"] == case["created_at"]


def test_create_with_every_field(tenant: Tenant) -> None:
    project = tenant.create_project()
    case = new_case(
        tenant, project_id=project["id"], code="LOGIN-7", status="READY", priority="CRITICAL", layer="API",
        is_e2e=True, automation_status="AUTOMATED", tags=["smoke", "auth"],
        tickets=[{"key": "PROJ-1", "source": "JIRA"}, {"key": "42", "source": "GITHUB"}],
    )
    assert case["code"] == "LOGIN-7" and case["project_id"] == project["id"]
    assert (case["status"], case["priority"], case["layer"], case["is_e2e"], case["automation_status"]) == (
        "READY", "CRITICAL", "API", True, "AUTOMATED")
    assert case["tags"] == ["smoke", "auth"]
    assert case["tickets"] == [{"key": "PROJ-1", "source": "JIRA"}, {"key": "42", "source": "GITHUB"}]
    projects = tenant.api.get("/api/v1/projects").json()["data"]
    assert projects[0]["test_cases_count"] == 1
    # the same object comes back from get by code and by id
    assert tenant.client("read").get("/api/v1/cases/LOGIN-7").json() == {"data": case}
    assert tenant.client("read").get(f"/api/v1/cases/{case['id']}").json() == {"data": case}


def test_server_codes_count_up_and_skip_client_codes(tenant: Tenant) -> None:
    assert new_case(tenant)["code"] == "TC-1"
    assert new_case(tenant, code="TC-2")["code"] == "TC-2"
    assert new_case(tenant)["code"] == "TC-3"  # TC-2 is taken by the client, so the counter skips it
    deleted = new_case(tenant)
    assert deleted["code"] == "TC-4"
    assert tenant.api.delete(f"/api/v1/cases/{deleted['id']}").status_code == 204
    assert new_case(tenant)["code"] == "TC-5"  # numbers are never reused


def test_codes_are_per_tenant_and_duplicates_conflict(tenant: Tenant, other_tenant: Tenant) -> None:
    new_case(tenant, code="PAY-1")
    assert new_case(other_tenant, code="PAY-1")["code"] == "PAY-1"
    assert new_case(other_tenant)["code"] == "TC-1"
    body = {"title": "again", "bdd_content": FEATURE, "code": "PAY-1"}
    assert_problem(tenant.api.post("/api/v1/cases", json=body), 409)
    other = new_case(tenant, code="PAY-2")
    assert_problem(tenant.api.patch(f"/api/v1/cases/{other['id']}", json={"code": "PAY-1"}), 409)


@pytest.mark.parametrize("code", ["pay-1", "PAY1", "PAY-", "-1", "1PAY-1", "PAY-1a", "PA Y-1", "PAY_X-1"])
def test_malformed_codes_are_400(tenant: Tenant, code: str) -> None:
    problem = assert_problem(tenant.api.post("/api/v1/cases", json={"title": "t", "bdd_content": FEATURE,
                                                                     "code": code}), 400)
    assert "code" in problem["detail"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"bdd_content": FEATURE}, "title"),
        ({"title": "t"}, "bdd_content"),
        ({"title": "", "bdd_content": FEATURE}, "title"),
        ({"title": "   ", "bdd_content": FEATURE}, "title"),
        ({"title": 5, "bdd_content": FEATURE}, "title"),
        ({"title": "t", "bdd_content": ""}, "bdd_content"),
        ({"title": "t", "bdd_content": FEATURE, "status": "draft"}, "status"),
        ({"title": "t", "bdd_content": FEATURE, "status": "ACTIVE"}, "status"),
        ({"title": "t", "bdd_content": FEATURE, "priority": "URGENT"}, "priority"),
        ({"title": "t", "bdd_content": FEATURE, "layer": "E2E"}, "layer"),
        ({"title": "t", "bdd_content": FEATURE, "automation_status": "auto"}, "automation_status"),
        ({"title": "t", "bdd_content": FEATURE, "is_e2e": "yes"}, "is_e2e"),
        ({"title": "t", "bdd_content": FEATURE, "tags": "smoke"}, "tags"),
        ({"title": "t", "bdd_content": FEATURE, "tags": [1]}, "tags"),
        ({"title": "t", "bdd_content": FEATURE, "tickets": [{"key": "A-1", "source": "JIRA2"}]}, "tickets"),
        ({"title": "t", "bdd_content": FEATURE, "tickets": [{"key": "A-1"}]}, "tickets"),
        ({"title": "t", "bdd_content": FEATURE, "tickets": [{"key": "A-1", "source": "JIRA", "x": 1}]}, "tickets"),
        ({"title": "t", "bdd_content": FEATURE, "id": "cabc"}, "id"),
        ({"title": "t", "bdd_content": FEATURE, "created_at": "2020-01-01T00:00:00Z"}, "created_at"),
        ({"title": "t", "bdd_content": FEATURE, "tenant_id": "x"}, "tenant_id"),
    ],
)
def test_invalid_create_bodies_are_400_naming_the_field(tenant: Tenant, body: dict, field: str) -> None:
    problem = assert_problem(tenant.api.post("/api/v1/cases", json=body), 400)
    assert field in problem["detail"] or any(field in e["field"] for e in problem.get("errors", []))
    assert tenant.api.get("/api/v1/cases").json()["pagination"]["total"] == 0


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("Feature: x\n  Scenario: y\n    Given z\n  Nonsense here\n", 4),
        ("Given a step without a feature\n", 1),
        ("Feature: x\n  Scenario: y\n    Given z\n    | a | b |\n    | 1 |\n", 5),
    ],
)
def test_invalid_gherkin_is_400_naming_the_line(tenant: Tenant, text: str, line: int) -> None:
    problem = assert_problem(tenant.api.post("/api/v1/cases", json={"title": "t", "bdd_content": text}), 400)
    assert f"line {line}" in problem["detail"]
    assert problem["errors"][0]["field"] == "bdd_content"
    case = new_case(tenant)
    problem = assert_problem(tenant.api.patch(f"/api/v1/cases/{case['id']}", json={"bdd_content": text}), 400)
    assert f"line {line}" in problem["detail"]


def test_gherkin_without_a_feature_is_400(tenant: Tenant) -> None:
    problem = assert_problem(tenant.api.post("/api/v1/cases", json={"title": "t", "bdd_content": "# only\n"}), 400)
    assert "Feature" in problem["detail"]


@pytest.mark.parametrize("content", [b"{", b"not json", b"", b"[]", b"null", b'{"title": "t",}'])
def test_malformed_json_is_400(tenant: Tenant, content: bytes) -> None:
    response = tenant.api.post("/api/v1/cases", content=content, headers={"Content-Type": "application/json"})
    assert_problem(response, 400)


def test_unknown_project_is_404_and_nothing_is_written(tenant: Tenant, other_tenant: Tenant) -> None:
    foreign = other_tenant.create_project()
    for project_id in ("cnotthere000000000000000000", foreign["id"]):
        body = {"title": "t", "bdd_content": FEATURE, "project_id": project_id}
        problem = assert_problem(tenant.api.post("/api/v1/cases", json=body), 404)
        assert "project" in problem["detail"]
    assert tenant.api.get("/api/v1/cases").json()["pagination"]["total"] == 0
    case = new_case(tenant)
    assert_problem(tenant.api.patch(f"/api/v1/cases/{case['id']}", json={"project_id": foreign["id"]}), 404)
    # the failed create reserved no TC number either: the transaction rolled back
    assert case["code"] == "TC-1"


def test_patch_changes_only_given_fields_and_moves_updated_at(tenant: Tenant) -> None:
    project = tenant.create_project()
    case = new_case(tenant, layer="UI", tags=["a"])
    time.sleep(0.005)  # timestamps have millisecond resolution
    response = tenant.api.patch(f"/api/v1/cases/{case['code']}", json={"status": "READY",
                                                                         "automation_status": "FLAKY"})
    assert response.status_code == 200
    patched = response.json()["data"]
    assert patched["status"] == "READY" and patched["automation_status"] == "FLAKY"
    assert patched["updated_at"] > case["updated_at"] and patched["created_at"] == case["created_at"]
    changed = ("status", "automation_status", "updated_at", "version")
    assert {k: v for k, v in patched.items() if k not in changed} == {
        k: v for k, v in case.items() if k not in changed}
    assert (case["version"], patched["version"]) == (1, 2)
    every = {"title": "New", "bdd_content": FEATURE.replace("Login", "Logout"), "project_id": project["id"],
             "code": "NEW-1", "priority": "LOW", "layer": None, "is_e2e": True, "tags": ["x", "y"],
             "tickets": [{"key": "L-1", "source": "LINEAR"}]}
    patched = tenant.api.patch(f"/api/v1/cases/{case['id']}", json=every).json()["data"]
    assert {k: patched[k] for k in every} == every
    assert tenant.api.get("/api/v1/cases/NEW-1").json()["data"] == patched
    assert_problem(tenant.api.get(f"/api/v1/cases/{case['code']}"), 404)
    assert tenant.api.patch("/api/v1/cases/NEW-1", json={}).json()["data"] == patched


@pytest.mark.parametrize(
    "body",
    [{"title": None}, {"title": ""}, {"status": "ready"}, {"status": None}, {"code": "bad"}, {"is_e2e": "maybe"},
     {"bogus": 1}, {"id": "c1"}, {"tags": None}, {"bdd_content": None}],
)
def test_invalid_patch_bodies_are_400(tenant: Tenant, body: dict) -> None:
    case = new_case(tenant)
    assert_problem(tenant.api.patch(f"/api/v1/cases/{case['id']}", json=body), 400)
    assert tenant.api.get(f"/api/v1/cases/{case['id']}").json()["data"] == case


def test_delete_then_gone(tenant: Tenant) -> None:
    case = new_case(tenant, code="DEL-1")
    assert tenant.api.delete("/api/v1/cases/DEL-1").status_code == 204
    assert_problem(tenant.api.get(f"/api/v1/cases/{case['id']}"), 404)
    assert_problem(tenant.api.delete("/api/v1/cases/DEL-1"), 404)
    assert new_case(tenant, code="DEL-1")["id"] != case["id"]  # a code is free again after delete


def test_other_tenants_case_is_404_on_every_route(tenant: Tenant, other_tenant: Tenant) -> None:
    case = new_case(other_tenant, code="SECRET-1")
    for ref in (case["id"], case["code"], "cmissing00000000000000000", "NOPE-1"):
        assert_problem(tenant.api.get(f"/api/v1/cases/{ref}"), 404)
        assert_problem(tenant.api.patch(f"/api/v1/cases/{ref}", json={"status": "READY"}), 404)
        assert_problem(tenant.api.delete(f"/api/v1/cases/{ref}"), 404)
    assert tenant.api.get("/api/v1/cases").json()["data"] == []
    assert other_tenant.api.get(f"/api/v1/cases/{case['id']}").json()["data"] == case


def test_scopes(tenant: Tenant) -> None:
    reader = tenant.client("read")
    case = new_case(tenant)
    assert reader.get("/api/v1/cases").status_code == 200
    assert_problem(reader.post("/api/v1/cases", json={"title": "t", "bdd_content": FEATURE}), 403)
    assert_problem(reader.patch(f"/api/v1/cases/{case['id']}", json={"status": "READY"}), 403)
    assert_problem(reader.delete(f"/api/v1/cases/{case['id']}"), 403)


def test_list_filters_pagination_and_clamp(tenant: Tenant) -> None:
    alpha, beta = tenant.create_project("Alpha"), tenant.create_project("Beta")
    made = []
    for i in range(12):
        made.append(new_case(tenant, title=f"case {i}", project_id=(alpha if i % 2 else beta)["id"],
                             status="READY" if i % 3 == 0 else "DRAFT"))
    codes = [c["code"] for c in made]
    reader = tenant.client("read")

    def page(**params: Any) -> dict[str, Any]:
        response = reader.get("/api/v1/cases", params=params)
        assert response.status_code == 200, response.text
        return response.json()

    everything = page()
    assert [c["code"] for c in everything["data"]] == codes
    assert everything["pagination"] == {"total": 12, "limit": 100, "offset": 0}
    assert everything["data"][0] == made[0]
    assert [c["code"] for c in page(limit=5, offset=5)["data"]] == codes[5:10]
    assert page(limit=5, offset=5)["pagination"] == {"total": 12, "limit": 5, "offset": 5}
    assert page(offset=50)["data"] == []
    assert page(limit=501)["pagination"]["limit"] == 500
    assert page(limit=10**6)["pagination"]["limit"] == 500
    for params, expected in [
        ({"project_id": alpha["id"]}, [c for i, c in enumerate(codes) if i % 2]),
        ({"status": "READY"}, [c for i, c in enumerate(codes) if i % 3 == 0]),
        ({"status": "DEPRECATED"}, []),
        ({"project_id": alpha["id"], "status": "READY"}, [c for i, c in enumerate(codes) if i % 2 and i % 3 == 0]),
        ({"project_id": "cunknown"}, []),
        ({"project_id": beta["id"], "limit": 2, "offset": 1}, [c for i, c in enumerate(codes) if not i % 2][1:3]),
    ]:
        body = page(**params)
        assert [c["code"] for c in body["data"]] == expected, params
    assert page(project_id=beta["id"], limit=2)["pagination"]["total"] == 6


@pytest.mark.parametrize(
    "params",
    [{"limit": 0}, {"limit": -1}, {"offset": -1}, {"limit": "ten"}, {"offset": "x"}, {"status": "draft"},
     {"status": "ACTIVE"}],
)
def test_bad_list_parameters_are_400(tenant: Tenant, params: dict) -> None:
    assert_problem(tenant.api.get("/api/v1/cases", params=params), 400)


def test_services_create_cases_in_one_transaction(tenant: Tenant) -> None:
    """create_cases (used by AI drafts) writes every case or none."""
    from tms.errors import InvalidInput
    from tms.library.cases import service as case_service

    async def create(db: Any) -> list[Any]:
        made = await case_service.create_cases(db, tenant.id, [
            {"title": "one", "bdd_content": FEATURE}, {"title": "two", "bdd_content": FEATURE, "code": "AI-1"}])
        with pytest.raises(InvalidInput, match=r"cases\[1\].*line 1"):
            await case_service.create_cases(db, tenant.id, [
                {"title": "ok", "bdd_content": FEATURE}, {"title": "bad", "bdd_content": "Given x"}])
        return made

    made = tenant.server.run_admin(create)
    assert [c.code for c in made] == ["TC-1", "AI-1"]
    listed = tenant.api.get("/api/v1/cases").json()
    assert [c["code"] for c in listed["data"]] == ["TC-1", "AI-1"]
