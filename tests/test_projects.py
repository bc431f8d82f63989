"""Projects over the public API: create, list, validation, tenant isolation."""

from __future__ import annotations

import pytest

from tests.conftest import Tenant, assert_problem

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)


def test_create_and_list_project(tenant: Tenant) -> None:
    response = tenant.api.post(
        "/api/v1/projects", json={"name": "Checkout", "description": "Web shop", "environments": ["staging", "prod"]}
    )
    assert response.status_code == 201
    project = response.json()["data"]
    assert project["name"] == "Checkout"
    assert project["description"] == "Web shop"
    assert project["active"] is False
    assert project["environments"] == ["staging", "prod"]
    assert project["test_cases_count"] == 0
    assert project["created_at"].endswith("Z") and project["updated_at"] == project["created_at"]
    listed = tenant.client("read").get("/api/v1/projects").json()
    assert listed == {"data": [project]}


def test_projects_of_other_tenant_are_invisible(tenant: Tenant, other_tenant: Tenant) -> None:
    tenant.create_project("Mine")
    assert other_tenant.api.get("/api/v1/projects").json() == {"data": []}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": 123}, "name"),
        ({"name": "x" * 201}, "name"),
        ({"name": "ok", "environments": "prod"}, "environments"),
        ({"name": "ok", "environments": [1]}, "environments"),
        ({"name": "ok", "active": True}, "active"),
        ({"name": "ok", "id": "cxyz"}, "id"),
    ],
)
def test_invalid_project_bodies_are_400_naming_the_field(tenant: Tenant, body, field: str) -> None:
    problem = assert_problem(tenant.api.post("/api/v1/projects", json=body), 400)
    assert field in problem["detail"] or any(field in e["field"] for e in problem.get("errors", []))
    assert tenant.api.get("/api/v1/projects").json() == {"data": []}


def test_blank_name_is_rejected(tenant: Tenant) -> None:
    assert_problem(tenant.api.post("/api/v1/projects", json={"name": "   "}), 400)


@pytest.mark.parametrize(
    "content", [b"{", b"not json", b"", b"[]", b'"name"', b"null"]
)
def test_malformed_json_is_400(tenant: Tenant, content: bytes) -> None:
    response = tenant.api.post(
        "/api/v1/projects", content=content, headers={"Content-Type": "application/json"}
    )
    assert_problem(response, 400)


def test_huge_body_is_413(tenant: Tenant) -> None:
    body = b'{"name": "' + b"x" * (11 * 1024 * 1024) + b'"}'
    response = tenant.api.post("/api/v1/projects", content=body, headers={"Content-Type": "application/json"})
    assert_problem(response, 413)


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/v1/cases", {"title": "x", "bdd_content": "Feature: F\n", "is_e2e": 1}, "is_e2e"),
        ("/api/v1/cases", {"title": "x", "bdd_content": "Feature: F\n", "is_e2e": "true"}, "is_e2e"),
        ("/api/v1/cases", {"title": "x", "bdd_content": "Feature: F\n", "tickets": [{"key": "A-1", "source": 1}]},
         "tickets[0].source"),
        ("/api/v1/projects", {"name": "x", "environments": ["a", 2]}, "environments[1]"),
    ],
)
def test_bodies_are_typed_strictly(tenant: Tenant, path: str, body: dict, field: str) -> None:
    problem = assert_problem(tenant.api.post(path, json=body), 400)
    assert problem["errors"][0]["field"] == field
    assert tenant.api.get("/api/v1/cases").json()["data"] == []
