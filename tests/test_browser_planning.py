"""Planning in a real browser (Chromium via Playwright): a QA lead creates a milestone and a test plan
across two environments, CI posts results, and the plan and the milestone show the progress.

Screenshots go to $TMS_SCREENSHOTS (default /tmp/tms-screenshots; `TMS_SCREENSHOTS=docs/screenshots`
refreshes the README's plan-progress.png and milestone.png).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser_support import browser, no_horizontal_overflow, page, shot  # noqa: F401 (fixtures)
from tests.conftest import ServerProcess, Tenant, make_tenant_on
from tests.test_cases import new_case


@pytest.fixture(scope="module")
def lead(server: ServerProcess) -> Tenant:
    """Made before the browser starts: Playwright's sync API keeps an event loop running afterwards."""
    return make_tenant_on(server, "Planners")


def test_milestone_and_plan_across_two_environments(lead: Tenant, page: Any) -> None:  # noqa: F811
    tenant = lead
    base = tenant.server.url
    project = tenant.create_project("Web shop", environments=["staging", "production"])
    checkout = new_case(tenant, project_id=project["id"], code="SHOP-1", title="Pay with a saved card",
                        tags=["checkout"])
    refund = new_case(tenant, project_id=project["id"], code="SHOP-2", title="Refund an order", tags=["smoke"])
    login = new_case(tenant, project_id=project["id"], code="SHOP-3", title="Sign in with a password",
                     tags=["smoke"])
    new_case(tenant, project_id=project["id"], code="SHOP-4", title="Export invoices", tags=["slow"])

    page.goto(f"{base}/login")
    page.get_by_label("Email", exact=True).fill(tenant.email)
    page.get_by_label("Password").fill(tenant.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base}/")

    # a milestone with a due date
    page.get_by_role("link", name="Milestones", exact=True).click()
    page.locator("#f-project_id").select_option(label="Web shop")
    page.get_by_label("Name").fill("Release 2.0")
    page.get_by_label("Due on").fill("2030-06-30")
    page.get_by_label("Description").fill("Summer release")
    page.get_by_role("button", name="Create milestone").click()
    assert page.get_by_text("Milestone “Release 2.0” created.").is_visible()
    assert page.get_by_role("heading", name="Release 2.0").is_visible()

    # a plan in it: one case by code plus every smoke case, on staging and production
    page.get_by_role("link", name="New plan").click()
    assert page.get_by_label("Milestone").input_value() != ""  # the milestone comes along
    page.get_by_label("Name").fill("Release 2.0 regression")
    page.get_by_label("Case codes").fill("SHOP-1 NOPE-9")
    page.get_by_label("Tags").fill("smoke")
    page.get_by_label("staging").check()
    page.get_by_label("production").check()
    page.get_by_role("button", name="Create plan and start its runs").click()
    # an unknown code is named next to its field, and the input is kept
    assert "NOPE-9" in page.locator("#f-case_codes-error").inner_text()
    assert page.get_by_label("Tags").input_value() == "smoke"
    assert page.get_by_label("production").is_checked()
    shot(page, "plan-new-error")
    page.get_by_label("Case codes").fill("SHOP-1")
    page.get_by_role("button", name="Create plan and start its runs").click()
    assert page.get_by_text("started: 2 runs of 3 cases").is_visible()
    plan_url = page.url
    rows = page.get_by_role("table", name="Runs of this plan").locator("tbody tr")
    expect(rows).to_have_count(2)
    assert "0 of 3 executed (0%)" in rows.nth(0).inner_text()

    # CI reports: staging nearly done, production started
    plan_id = plan_url.rsplit("/", 1)[1]
    staging_id, production_id = tenant.api.get(f"/api/v1/plans/{plan_id}").json()["data"]["run_ids"]
    for run_id, results in ((staging_id, [(checkout, "PASSED"), (refund, "FAILED")]),
                            (production_id, [(login, "PASSED")])):
        response = tenant.api.post(f"/api/v1/runs/{run_id}/results", json={"results": [
            {"test_case_code": case["code"], "status": status} for case, status in results]})
        assert response.status_code == 201, response.text

    page.reload()
    progress = page.locator(".progress-block").inner_text()
    assert re.search(r"3 of 6 executed \(50%\)", progress) and "pass rate 67%" in progress
    staging = rows.filter(has_text="staging").inner_text()
    assert "2 of 3 executed (67%)" in staging and "1 failed" in staging
    assert "1 of 3 executed (33%)" in rows.filter(has_text="production").inner_text()
    expect(page.locator("table .bar")).to_have_count(2)  # a bar per run
    shot(page, "plan-progress")

    # the milestone sums its runs
    page.get_by_role("link", name="Release 2.0", exact=True).click()
    assert "3 of 6 executed (50%)" in page.locator(".progress-block").inner_text()
    assert page.get_by_role("link", name="Release 2.0 regression · staging").is_visible()
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Milestones").click()
    assert "2030-06-30" in page.locator("table").inner_text()
    shot(page, "milestones")

    # small screens: nothing overflows sideways on the new pages
    page.set_viewport_size({"width": 375, "height": 800})
    for path in ("/milestones", "/plans", "/plans/new", plan_url.replace(base, ""),
                 f"/projects/{project['id']}/edit"):
        page.goto(base + path)
        assert no_horizontal_overflow(page), path
    shot(page, "project-settings-375")
