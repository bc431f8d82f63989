"""A case version keeps the shared steps its text used as they were then (migration 0044): a later edit
of a shared step leaves the old versions as executed and approved, and the version history's diff
shows the edit. Both databases."""

from __future__ import annotations

import html
from typing import Any

from tests.conftest import Tenant
from tests.test_shared_steps import case_using, define

LOGIN = "Given I open the shop\nAnd I sign in as \"ann\"\n"
LOGIN_SSO = "Given I open the shop\nAnd I sign in with single sign-on\n"


def _versions(tenant: Tenant, case_id: str) -> dict[int, dict[str, Any]]:
    response = tenant.api.get(f"/api/v1/cases/{case_id}/versions")
    assert response.status_code == 200, response.text
    return {v["version"]: v for v in response.json()["data"]}


def _edit(tenant: Tenant, step_id: str, **changes: str) -> None:
    response = tenant.api.patch(f"/api/v1/shared-steps/{step_id}", json=changes)
    assert response.status_code == 200, response.text


def test_an_old_version_keeps_the_shared_steps_as_they_were(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    login = define(tenant.api, project, "Login", LOGIN)
    made = case_using(tenant.api, project, "Login")
    assert made.status_code == 201, made.text
    case = made.json()["data"]
    plain = tenant.api.post("/api/v1/cases", json={"project_id": project, "title": "Plain",
                                                   "bdd_content": "Feature: F\n  Scenario: S\n    Given x\n"})
    assert plain.status_code == 201, plain.text

    _edit(tenant, login["id"], steps=LOGIN_SSO)
    versions = _versions(tenant, case["id"])
    assert versions[1]["bdd_content"] == versions[2]["bdd_content"]  # the case's own text did not change
    assert versions[1]["shared_steps"] == [{"name": "Login", "version": 1, "steps": LOGIN}]
    assert versions[2]["shared_steps"] == [{"name": "Login", "version": 2, "steps": LOGIN_SSO}]
    assert _versions(tenant, plain.json()["data"]["id"])[1]["shared_steps"] == []

    # the history page: the diff of v1 → v2 shows the shared step's edit, and the list says so
    page = tenant.web().get(f"/cases/{case['code']}/versions", params={"a": 1, "b": 2})
    assert page.status_code == 200, page.text
    text = html.unescape(page.text)
    assert '<tr class="del">' in page.text and '<tr class="add">' in page.text
    removed = text.split('<tr class="del">', 1)[1].split("</tr>", 1)[0]
    added = text.split('<tr class="add">', 1)[1].split("</tr>", 1)[0]
    assert 'And I sign in as "ann"' in removed and "And I sign in with single sign-on" in added
    assert "(unchanged)" not in text.split("All versions", 1)[0]
    assert "Shared steps" in text.split("All versions", 1)[1]


def test_nested_shared_steps_and_a_rename_are_kept_per_version(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    inner = define(tenant.api, project, "Open shop", "Given I open the shop\n")
    outer = define(tenant.api, project, "Login", "* shared: Open shop\nAnd I sign in\n")
    case = case_using(tenant.api, project, "Login").json()["data"]
    first = _versions(tenant, case["id"])[1]["shared_steps"]
    assert first == [{"name": "Login", "version": 1, "steps": "* shared: Open shop\nAnd I sign in\n"},
                     {"name": "Open shop", "version": 1, "steps": "Given I open the shop\n"}]

    _edit(tenant, inner["id"], steps="Given I open the shop on a phone\n")  # nested: a new case version
    _edit(tenant, outer["id"], name="Sign in")  # a rename rewrites the case's line
    versions = _versions(tenant, case["id"])
    assert sorted(versions) == [1, 2, 3]
    assert versions[1]["shared_steps"] == first
    assert [(s["name"], s["steps"]) for s in versions[2]["shared_steps"]] == [
        ("Login", "* shared: Open shop\nAnd I sign in\n"), ("Open shop", "Given I open the shop on a phone\n")]
    assert [s["name"] for s in versions[3]["shared_steps"]] == ["Open shop", "Sign in"]
    assert "* shared: Sign in" in versions[3]["bdd_content"]


def _backfill_statement(dialect: str) -> str:
    """The statement of migration 0044 (postgres 0025) that fills the current versions' shared steps."""
    from importlib import resources

    folder = resources.files("tms.migrations")
    name = ("postgres/0025_retention_and_version_steps.sql" if dialect == "postgres"
            else "0044_retention_and_version_steps.sql")
    sql = folder.joinpath(name).read_text(encoding="utf-8")
    start = sql.index("WITH RECURSIVE down")
    return sql[start:sql.index(";", start) + 1]


def test_the_migration_fills_each_cases_current_version_from_the_links(tenant: Tenant) -> None:
    """Versions recorded before migration 0044 have none (NULL); the migration fills each case's current
    version (the shared steps as they are now are that version's), nested ones included."""
    from tests import postgres_cluster
    from tests.conftest import connect_db

    project = tenant.create_project()["id"]
    define(tenant.api, project, "Open shop", "Given I open the shop\n")
    login = define(tenant.api, project, "Login", "* shared: Open shop\nAnd I sign in\n")
    case = case_using(tenant.api, project, "Login").json()["data"]
    _edit(tenant, login["id"], steps="* shared: Open shop\nAnd I sign in twice\n")
    with connect_db(tenant.server.db_path) as conn:  # as an upgraded database has them
        conn.execute("UPDATE case_versions SET shared_steps = NULL WHERE case_id = ?", (case["id"],))
    assert all(v["shared_steps"] == [] for v in _versions(tenant, case["id"]).values())

    if postgres_cluster.selected():
        import asyncpg

        url = postgres_cluster.database_url_for(tenant.server.data_dir)

        async def backfill() -> None:
            conn = await asyncpg.connect(url)
            try:
                await conn.execute(_backfill_statement("postgres"))
            finally:
                await conn.close()

        postgres_cluster.run_sync(backfill)
    else:
        with connect_db(tenant.server.db_path) as conn:
            conn.execute(_backfill_statement("sqlite"))
    versions = _versions(tenant, case["id"])
    assert versions[1]["shared_steps"] == []  # what it used then is not known
    assert versions[2]["shared_steps"] == [
        {"name": "Login", "version": 2, "steps": "* shared: Open shop\nAnd I sign in twice\n"},
        {"name": "Open shop", "version": 1, "steps": "Given I open the shop\n"}]
