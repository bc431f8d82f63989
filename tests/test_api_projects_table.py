"""The projects API as a scenario table (tests/inprocess.py): who sends what, and what comes back.

One row per (token or session, method, path, body) -> (status, body check), run in-process on the
database the suite runs on. ``{project}`` is the table tenant's project, ``{other}`` another tenant's.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import Tenant, make_tenant_on
from tests.inprocess import Scenario, run_scenario

IN_PROCESS = True


def problem_names(field: str) -> Any:
    def check(response: httpx.Response) -> None:
        body = response.json()
        assert response.headers["content-type"].startswith("application/problem+json")
        assert field in body["detail"] or any(field in e["field"] for e in body.get("errors", [])), body

    return check


def data_has(**expected: Any) -> Any:
    def check(response: httpx.Response) -> None:
        data = response.json()["data"]
        assert {key: data[key] for key in expected} == expected, data

    return check


def lists(name: str) -> Any:
    def check(response: httpx.Response) -> None:
        assert name in [project["name"] for project in response.json()["data"]]

    return check


TABLE = [
    Scenario("read", "GET", "/api/v1/projects", status=200, check=lists("Table project")),
    Scenario("read", "GET", "/api/v1/projects/{project}", status=200, check=data_has(name="Table project")),
    Scenario("anonymous", "GET", "/api/v1/projects", status=401),
    Scenario("anonymous", "POST", "/api/v1/projects", {"name": "x"}, status=401),
    Scenario("read", "POST", "/api/v1/projects", {"name": "x"}, status=403),
    Scenario("read", "PATCH", "/api/v1/projects/{project}", {"name": "x"}, status=403),
    Scenario("write", "GET", "/api/v1/projects/{other}", status=404),
    Scenario("write", "PATCH", "/api/v1/projects/{other}", {"name": "x"}, status=404),
    Scenario("write", "GET", "/api/v1/projects/cnosuchprojectxxxxxxxxxxxx", status=404),
    Scenario("write", "POST", "/api/v1/projects", {"name": "Made by the table", "environments": ["prod"]},
             status=201, check=data_has(name="Made by the table", environments=["prod"])),
    Scenario("write", "POST", "/api/v1/projects", {"name": 1}, status=400, check=problem_names("name")),
    Scenario("write", "POST", "/api/v1/projects", {"name": "ok", "bogus": 1}, status=400,
             check=problem_names("bogus")),
    Scenario("write", "POST", "/api/v1/projects", {"name": "ok", "environments": "prod"}, status=400,
             check=problem_names("environments")),
    Scenario("write", "POST", "/api/v1/projects", {"name": "nul\x00"}, status=400, check=problem_names("name")),
    Scenario("write", "PATCH", "/api/v1/projects/{project}", {"archived": "yes"}, status=400,
             check=problem_names("archived")),
    Scenario("write", "PATCH", "/api/v1/projects/{project}", {"description": "Changed by the table"},
             status=200, check=data_has(name="Table project", description="Changed by the table")),
]


@pytest.fixture(scope="module")
def table_tenant(app_server: Any) -> tuple[Tenant, dict[str, str]]:
    tenant = make_tenant_on(app_server, "Projects table")
    other = make_tenant_on(app_server, "Projects table, other")
    return tenant, {"project": tenant.create_project("Table project")["id"],
                    "other": other.create_project("Not yours")["id"]}


@pytest.mark.parametrize("row", TABLE, ids=lambda row: row.id)
def test_projects_api(table_tenant: tuple[Tenant, dict[str, str]], row: Scenario) -> None:
    tenant, ids = table_tenant
    run_scenario(tenant, row, ids)
