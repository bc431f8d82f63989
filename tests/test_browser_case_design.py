"""Case design in a real browser (issue 26), one team's afternoon: the lead defines a project's custom fields
(a select, a text and a result field) and turns review on; writes a shared step and two cases that fill the
fields and use it; filters the case list by the fields; executes the shared step in a manual run; mentions
the reviewer in a comment (the bell, the inbox and a mail read off a real SMTP server on loopback tell them)
and asks for review; the reviewer approves (the case becomes READY); the failures of the run are rerun.

Screenshots go to $TMS_SCREENSHOTS (`TMS_SCREENSHOTS=docs/screenshots` refreshes custom-fields.png,
cases-filtered.png, execute-shared-step.png, inbox.png and case-review.png, which docs/library.md and
docs/team.md show).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from playwright.sync_api import expect

from tests.browser_support import SCREENSHOTS, browser, page, shot  # noqa: F401 (fixtures)
from tests.conftest import ServerProcess, Tenant, make_tenant_on
from tests.team_helpers import Member, add_member
from tests.test_password_reset import Inbox, _mail_env, inbox  # noqa: F401 (the aiosmtpd fixture)

SIGN_IN_STEPS = "Given I open the shop\nAnd I sign in as ann\n"


def _team(server: ServerProcess) -> tuple[Tenant, Member]:
    """The lead (the tenant's owner) and a tester who reviews; through `tms admin`'s calls, which need an
    event loop of their own (Playwright's sync API runs one in this thread)."""
    lead = make_tenant_on(server, "Case design team")
    return lead, add_member(lead, "tester")


def _sign_in(page: Any, base: str, address: str, password: str) -> None:  # noqa: F811
    page.goto(f"{base}/login")
    page.get_by_label("Email", exact=True).fill(address)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r".*/$|.*/\?.*"))


def _name_yourself(page: Any, base: str, name: str) -> None:  # noqa: F811
    page.goto(f"{base}/account")
    page.get_by_label("Name").fill(name)
    page.get_by_role("button", name="Save").click()
    page.wait_for_selector(".flash-success:has-text('Saved.')")


def _add_field(page: Any, name: str, key: str, kind: str, *, entity: str = "case",  # noqa: F811
               options: str = "") -> None:
    page.locator("#f-field_name").fill(name)
    page.locator("#f-field_key").fill(key)
    page.locator("#f-field_type").select_option(kind)
    page.locator("#f-field_entity").select_option(entity)
    page.locator("#f-field_options").fill(options)
    page.get_by_role("button", name="Add field").click()
    page.wait_for_selector(f".flash-success:has-text('Custom field “{name}” added.')")


def _new_case(page: Any, base: str, title: str, browser_name: str, component: str,  # noqa: F811
              gherkin: str, *, insert_shared: str | None = None) -> str:
    """Creates a case through the form; with ``insert_shared`` the editor's picker adds that step line at
    the end. Returns the case's code (read off the page the form leads to)."""
    page.goto(f"{base}/cases/new")
    page.locator("#f-title").fill(title)
    page.locator("#f-cf-browser").select_option(browser_name)
    page.locator("#f-cf-component").fill(component)
    area = page.locator("#f-bdd_content")
    area.fill(gherkin)
    if insert_shared:
        area.evaluate("el => { el.focus(); el.selectionStart = el.selectionEnd = el.value.length; }")
        page.locator("#f-shared_step").fill(insert_shared)
        page.get_by_role("button", name="Insert step line").click()
        assert area.input_value().endswith(f"    * shared: {insert_shared}\n")
    page.get_by_role("button", name="Create test case").click()
    page.wait_for_url(re.compile(r".*/cases/[A-Z]+-\d+$"))
    return str(page.url.rsplit("/", 1)[1])


def _shot_of(part: Any, name: str) -> None:
    """A screenshot of one part of a page (a card), for the docs."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    part.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def _listed_codes(page: Any) -> set[str]:  # noqa: F811
    codes = page.locator("table a > code")
    return {codes.nth(i).inner_text() for i in range(codes.count())}


def _execute(page: Any, base: str, run: str, code: str, marks: dict[int, str], status: str,  # noqa: F811
             device: str = "") -> None:
    """Opens the result of ``code`` from the run page, marks steps (index → label) and the result, saves."""
    page.goto(f"{base}/runs/{run}")
    page.locator("tr.result", has_text=code).get_by_role("link", name="Execute").click()
    page.wait_for_url(re.compile(r".*/results/[^/]+/execute$"))
    for index, label in marks.items():
        page.locator(f"#step-{index}").get_by_label(label).check()
    page.locator(f"label.mark-{status} input[name=status]").check()
    if device:
        page.locator("#f-cf-device").select_option(device)


def _save(page: Any) -> None:  # noqa: F811
    page.locator("button[aria-keyshortcuts='Control+s']").click()
    page.wait_for_selector("#last-saved:has-text('Last saved by')")


def test_fields_shared_steps_comments_review_and_rerun_in_the_browser(
        start_server: Callable[..., ServerProcess], inbox: tuple[Inbox, int], browser: Any,  # noqa: F811
        page: Any) -> None:  # noqa: F811
    mails, port = inbox
    server = start_server(_mail_env(port))
    with ThreadPoolExecutor(1) as pool:
        lead, reviewer = pool.submit(_team, server).result()
    base, api = server.url, lead.api
    project = lead.create_project("Shop", environments=["staging"])["id"]

    _sign_in(page, base, lead.email, lead.password)
    _name_yourself(page, base, "Lena Lead")
    other = browser.new_context(viewport={"width": 1280, "height": 900})
    other.set_default_timeout(10_000)
    tab = other.new_page()
    _sign_in(tab, base, reviewer.email, reviewer.password)
    _name_yourself(tab, base, "Rafael Reviewer")

    # --- project settings: three fields (one for results) and review required ---------------------------
    page.goto(f"{base}/projects/{project}/edit")
    _add_field(page, "Browser", "browser", "select", options="Chrome, Firefox, Safari")
    _add_field(page, "Component", "component", "text")
    _add_field(page, "Device", "device", "select", entity="result", options="Desktop, Phone")
    rows = page.locator("#fields tbody tr")
    expect(rows).to_have_count(3)
    assert [rows.nth(i).locator("td code").inner_text() for i in range(3)] == ["browser", "component", "device"]
    assert "results" in rows.nth(2).inner_text()
    page.get_by_role("button", name="Require review").click()
    page.wait_for_selector("#review button:has-text('Stop requiring review')")
    _shot_of(page.locator("#fields"), "custom-fields")
    fields = api.get("/api/v1/custom-fields", params={"project_id": project}).json()["data"]
    assert {(f["key"], f["type"], f["entity"]) for f in fields} == {
        ("browser", "select", "case"), ("component", "text", "case"), ("device", "select", "result")}
    assert api.get(f"/api/v1/projects/{project}").json()["data"]["require_review"] is True

    # --- a shared step, and two cases using it -----------------------------------------------------------
    page.goto(f"{base}/projects/{project}/shared-steps")
    page.locator("#f-name").fill("Sign in")
    page.locator("#f-steps").fill(SIGN_IN_STEPS)
    page.get_by_role("button", name="Add shared step").click()
    page.wait_for_selector(".flash-success:has-text('Shared step “Sign in” added.')")
    pay = _new_case(page, base, "Pay by card", "Chrome", "checkout",
                    "Feature: Checkout\n  Scenario: Pay by card\n    Given a cart with 2 items\n"
                    "    * shared: Sign in\n    When I pay by card\n    Then the order is confirmed\n")
    expect(page.locator(".gherkin .ln.shared")).to_have_count(4)  # the two steps between their two marker lines
    assert "I sign in as ann" in page.locator(".gherkin").inner_text()
    details = page.locator("section[aria-labelledby=meta-title]").inner_text()
    assert "Browser\nChrome" in details and "Component\ncheckout" in details
    wishlist = _new_case(page, base, "Keep a wish list", "Firefox", "checkout",
                         "Feature: Wish list\n  Scenario: Keep a wish list\n    Given a product page\n",
                         insert_shared="Sign in")
    search = api.post("/api/v1/cases", json={  # a third case, from CI's side
        "project_id": project, "title": "Search by name", "custom_fields": {"browser": "Chrome", "component": "search"},
        "bdd_content": "Feature: Search\n  Scenario: By name\n    Given the catalogue\n    When I search 'mug'\n"})
    assert search.status_code == 201, search.text
    search_code = search.json()["data"]["code"]
    step = api.get("/api/v1/shared-steps", params={"project_id": project}).json()["data"][0]
    used_by = api.get(f"/api/v1/shared-steps/{step['id']}").json()["data"]["used_by"]
    assert {c["code"] for c in used_by} == {pay, wishlist}

    # --- the case list, filtered by the fields (the filter lives in the URL) ------------------------------
    page.goto(f"{base}/cases?project_id={project}")
    assert _listed_codes(page) == {pay, wishlist, search_code}
    page.locator("[id='f-cf.browser']").select_option("Chrome")
    page.get_by_role("button", name="Filter", exact=True).click()
    page.wait_for_url(re.compile(r".*[?&]cf\.browser=Chrome(&|$)"))
    assert _listed_codes(page) == {pay, search_code}
    page.locator("[id='f-cf.component']").fill("checkout")
    page.get_by_role("button", name="Filter", exact=True).click()
    page.wait_for_url(re.compile(r".*[?&]cf\.component=checkout(&|$)"))
    assert "cf.browser=Chrome" in page.url
    assert _listed_codes(page) == {pay}
    shot(page, "cases-filtered")
    api_filtered = api.get("/api/v1/cases", params={"project_id": project, "cf.browser": "Firefox"}).json()
    assert [c["code"] for c in api_filtered["data"]] == [wishlist]

    # --- a manual run: the shared step executed in the execution view -------------------------------------
    page.goto(f"{base}/runs/new?project_id={project}")
    page.locator("#f-name").fill("Release 1 regression")
    page.locator("#f-environment").fill("staging")
    page.locator("#f-all_matching").check()
    page.get_by_role("button", name="Create run").click()
    page.wait_for_selector(".flash-success:has-text('created with 3 cases')")
    run = page.url.rsplit("/", 1)[1].split("?")[0]

    _execute(page, base, run, pay, {i: "Passed" for i in range(1, 6)}, "PASSED", device="Phone")
    texts = page.locator("ol.steps li.step .step-text")
    assert [texts.nth(i).locator("strong").inner_text().strip() for i in range(texts.count())] == [
        "Given", "Given", "And", "When", "Then"]
    badges = page.locator("ol.steps .from-shared")
    expect(badges).to_have_count(2)
    assert {badges.nth(i).inner_text() for i in range(2)} == {"shared: Sign in"}
    assert "I sign in as ann" in page.locator("#step-3").inner_text()
    shot(page, "execute-shared-step")
    _save(page)
    results = {r["test_case_code"]: r for r in api.get(f"/api/v1/runs/{run}/results").json()["data"]}
    saved = api.get(f"/api/v1/results/{results[pay]['id']}").json()["data"]
    assert saved["status"] == "PASSED" and saved["source"] == "manual"
    assert [(s["index"], s["status"]) for s in saved["step_results"]] == [(i, "PASSED") for i in range(1, 6)]
    assert saved["custom_fields"] == {"device": "Phone"}

    _execute(page, base, run, wishlist, {1: "Passed", 2: "Failed"}, "FAILED")
    page.locator("#note-2").fill("the sign-in form never appears")
    _save(page)
    failed = api.get(f"/api/v1/results/{results[wishlist]['id']}").json()["data"]
    assert failed["status"] == "FAILED"
    assert [(s["index"], s["status"]) for s in failed["step_results"]] == [(1, "PASSED"), (2, "FAILED")]
    searched = api.patch(f"/api/v1/results/{results[search_code]['id']}", json={"status": "PASSED"})
    assert searched.status_code == 200, searched.text

    # --- a comment mentioning the reviewer; the review asked of them --------------------------------------
    page.goto(f"{base}/cases/{pay}")
    page.locator("#f-body").fill(f"@{reviewer.email} is **step 3** clear enough?")
    page.get_by_role("button", name="Comment", exact=True).click()
    page.wait_for_selector("article.comment .comment-body strong:has-text('step 3')")
    page.locator("#review-reviewer").select_option(label="Rafael Reviewer (tester)")
    page.get_by_role("button", name="Request review").click()
    page.wait_for_selector(".review-state:has-text('Waiting for review')")
    page.get_by_role("button", name="Approve").click()  # under require_review the author may not approve
    page.wait_for_selector("#f-review-error")
    assert api.get(f"/api/v1/cases/{pay}").json()["data"]["status"] == "DRAFT"

    mention = mails.wait_for(reviewer.email)
    assert "mentioned you" in mention["Subject"], mention["Subject"]
    assert f"{base}/cases/{pay}#comment-" in mention.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    request = mails.wait_for(reviewer.email, 2)
    assert "Review requested" in request["Subject"] and pay in request["Subject"], request["Subject"]

    # --- the reviewer: the bell, the inbox, the approval ---------------------------------------------------
    try:
        tab.goto(f"{base}/")
        assert tab.locator("a.bell").get_attribute("aria-label") == "Notifications, 2 new"
        tab.locator("a.bell").click()
        tab.wait_for_url(f"{base}/notifications")
        items = tab.locator("#inbox li.inbox-item.unread")
        expect(items).to_have_count(2)
        assert {items.nth(i).get_attribute("data-kind") for i in range(2)} == {"mention", "review_request"}
        assert "Lena Lead mentioned you" in tab.locator("#inbox li[data-kind=mention]").inner_text()
        # the titles are link-like buttons: readable on the page, not the top bar's white (a bug this walk found)
        colours = {tab.locator("#inbox button").nth(i).evaluate("e => getComputedStyle(e).color") for i in range(4)}
        assert "rgb(255, 255, 255)" not in colours
        assert tab.locator(".topbar button.link").evaluate("e => getComputedStyle(e).color") == "rgb(255, 255, 255)"
        shot(tab, "inbox")
        tab.locator("#inbox li[data-kind=review_request] button.inbox-title").click()
        tab.wait_for_url(re.compile(rf".*/cases/{pay}#review$"))
        assert tab.locator("a.bell").get_attribute("aria-label") == "Notifications, 1 new"
        tab.get_by_role("button", name="Approve").click()
        tab.wait_for_selector(".review-state:has-text('Approved · Rafael Reviewer')")
        assert "Ready" in tab.locator("section[aria-labelledby=meta-title]").inner_text()
        shot(tab, "case-review")
    finally:
        other.close()
    case = api.get(f"/api/v1/cases/{pay}").json()["data"]
    assert case["status"] == "READY"
    assert (case["review"]["state"], case["review"]["reviewer_id"]) == ("APPROVED", reviewer.id)
    # the lead hears of the approval: the bell and the inbox
    page.goto(f"{base}/notifications")
    assert page.locator("a.bell").get_attribute("aria-label") == "Notifications, 1 new"
    assert pay in page.locator("#inbox li[data-kind=review_result]").inner_text()

    # --- rerun the failures of the run ---------------------------------------------------------------------
    page.goto(f"{base}/runs/{run}")
    page.locator("#rerun summary").click()
    page.get_by_label("Name of the new run").fill("Release 1 rerun")
    page.get_by_role("button", name="Rerun", exact=True).click()
    page.wait_for_selector(".flash-success:has-text('Run “Release 1 rerun” created with 1 cases')")
    rerun = page.url.rsplit("/", 1)[1].split("?")[0]
    assert rerun != run
    expect(page.locator("tr.result")).to_have_count(1)
    assert wishlist in page.locator("tr.result").inner_text()
    made = api.get(f"/api/v1/runs/{rerun}").json()["data"]
    assert (made["name"], made["environment"], made["project_id"]) == ("Release 1 rerun", "staging", project)
    rerun_results = api.get(f"/api/v1/runs/{rerun}/results").json()["data"]
    assert [(r["test_case_code"], r["status"]) for r in rerun_results] == [(wishlist, "UNKNOWN")]
