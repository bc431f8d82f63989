"""The web interface in a real browser (Chromium via Playwright), as a new user meets it.

One journey on a fresh server: first-run setup → sign in → project, marked active → a test case
(first with broken Gherkin) → a read+write token, copied, used from here to ingest results and an
attachment → the run page and the dashboard show them → a webhook and its delivery → the token
revoked, and the API answers 401. Screenshots go to $TMS_SCREENSHOTS (default /tmp/tms-screenshots;
`TMS_SCREENSHOTS=docs/screenshots` refreshes the README's).
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Callable
from typing import Any

import httpx
from playwright.sync_api import expect

from tests.browser_support import browser, no_horizontal_overflow, page, shot  # noqa: F401 (fixtures)
from tests.conftest import ServerProcess
from tests.test_web_webhooks import Receiver

GOOD = """@smoke
Feature: Checkout

  Scenario: Pay with a saved card
    Given a signed-in customer with a saved card
    When they pay for a cart of "2" items
    Then the order is confirmed
"""
BROKEN = "Feature: Checkout\n  Scenario: Pay\n    Given a cart\n  this line is not Gherkin\n"


def png(width: int = 160, height: int = 90) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + b"\x2b\x6c\xd8" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def test_new_team_journey(start_server: Callable[..., ServerProcess], page: Any) -> None:  # noqa: F811
    server = start_server(env={"TMS_WEBHOOKS_BACKOFF_SECONDS": "0.2"})
    base = server.url
    # everything the pages load must come from the service itself (air-gapped VMs)
    loaded: list[str] = []
    page.on("request", lambda request: loaded.append(request.url))
    # the Content-Security-Policy allows everything the pages do: no violation reported anywhere
    console_errors: list[str] = []
    page.on("console", lambda message: console_errors.append(message.text) if message.type == "error" else None)
    setup_token = server.setup_token()
    assert setup_token, server.log()

    # first run: the service sends a visitor to setup, and the printed link creates the team
    page.goto(f"{base}/")
    assert "/setup" in page.url
    page.goto(f"{base}/setup?token={setup_token}")
    page.get_by_label("Team name").fill("QA Team")
    page.get_by_label("Your email").fill("lead@example.com")
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Create team and sign in").click()
    page.wait_for_url(f"{base}/")
    assert "Your team is ready" in page.content()
    assert "Create your first project" in page.content()

    # sign out and in again, as a returning user
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(re.compile(r"/login"))
    shot(page, "login")
    page.get_by_label("Email", exact=True).fill("lead@example.com")
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base}/")

    # a project, marked active
    page.get_by_role("link", name="Projects").click()
    page.get_by_role("button", name="Create project").click()
    assert page.locator("#f-name-error").is_visible()  # server-side message next to the field
    page.get_by_label("Name").fill("Web shop")
    page.get_by_label("Environments").fill("staging, production")
    page.get_by_role("button", name="Create project").click()
    # the first project is the active one at once (issue 24): no click needed to see it on the dashboard
    assert page.get_by_text("Project “Web shop” created; it is the active project.").is_visible()
    expect(page.get_by_role("button", name="Mark Web shop active")).to_have_count(0)
    shot(page, "projects")
    # the project id CI needs is on the page, copied with its button (wired by /static/app.js)
    page.get_by_role("button", name="Copy the project id of Web shop").click()
    page.wait_for_function("() => document.querySelector('.project-id button').textContent === 'Copied'")
    copied_project_id = page.evaluate("navigator.clipboard.readText()")
    assert re.fullmatch(r"c[a-z0-9]{24}", copied_project_id)
    page.get_by_text("Send test results from CI").click()
    assert page.get_by_text(f"tms ingest --url {base} --project {copied_project_id} reports/").is_visible()

    # a test case: broken Gherkin is refused with the line marked, the input kept
    page.get_by_role("link", name="Test cases").click()
    page.get_by_role("link", name="New test case").click()
    page.get_by_label("Title").fill("Pay with a saved card")
    page.get_by_label("Gherkin").fill(BROKEN)
    page.get_by_role("button", name="Create test case").click()
    assert page.get_by_role("link", name="Line 4").is_visible()
    assert page.locator("#L4.bad").is_visible()
    assert page.get_by_label("Title").input_value() == "Pay with a saved card"
    shot(page, "case-invalid-gherkin")
    page.get_by_label("Gherkin").fill(GOOD)
    page.get_by_label("Priority").select_option("HIGH")
    page.get_by_label("Tags").fill("smoke, checkout")
    page.get_by_role("button", name="Create test case").click()
    assert page.get_by_text("Test case TC-1 created.").is_visible()
    assert page.locator(".g-kw", has_text="Feature:").is_visible()

    # a read+write token, shown once and copied with the button
    page.get_by_role("link", name="Settings").click()
    page.get_by_label("Name").fill("CI pipeline")
    page.get_by_label("read").check()
    page.get_by_label("write").check()
    page.get_by_role("button", name="Create token").click()
    secret = page.locator("#new-token-value").inner_text().strip()
    assert re.fullmatch(r"svc_[a-z0-9]{8}_[A-Za-z0-9]{32,}", secret)
    page.get_by_role("button", name="Copy").click()
    page.get_by_role("button", name="Copied").wait_for()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == secret
    shot(page, "token-created")
    page.reload()
    expect(page.locator("#new-token-value")).to_have_count(0)

    # a webhook for completed runs, pointed at a local receiver
    receiver = Receiver()
    try:
        page.get_by_role("link", name="Webhooks").click()
        page.get_by_label("Payload URL").fill(receiver.url)
        page.get_by_role("button", name="Add webhook").click()
        assert page.get_by_text("Webhook created").is_visible()
        webhook_url = page.url

        # CI ingests with the copied token: one linked, one unlinked result, and a screenshot
        api = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {copied}"}, timeout=30)
        project_id = copied_project_id
        assert api.get("/api/v1/projects").json()["data"][0]["id"] == project_id
        ingest = api.post("/api/v1/ingest", json={
            "project_id": project_id, "run_name": "Nightly #1", "environment": "staging", "framework": "pytest",
            "results": [
                {"test_case_code": "TC-1", "status": "FAILED", "duration_ms": 2300,
                 "error_message": "AssertionError: expected 200, got 500\nassert 500 == 200",
                 "comment": "2 tests link to TC-1; the worst status counts:\n- FAILED pay\n- PASSED pay again",
                 "error_stack": "Traceback (most recent call last):\n  File \"test_checkout.py\", line 12\n"
                                "AssertionError",
                 "bug_ticket_key": "SHOP-42", "bug_ticket_url": "https://jira.example.com/browse/SHOP-42"},
                {"title": "test_login_redirects", "status": "PASSED", "duration_ms": 800},
            ]})
        assert ingest.status_code == 201, ingest.text
        run_id = ingest.json()["run_id"]
        failed = next(r for r in api.get(f"/api/v1/runs/{run_id}/results").json()["data"] if r["status"] == "FAILED")
        upload = api.post(f"/api/v1/results/{failed['id']}/attachments",
                          files=[("file", ("screenshot.png", png(), "image/png"))])
        assert upload.status_code == 201, upload.text

        # the run page: the failure, its stack, the inline image, the unlinked result apart
        page.get_by_role("link", name="Runs").click()
        page.get_by_role("link", name="Nightly #1").click()
        # innerText follows the applied CSS: read it once the run page and its stylesheet have loaded
        page.wait_for_url(re.compile(r".*/runs/[a-z0-9]+$"))
        page.wait_for_load_state("load")
        assert page.get_by_text("AssertionError: expected 200, got 500").first.is_visible()
        # multi-line texts keep their lines (innerText follows the CSS: collapsed text has no \n)
        assert page.locator(".errmsg").first.inner_text() == "AssertionError: expected 200, got 500\nassert 500 == 200"
        assert page.locator(".multiline").inner_text().splitlines() == [
            "2 tests link to TC-1; the worst status counts:", "- FAILED pay", "- PASSED pay again"]
        page.get_by_text("Stack trace").first.click()
        assert page.locator("details.stack pre").first.is_visible()
        image = page.get_by_alt_text("Attachment screenshot.png")
        assert image.is_visible()
        assert page.evaluate("(img) => img.naturalWidth", image.element_handle()) == 160
        assert page.locator("#unlinked-title").is_visible() and page.get_by_text("test_login_redirects").is_visible()
        shot(page, "run")

        # the dashboard reflects it
        page.get_by_role("link", name="Dashboard").click()
        expect(page.locator("svg.chart")).to_have_count(2)
        assert "50% pass rate, latest run" in page.locator(".stat-row").inner_text().replace("\n", " ")
        assert page.locator("#failing-title").is_visible() and page.get_by_text("1 of 1").is_visible()
        shot(page, "dashboard")

        # the ingest completed the run: test_run.completed is delivered and shows in the log
        page.goto(webhook_url)
        for _ in range(60):  # the log does not refresh itself (it would wipe an edit in progress)
            if page.locator(".st-delivered").count():
                break
            page.wait_for_timeout(250)
            page.reload()
        assert page.get_by_text("test_run.completed").first.is_visible()
        shot(page, "webhook")
        assert any(b"test_run.completed" in item["body"] for item in receiver.received)
    finally:
        receiver.server.shutdown()

    # revoke the token: the API refuses it at once
    page.get_by_role("link", name="API Tokens").click()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Revoke CI pipeline").click()
    assert page.get_by_text("Token revoked").is_visible()
    assert api.get("/api/v1/me").status_code == 401

    # the case page shows the history; 375 px wide, nothing overflows sideways
    page.goto(f"{base}/cases/TC-1")
    assert page.get_by_role("link", name="Nightly #1").is_visible()
    assert page.locator(".errmsg").first.inner_text().splitlines()[1] == "assert 500 == 200"
    shot(page, "case")
    page.set_viewport_size({"width": 375, "height": 800})
    for name, path in (("dashboard", "/"), ("projects", "/projects"), ("cases", "/cases"),
                       ("case", "/cases/TC-1"), ("case-edit", "/cases/TC-1/edit"), ("runs", "/runs"),
                       ("run", f"/runs/{run_id}"), ("tokens", "/settings/tokens"),
                       ("webhooks", "/settings/webhooks"), ("webhook", webhook_url.replace(base, "")),
                       ("not-found", "/cases/NOPE-1")):
        page.goto(base + path)
        assert no_horizontal_overflow(page), path
        if name in ("dashboard", "run"):
            shot(page, f"{name}-375")
    outside = [url for url in loaded if not url.startswith((base, "data:", "about:"))]
    assert not outside, outside
    assert not [text for text in console_errors if "Content Security Policy" in text], console_errors
    assert f"{base}/static/favicon.svg" in loaded


def test_keyboard_reaches_the_main_navigation(start_server: Callable[..., ServerProcess], page: Any) -> None:  # noqa: F811
    server = start_server()
    token = server.setup_token()
    page.goto(f"{server.url}/setup?token={token}")
    page.get_by_label("Team name").fill("Keys")
    page.get_by_label("Your email").fill("keys@example.com")
    page.get_by_label("Password").fill("correct horse battery")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{server.url}/")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    seen = []
    for _ in range(16):  # the navigation grew (milestones, plans, reviews, the inbox)
        page.keyboard.press("Tab")
        seen.append(page.evaluate("document.activeElement.textContent.trim()"))
    for item in ("Dashboard", "Projects", "Test cases", "Runs", "Settings"):
        assert item in seen, seen
