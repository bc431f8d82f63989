"""Custom fields (issue 26): definitions per project, their values on cases, filters, versions, CSV and
TestRail import. Both databases."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import Tenant, assert_problem

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
