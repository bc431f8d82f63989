"""A whole manual regression pass in a real browser, as a team does it.

The owner invites a tester and a viewer; both accept their links. The lead (the owner) builds a run
from a filtered case list and assigns half of it to the tester, who executes the cases step by step
with the keyboard alone, pastes a screenshot and links a bug. The viewer sees everything and can change
nothing. The run is completed, `test_run.completed` reaches a webhook receiver, and the audit log says
who did what. Screenshots of the execution view and the Team page go to $TMS_SCREENSHOTS.
"""

from __future__ import annotations

import base64
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from playwright.sync_api import expect

from tests.browser_support import browser, shot  # noqa: F401 (fixtures)
from tests.conftest import ServerProcess, make_tenant_on
from tests.test_browser import png
from tests.test_web_webhooks import Receiver

GHERKIN = """Feature: Checkout
  Background:
    Given a signed-in shopper with a full cart

  Scenario Outline: Pay by card
    When they pay with a <card> card
    Then the order is confirmed

    Examples:
      | card |
      | Visa |
      | Amex |
"""


def _context(browser: Any) -> tuple[Any, Any]:  # noqa: F811
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    return context, context.new_page()


def _sign_in(page: Any, base: str, email: str, password: str) -> None:
    page.goto(f"{base}/login")
    page.get_by_label("Email", exact=True).fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base}/")


def _accept(browser: Any, link: str, name: str, password: str) -> tuple[Any, Any]:  # noqa: F811
    context, page = _context(browser)
    page.goto(link)
    page.get_by_label("Your name").fill(name)
    page.locator("#f-password").fill(password)
    page.locator("#f-password_confirm").fill(password)
    page.get_by_role("button", name="Join the team").click()
    page.wait_for_url(re.compile(r"/$"))
    assert "Welcome" in page.content()
    return context, page


def _invite(page: Any, base: str, email: str, role: str) -> str:
    page.goto(f"{base}/settings/team")
    page.get_by_label("Email address").fill(email)
    page.get_by_label("Role", exact=True).select_option(role)
    page.get_by_role("button", name="Create invitation link").click()
    page.wait_for_url(f"{base}/settings/team")
    return page.locator("#issued-link").inner_text().strip()


def test_a_manual_regression_pass(server: ServerProcess, browser: Any) -> None:  # noqa: F811
    base = server.url
    # Playwright's sync API runs an event loop in this thread: the admin call needs its own thread
    with ThreadPoolExecutor(1) as pool:
        tenant = pool.submit(make_tenant_on, server, "Browser team").result()
    project = tenant.create_project("Shop", environments=["staging"])
    for title, tags in (("Pay by card", ["checkout"]), ("Pay by invoice", ["checkout"]),
                        ("Refund an order", ["checkout"]), ("Apply a coupon", ["checkout"]),
                        ("Change the avatar", ["profile"])):
        created = tenant.api.post("/api/v1/cases", json={"title": title, "bdd_content": GHERKIN, "tags": tags,
                                                         "project_id": project["id"], "status": "READY"})
        assert created.status_code == 201, created.text
    receiver = Receiver()
    owner_http = tenant.web()
    assert owner_http.post("/api/webhooks", json={"url": receiver.url,
                                                  "events": ["test_run.completed"]}).status_code == 201
    try:
        owner_context, lead = _context(browser)
        _sign_in(lead, base, tenant.email, tenant.password)
        lead.goto(f"{base}/account")
        lead.get_by_label("Name").fill("Olivia Owner")
        lead.get_by_role("button", name="Save").click()
        assert "Saved." in lead.content()

        # the owner invites a tester and a viewer; each accepts their one-time link
        tester_link = _invite(lead, base, "tess@example.com", "tester")
        viewer_link = _invite(lead, base, "vic@example.com", "viewer")
        tester_context, tester = _accept(browser, tester_link, "Tess Tester", "tess password 1")
        viewer_context, viewer = _accept(browser, viewer_link, "Vic Viewer", "vic password 1")
        lead.goto(f"{base}/settings/team")
        assert "Tess Tester" in lead.content() and "Vic Viewer" in lead.content()
        shot(lead, "team")

        # the lead creates a run from a filtered case list: every "checkout" case
        lead.goto(f"{base}/cases?tag=checkout&project_id={project['id']}")
        lead.get_by_role("link", name="New run from these cases").click()
        lead.get_by_label("Name").fill("Release 2.4 regression")
        lead.get_by_label("Environment").fill("staging")
        lead.get_by_label(re.compile("All 4 cases matching")).check()
        lead.get_by_role("button", name="Create run").click()
        lead.wait_for_url(re.compile(r"/runs/c[a-z0-9]+$"))
        run_url = lead.url
        assert "created with 4 cases" in lead.content()

        # ... and assigns half of it to the tester
        boxes = lead.locator("input[name=result_ids]")
        expect(boxes).to_have_count(4)
        boxes.nth(0).check()
        boxes.nth(1).check()
        lead.get_by_label("Assign selected to").select_option(label="Tess Tester (tester)")
        lead.get_by_role("button", name="Assign", exact=True).click()
        assert "2 results assigned" in lead.content()

        # the tester finds the work and executes it step by step, by keyboard
        tester.goto(f"{base}/my-work")
        expect(tester.locator("text=Execute")).to_have_count(2)
        tester.locator("a", has_text="Execute").first.click()
        tester.wait_for_url(re.compile(r"/results/.+/execute"))
        first_url = tester.url
        tester.keyboard.press("?")
        assert tester.locator("#shortcuts").is_visible()
        tester.keyboard.press("Escape")
        # 5 steps: Background, then the Outline once per example row
        expect(tester.locator("li.step")).to_have_count(5)
        for key in ("p", "p", "p", "p", "f"):
            tester.keyboard.press(key)
        assert tester.locator("input[name=status][value=FAILED]").is_checked()  # suggested from the steps
        tester.keyboard.press("n")
        tester.keyboard.type("Amex is declined")
        tester.keyboard.press("Escape")
        tester.keyboard.press("g")
        tester.keyboard.type("PAY-77")
        tester.get_by_label("Bug URL").fill("https://bugs.example.com/PAY-77")
        tester.keyboard.press("Escape")
        # a screenshot pasted from the clipboard
        data = base64.b64encode(png()).decode()
        tester.evaluate("""(data) => {
            const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
            const transfer = new DataTransfer();
            transfer.items.add(new File([bytes], "screenshot.png", { type: "image/png" }));
            document.dispatchEvent(new ClipboardEvent("paste", { clipboardData: transfer }));
        }""", data)
        tester.locator("#upload-status", has_text="Attached").wait_for()
        shot(tester, "execute")
        tester.keyboard.press("Control+Enter")
        tester.wait_for_url(lambda url: "/execute" in url and url != first_url)
        second_url = tester.url
        for _ in range(5):
            tester.keyboard.press("p")
        tester.keyboard.press("Control+Enter")
        # the save is done when the browser has left this result's page (for the next untested one)
        tester.wait_for_url(lambda url: url != second_url)

        results = tenant.api.get(f"/api/v1/runs/{run_url.rsplit('/', 1)[1]}/results").json()["data"]
        by_status = sorted(r["status"] for r in results)
        assert by_status == ["FAILED", "PASSED", "UNKNOWN", "UNKNOWN"]
        failed = next(r for r in results if r["status"] == "FAILED")
        assert failed["bug_ticket_key"] == "PAY-77" and failed["attachments"][0]["mimeType"] == "image/png"
        assert failed["step_results"][-1] == {"index": 5, "status": "FAILED", "comment": "Amex is declined"}
        assert failed["duration_ms"] and failed["duration_ms"] > 0

        # the viewer sees everything and can change nothing, not even with a crafted post
        viewer.goto(run_url)
        assert "Release 2.4 regression" in viewer.content()
        expect(viewer.locator("input[name=result_ids]")).to_have_count(0)
        expect(viewer.get_by_role("button", name="Mark completed")).to_have_count(0)
        viewer.goto(f"{base}/results/{failed['id']}/execute")
        expect(viewer.get_by_role("button", name=re.compile("Save"))).to_have_count(0)
        csrf = next(c["value"] for c in viewer_context.cookies() if c["name"] == "csrftoken")
        crafted = viewer.request.post(f"{base}/results/{failed['id']}/execute",
                                      form={"status": "PASSED", "_csrf_token": csrf}, max_redirects=0)
        assert crafted.status == 403
        assert tenant.api.get(f"/api/v1/results/{failed['id']}").json()["data"]["status"] == "FAILED"

        # the lead completes the run with a summary; test_run.completed fires
        lead.goto(run_url)
        lead.locator("summary", has_text="Complete this run").click()
        lead.locator("#f-summary").fill("Amex payments broken (PAY-77); the rest passes.")
        lead.get_by_role("button", name="Mark completed").click()
        assert "marked completed" in lead.content()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not receiver.received:
            time.sleep(0.2)
        assert receiver.received, "test_run.completed was not delivered"
        assert json.loads(receiver.received[0]["body"])["event"] == "test_run.completed"

        # the audit log shows who did what
        lead.goto(f"{base}/settings/audit")
        audit = lead.locator("table.audit").inner_text()
        for expected in ("user.invited", "user.joined", "run.created", "run.results_assigned", "result.updated",
                         "attachment.created", "run.completed", "Tess Tester"):
            assert expected in audit, expected
        lead.goto(f"{base}/settings/audit?actor_id={_user_id(tenant, 'tess@example.com')}")
        actions = set(re.findall(r"\b[a-z_]+\.[a-z_]+\b", lead.locator("table.audit").inner_text()))
        assert {"result.updated", "attachment.created", "user.joined"} <= actions
        assert "run.completed" not in actions
        for context in (owner_context, tester_context, viewer_context):
            context.close()
    finally:
        receiver.server.shutdown()


def _user_id(tenant: Any, email: str) -> str:
    return next(u["id"] for u in tenant.api.get("/api/v1/users").json()["data"] if u["email"] == email)
