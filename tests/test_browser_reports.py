"""Reports in a real browser (Chromium via Playwright; issue 27): a QA lead opens a milestone's report and
downloads it as HTML and PDF (their text checked, the PDF's through pypdf), exports a run as JUnit and
ingests it back into an equal run (`tms ingest`), reads the traceability matrix, and creates a GitHub issue
from a failed result against a loopback tracker, whose "closed" webhook then queues the case for retest.

Screenshots go to $TMS_SCREENSHOTS (default /tmp/tms-screenshots).
"""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from pypdf import PdfReader

from tests.browser_support import browser, page, shot  # noqa: F401 (fixtures)
from tests.conftest import ServerProcess, Tenant, make_tenant_on
from tests.test_defects import TOKEN, FakeTracker
from tests.test_integrations import GHERKIN, deliver, edited
from tests.test_reports import _ingest_file, _rows

MILESTONE = "Release 3.1"


@pytest.fixture(scope="module")
def lead(server: ServerProcess) -> Tenant:
    """Made before the browser starts: Playwright's sync API keeps an event loop running afterwards."""
    return make_tenant_on(server, "Report readers")


@pytest.fixture
def tracker() -> Iterator[FakeTracker]:
    fake = FakeTracker()
    thread = threading.Thread(target=fake.serve_forever, daemon=True)
    thread.start()
    yield fake
    fake.release.set()
    fake.shutdown()
    fake.server_close()


def _world(tenant: Tenant, tracker: FakeTracker) -> dict[str, Any]:
    """A project whose cases name two Jira tickets, a milestone with a run of a pass, a failure and a
    blocked result, and a GitHub integration that creates issues in the loopback tracker."""
    api = tenant.api
    project = tenant.create_project("Bookshop", environments=["staging"])["id"]
    cases = {}
    for code, title, ticket in (("BOOK-1", "Search by author", "SHOP-10"),
                                ("BOOK-2", "Pay with a gift card", "SHOP-11"),
                                ("BOOK-3", "Print the receipt", "SHOP-11")):
        made = api.post("/api/v1/cases", json={"project_id": project, "code": code, "title": title,
                                               "bdd_content": GHERKIN, "tickets": [{"key": ticket, "source": "JIRA"}]})
        assert made.status_code == 201, made.text
        cases[code] = made.json()["data"]
    milestone = api.post("/api/v1/milestones", json={"project_id": project, "name": MILESTONE}).json()["data"]["id"]
    ingest = api.post("/api/v1/ingest", json={
        "project_id": project, "run_name": "Staging regression", "environment": "staging",
        "results": [
            {"test_case_code": "BOOK-1", "status": "PASSED", "duration_ms": 1200},
            {"test_case_code": "BOOK-2", "status": "FAILED", "duration_ms": 800,
             "error_message": "AssertionError: gift card balance 0.00 != 25.00",
             "error_stack": "AssertionError: gift card balance 0.00 != 25.00\n  at pay.spec.ts:14"},
            {"test_case_code": "BOOK-3", "status": "BROKEN", "error_message": "printer fixture missing"},
        ]})
    assert ingest.status_code == 201, ingest.text
    run = ingest.json()["run_id"]
    assert api.patch(f"/api/v1/runs/{run}", json={"milestone_id": milestone}).status_code == 200
    integration = api.post("/api/v1/integrations", json={
        "kind": "GITHUB", "name": "Shop GitHub", "api_url": tracker.url, "api_token": TOKEN,
        "repository": "acme/shop"})
    assert integration.status_code == 201, integration.text
    return {"project": project, "milestone": milestone, "run": run, "cases": cases,
            "integration": integration.json()["data"]}


def _sign_in(page: Any, tenant: Tenant) -> None:  # noqa: F811
    base = tenant.server.url
    page.goto(f"{base}/login")
    page.get_by_label("Email", exact=True).fill(tenant.email)
    page.get_by_label("Password").fill(tenant.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base}/")


def _download(page: Any, link_name: str) -> bytes:  # noqa: F811
    with page.expect_download() as info:
        page.get_by_role("link", name=link_name, exact=True).click()
    return Path(info.value.path()).read_bytes()


def test_reports_export_traceability_and_an_issue_from_a_failure(
        lead: Tenant, tracker: FakeTracker, page: Any, tmp_path: Path) -> None:  # noqa: F811
    tenant = lead
    base = tenant.server.url
    world = _world(tenant, tracker)
    _sign_in(page, tenant)

    # the milestone's report, on screen and as files
    page.goto(f"{base}/milestones/{world['milestone']}")
    page.get_by_role("link", name="Report", exact=True).click()
    page.wait_for_url(f"{base}/milestones/{world['milestone']}/report")
    assert page.get_by_role("heading", name=MILESTONE).first.is_visible()
    assert page.get_by_text("AssertionError: gift card balance 0.00 != 25.00").first.is_visible()
    shot(page, "milestone-report")
    html = _download(page, "HTML").decode()
    assert html.startswith("<!DOCTYPE html>") and MILESTONE in html and "Bookshop" in html
    assert "gift card balance 0.00 != 25.00" in html and "printer fixture missing" in html
    assert "<script" not in html and "Download:" not in html  # self-contained; the page's links left out
    pdf = _download(page, "PDF")
    assert pdf.startswith(b"%PDF")
    text = "\n".join(p.extract_text() or "" for p in PdfReader(io.BytesIO(pdf)).pages)
    assert MILESTONE in text and "Bookshop" in text and "gift card balance" in text

    # the run exported as JUnit and read back by `tms ingest` into an equal run
    junit = tenant.client("read").get(f"/api/v1/runs/{world['run']}/export", params={"format": "junit"})
    assert junit.status_code == 200 and b"<testsuite" in junit.content
    exported = tmp_path / "staging.xml"
    exported.write_bytes(junit.content)
    summary = _ingest_file(tenant, exported, world["project"], "--environment", "staging")
    assert summary["rejected"] == 0 and summary["run_id"] != world["run"]
    assert _rows(tenant, summary["run_id"]) == _rows(tenant, world["run"])
    page.goto(f"{base}/runs/{summary['run_id']}")
    assert page.get_by_text("gift card balance 0.00 != 25.00").first.is_visible()

    # the traceability matrix: SHOP-10 passes, SHOP-11 fails (one of its cases fails)
    page.goto(f"{base}/traceability")
    page.locator("#f-project").select_option(label="Bookshop")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(f"{base}/traceability?*")
    assert page.locator("#coverage-totals").inner_text().split()[:4] == ["1", "passed", "1", "failed"]
    shop_10 = page.locator("tr.requirement", has=page.locator("code", has_text="SHOP-10"))
    shop_11 = page.locator("tr.requirement", has=page.locator("code", has_text="SHOP-11"))
    assert "coverage-passed" in (shop_10.get_attribute("class") or "")
    assert "coverage-failed" in (shop_11.get_attribute("class") or "")
    assert page.get_by_role("link", name="BOOK-2").count() + page.get_by_text("BOOK-2").count() > 0
    shot(page, "traceability")

    # "Create issue" from the failed result of the original run, against the loopback GitHub
    page.goto(f"{base}/runs/{world['run']}")
    row = page.locator("tr", has=page.get_by_text("Pay with a gift card"))
    row.get_by_role("link", name="Create issue").click()
    page.wait_for_url(f"{base}/results/*/defect*")
    assert "BOOK-2" in page.get_by_label("Title").input_value()
    assert "gift card balance 0.00 != 25.00" in page.get_by_label("Description").input_value()
    page.get_by_label("Title").fill("Gift cards pay nothing")
    page.get_by_role("button", name="Create issue").click()
    page.wait_for_url(f"{base}/results/*/execute")  # back to the result
    assert page.get_by_text("Created acme/shop#1 and linked it to the result.").is_visible()
    page.goto(f"{base}/runs/{world['run']}")
    assert row.get_by_role("link", name="acme/shop#1").is_visible()
    expect(row.get_by_role("link", name="Create issue")).to_have_count(0)
    created = tracker.requests[-1]
    assert created["path"] == "/repos/acme/shop/issues" and created["body"]["title"] == "Gift cards pay nothing"
    assert created["headers"]["authorization"] == f"Bearer {TOKEN}"
    assert "gift card balance 0.00 != 25.00" in created["body"]["body"]

    # the tracker closes the issue: its webhook puts the case in the retest queue
    closed = edited("github_issue_closed_completed.json", issue__number=1)
    delivered = deliver(tenant.server, world["integration"]["id"], "GITHUB", world["integration"]["secret"], closed)
    assert delivered.status_code == 200, delivered.text
    queue = tenant.api.get("/api/v1/cases", params={"needs_retest": "true"}).json()["data"]
    assert [c["code"] for c in queue] == ["BOOK-2"]
    page.goto(f"{base}/cases/BOOK-2")
    assert page.get_by_text("needs retest", exact=False).first.is_visible()
    shot(page, "retest-after-close")
