"""Shared steps in a real browser: the case editor offers the project's names and inserts the step
line at the caret; the case page and the execution view show the expanded steps, marked."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser_support import browser, page  # noqa: F401 (fixtures)
from tests.conftest import ServerProcess, Tenant, make_tenant_on


@pytest.fixture(scope="module")
def team(server: ServerProcess) -> Tenant:
    """Made before the browser starts: Playwright's sync API runs an event loop the admin calls cannot share."""
    return make_tenant_on(server, "Shared steps team")


def sign_in(page: Any, tenant: Tenant) -> None:  # noqa: F811
    page.goto(f"{tenant.server.url}/login")
    page.get_by_label("Email", exact=True).fill(tenant.email)
    page.get_by_label("Password").fill(tenant.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r".*/$|.*/\?.*"))


def test_editor_inserts_a_shared_step_line_and_the_case_shows_it_expanded(team: Tenant, page: Any) -> None:  # noqa: F811
    tenant = team
    project = tenant.create_project("Shop")["id"]
    made = tenant.api.post("/api/v1/shared-steps", json={"project_id": project, "name": "Sign in",
                                                         "steps": "Given I open the shop\nAnd I sign in as ann\n"})
    assert made.status_code == 201, made.text
    case = tenant.api.post("/api/v1/cases", json={
        "project_id": project, "title": "Pay", "bdd_content": "Feature: Shop\n  Scenario: Pay\n    Given a cart\n"})
    code = case.json()["data"]["code"]
    sign_in(page, tenant)
    page.goto(f"{tenant.server.url}/cases/{code}/edit")
    area = page.locator("#f-bdd_content")
    area.evaluate("el => { el.focus(); el.selectionStart = el.selectionEnd = el.value.length; }")
    page.locator("#f-shared_step").fill("Sign in")
    page.get_by_role("button", name="Insert step line").click()
    assert area.input_value().endswith("    Given a cart\n    * shared: Sign in\n")
    page.get_by_role("button", name="Save changes").click()
    page.wait_for_url(re.compile(rf".*/cases/{code}$"))
    shared = page.locator(".gherkin .ln.shared")
    expect(shared).to_have_count(4)
    assert "I sign in as ann" in page.locator(".gherkin").inner_text()
