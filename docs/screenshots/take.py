"""Refreshes the README's screenshots: a real `tms serve` with a small demo team, shot in Chromium.

    .venv/bin/python docs/screenshots/take.py

Demo data goes in through the web forms and the public API, as a team would create it.

The other images here are taken by the browser tests while they walk the pages; run them with
`TMS_SCREENSHOTS=docs/screenshots` (in this order, later ones win where two take the same name):

    tests/test_browser_failures.py      compare (clusters: overwritten below)
    tests/test_browser_library.py       library-tree, case-history-diff
    tests/test_browser_team.py          team (execute: overwritten below)
    tests/test_browser_team_day.py      execute, clusters, team-day-run, compare-baseline, flaky
    tests/test_browser_case_design.py   custom-fields, cases-filtered, execute-shared-step, inbox, case-review
"""

from __future__ import annotations

import random
import struct
import sys
import tempfile
import time
import zlib
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.browser_support import CHROMIUM, CHROMIUM_ARGS  # noqa: E402 (after the path fix)
from tests.conftest import ServerProcess, run_admin  # noqa: E402
from tests.test_web_webhooks import Receiver  # noqa: E402

OUT = Path(__file__).resolve().parent
FEATURE = """@smoke @checkout
Feature: Checkout

  Background:
    * shared: Sign in

  Scenario Outline: Pay with <method>
    Given a cart with "2" items
    When they pay with <method>
    Then the order is <result>
    \"\"\"
    Receipt sent to customer@example.com
    \"\"\"

    Examples:
      | method | result    |
      | card   | confirmed |
      | paypal | confirmed |
"""
CASES = [("Pay with a saved card", "READY", "AUTOMATED", "HIGH", "UI"),
         ("Refund an order", "DRAFT", "MANUAL", "MEDIUM", "API"),
         ("Apply a coupon", "READY", "FLAKY", "CRITICAL", "UI"),
         ("Guest checkout", "DEPRECATED", "ARCHIVED", "LOW", "INTEGRATION"),
         ("Change the delivery address", "READY", "AUTOMATED", "MEDIUM", "UI"),
         ("Pay with an expired card", "READY", "IN_PROGRESS", "HIGH", "API")]


def png(width: int = 320, height: int = 180) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + (b"\xf6\xf8\xfa" * (width // 2) + b"\xcf\x22\x2e" * (width - width // 2))
                   for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def seed(server: ServerProcess, web: httpx.Client, api: httpx.Client) -> dict[str, str]:
    web.post("/projects", data={"name": "Web shop", "description": "The customer-facing shop",
                                "environments": "staging, production"})
    web.post("/projects", data={"name": "Mobile app", "environments": "testflight"})
    project_id = api.get("/api/v1/projects").json()["data"][0]["id"]
    web.post(f"/projects/{project_id}/activate")
    # case design (issue 26): two custom fields and the shared step every case's Background uses
    api.post("/api/v1/custom-fields", json={"project_id": project_id, "key": "browser", "name": "Browser",
                                            "type": "select", "options": ["Chrome", "Firefox", "Safari"]})
    api.post("/api/v1/custom-fields", json={"project_id": project_id, "key": "component", "name": "Component",
                                            "type": "text"})
    api.post("/api/v1/shared-steps", json={"project_id": project_id, "name": "Sign in",
                                           "steps": "Given the shop is open\nAnd a signed-in customer\n"})
    for i, (title, status, automation, priority, layer) in enumerate(CASES):
        api.post("/api/v1/cases", json={
            "title": title, "bdd_content": FEATURE, "project_id": project_id, "status": status,
            "automation_status": automation, "priority": priority, "layer": layer,
            "tags": ["smoke", "checkout"] if i % 2 == 0 else ["payments"],
            "tickets": [{"key": f"SHOP-1{i}", "source": "JIRA"}],
            "custom_fields": {"browser": ("Chrome", "Firefox", "Safari")[i % 3], "component": "checkout"}})
    web.post("/cases/TC-1/comments", data={"body": "Card numbers for this case are in the **test data** sheet."})
    rnd = random.Random(3)
    run_id = ""
    for n in range(14):
        results = []
        for code in [f"TC-{i + 1}" for i in range(len(CASES))]:
            status = rnd.choice(["PASSED"] * 6 + ["FAILED", "BROKEN", "SKIPPED"])
            if code == "TC-3":
                status = rnd.choice(["PASSED", "FAILED"])
            item = {"test_case_code": code, "status": status, "duration_ms": rnd.randint(300, 90_000)}
            if status in ("FAILED", "BROKEN"):
                item.update(error_message="AssertionError: expected 200, got 500",
                            error_stack='Traceback (most recent call last):\n  File "tests/test_checkout.py", '
                                        "line 42, in test_pay\n    assert resp.status_code == 200\n"
                                        "AssertionError: expected 200, got 500",
                            bug_ticket_key="SHOP-42", bug_ticket_url="https://jira.example.com/browse/SHOP-42")
            results.append(item)
        results.append({"title": "test_login_redirects", "status": rnd.choice(["PASSED", "FAILED"]),
                        "duration_ms": 1200})
        response = api.post("/api/v1/ingest", json={"project_id": project_id, "run_name": f"Nightly #{120 + n}",
                                                    "environment": "staging", "framework": "pytest",
                                                    "results": results})
        run_id = response.json()["run_id"]
    rows = api.get(f"/api/v1/runs/{run_id}/results").json()["data"]
    failed = next((r for r in rows if r["status"] in ("FAILED", "BROKEN")), rows[0])
    api.post(f"/api/v1/results/{failed['id']}/attachments",
             files=[("file", ("screenshot.png", png(), "image/png")), ("file", ("console.txt", b"log\n" * 40,
                                                                                  "text/plain"))])
    api.post("/api/v1/runs", json={"name": "Release 2.4 manual regression", "project_id": project_id,
                                   "test_case_ids": ["TC-1", "TC-2", "TC-4"]})
    web.post("/cases/TC-2/retest", data={"needs_retest": "true", "reason": "SHOP-42 was fixed"})
    milestone = api.post("/api/v1/milestones", json={"project_id": project_id, "name": "Release 2.4",
                                                     "due_on": "2026-12-15", "description": "Winter release"})
    plan = api.post("/api/v1/plans", json={
        "project_id": project_id, "name": "Release 2.4 regression", "milestone_id": milestone.json()["data"]["id"],
        "tags": ["smoke"], "case_ids": ["TC-2"], "environments": ["staging", "production"]}).json()["data"]
    staging, production = plan["run_ids"]
    codes = [r["test_case_code"] for r in api.get(f"/api/v1/runs/{staging}/results").json()["data"]]
    api.post(f"/api/v1/runs/{staging}/results", json={"results": [
        {"test_case_code": code, "status": "FAILED" if i == 1 else "PASSED"} for i, code in enumerate(codes[:-1])]})
    api.post(f"/api/v1/runs/{production}/results", json={"results": [
        {"test_case_code": codes[0], "status": "PASSED"}]})
    return {"run_id": run_id, "plan_id": plan["id"]}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        server = ServerProcess(data, {}).start()
        try:
            email, password = "lead@acme.example", "correct horse battery"

            async def team(db: object) -> str:
                from tms.team import accounts
                from tms.team.tokens import service as tokens

                tenant_id = await accounts.create_tenant(db, "Acme QA")
                await accounts.create_user(db, tenant_id, email, password)
                return (await tokens.create_token(db, tenant_id, "GitLab CI", "read,write")).token

            token = run_admin(server.db_path, team)
            api = httpx.Client(base_url=server.url, timeout=30, headers={"Authorization": f"Bearer {token}"})
            web = httpx.Client(base_url=server.url, timeout=30)
            web.get("/login")
            csrf = web.cookies.get("csrftoken") or ""
            web.post("/login", data={"email": email, "password": password, "_csrf_token": csrf})
            web.headers["x-csrftoken"] = csrf
            receiver = Receiver()
            hook = web.post("/settings/webhooks", data={"url": receiver.url,
                                                         "events": ["test_run.completed", "test_run_result.failed"],
                                                         "secret": "s3cret", "active": "on"})
            ids = seed(server, web, api)
            time.sleep(3)  # let the deliveries of the seeded runs land in the log
            receiver.server.shutdown()
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.goto(f"{server.url}/login")
                page.get_by_label("Email").fill(email)
                page.get_by_label("Password").fill(password)
                page.get_by_role("button", name="Sign in").click()
                page.wait_for_url(f"{server.url}/")
                for name, path in (("dashboard", "/"), ("cases", "/cases"), ("case", "/cases/TC-1"),
                                   ("runs", "/runs"), ("run", f"/runs/{ids['run_id']}?status=FAILED"),
                                   ("tokens", "/settings/tokens"), ("webhook", hook.headers["location"]),
                                   ("plan-progress", f"/plans/{ids['plan_id']}"), ("milestones", "/milestones")):
                    page.goto(server.url + path)
                    whole = name not in ("dashboard", "webhook", "runs", "plan-progress", "milestones")
                    page.screenshot(path=str(OUT / f"{name}.png"), full_page=whole)
                page.goto(f"{server.url}/cases/new")
                page.get_by_label("Title").fill("Pay with a gift card")
                page.get_by_label("Gherkin").fill("Feature: Gift cards\n  Scenario: Pay\n    Given a gift card\n"
                                                  "  the balance is enough\n")
                page.get_by_role("button", name="Create test case").click()
                page.screenshot(path=str(OUT / "case-invalid-gherkin.png"), full_page=True)
                page.set_viewport_size({"width": 375, "height": 812})
                page.goto(server.url + "/")
                page.screenshot(path=str(OUT / "dashboard-mobile.png"))
                browser.close()
        finally:
            server.stop()
    print("\n".join(sorted(p.name for p in OUT.glob("*.png"))))


if __name__ == "__main__":
    if not CHROMIUM.exists():
        sys.exit(f"{CHROMIUM} is missing (make browser)")
    main()
