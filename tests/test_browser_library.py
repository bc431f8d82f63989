"""The organised library in a real browser: import a TestRail export (with its preview), find a case by
a word of its steps, re-file cases in the section tree, and read a case's history as a diff.

Screenshots go to $TMS_SCREENSHOTS (`TMS_SCREENSHOTS=docs/screenshots` refreshes the README's).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser_support import browser, no_horizontal_overflow, page, shot  # noqa: F401 (fixtures)
from tests.conftest import ServerProcess, Tenant, make_tenant_on

FIXTURE = Path(__file__).parent / "fixtures" / "testrail" / "shop_suite.xml"


@pytest.fixture(scope="module")
def team(server: ServerProcess) -> Tenant:
    """Made before the browser starts: Playwright's sync API runs an event loop the admin calls cannot share."""
    return make_tenant_on(server, "Library team")


def sign_in(page: Any, tenant: Tenant) -> None:  # noqa: F811
    page.goto(f"{tenant.server.url}/login")
    page.get_by_label("Email", exact=True).fill(tenant.email)
    page.get_by_label("Password").fill(tenant.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r".*/$|.*/\?.*"))


def test_library_journey(team: Tenant, page: Any) -> None:  # noqa: F811
    tenant = team
    project = tenant.create_project("Web shop")
    base = tenant.server.url
    sign_in(page, tenant)

    # import a TestRail export: the preview says what will happen, and nothing is written before confirming
    page.goto(f"{base}/cases")
    page.get_by_role("link", name="Import", exact=True).click()
    page.get_by_label("Into project").select_option(label="Web shop")
    page.get_by_label("Format").select_option("testrail-xml")
    page.get_by_label("File").set_input_files(str(FIXTURE))
    page.get_by_role("button", name="Preview the import").click()
    assert page.locator('[data-count="created"]').inner_text() == "4"
    assert page.locator('[data-count="sections"]').inner_text() == "3"
    assert tenant.api.get("/api/v1/cases", params={"project_id": project["id"]}).json()["pagination"]["total"] == 0
    page.get_by_role("button", name=re.compile(r"Import 4 cases")).click()
    assert "4 created" in page.locator(".flash").inner_text()

    # the tree shows the imported sections with their counts
    def node(name: str) -> Any:
        tree = page.get_by_role("complementary", name="Web shop")
        return tree.locator(f'.tree-link:has(.tree-name:text-is("{name}"))')

    assert node("Checkout").locator(".count").inner_text() == "3"  # with its subsection
    assert node("Accounts").locator(".count").inner_text() == "1"
    assert no_horizontal_overflow(page)

    # find a case by a word of its steps
    page.get_by_label("Search").fill("WINTER10")
    page.get_by_role("button", name="Filter").click()
    rows = page.locator("table.cases tbody tr")
    expect(rows).to_have_count(1)
    assert "Pay with a saved card" in rows.first.inner_text()
    assert "q=WINTER10" in page.url  # the filtered view is a shareable URL

    # re-file: select a case of "Accounts" and move it to "Refunds"
    page.goto(f"{base}/cases?project_id={project['id']}")
    page.get_by_label("Select C-104").check()
    page.get_by_label("With the selected").select_option(label="Web shop \u203a Refunds")
    page.get_by_role("button", name="Apply").click()
    assert "1 of 1 test case moved" in page.locator(".flash").inner_text()
    assert node("Refunds").locator(".count").inner_text() == "2"
    assert node("Accounts").locator(".count").inner_text() == "0"
    node("Refunds").click()
    expect(page.locator("table.cases tbody tr")).to_have_count(2)
    shot(page, "library-tree", full_page=False)

    # change the steps of the case (v2 was the move), then read its history as a diff
    page.goto(f"{base}/cases/C-104/edit")
    gherkin = page.get_by_label("Gherkin")
    text = gherkin.input_value()
    gherkin.fill(text.replace("within a minute", "within five minutes") + "    And the old link stops working\n")
    page.get_by_label("Priority").select_option("HIGH")
    page.get_by_role("button", name="Save changes").click()
    page.get_by_role("link", name=re.compile(r"History \(v3\)")).click()
    diff = page.get_by_role("region", name=re.compile("Gherkin changes"))
    assert "within a minute" in diff.locator("tr.del").first.inner_text()
    assert "within five minutes" in diff.locator("tr.add").first.inner_text()
    expect(diff.locator("tr.add")).to_have_count(2)
    assert "Priority" in page.locator("table.fields-diff").inner_text()
    assert tenant.email in page.locator("table.versions").inner_text()  # who made the change
    shot(page, "case-history-diff")
