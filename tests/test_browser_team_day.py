"""A team day in a real browser (issue 24): CI ingests nightly runs of the shop on two environments, and a
tester runs the morning's manual regression of the same cases in the execution view. Then the QA lead
reads the day: the run page, its failure clusters with their "new" badges, the flaky list and the
comparison with a baseline chosen on the compare page; each in the words a tester reads (Blocked,
Untested, "1m 30s"). Screenshots go to $TMS_SCREENSHOTS (`TMS_SCREENSHOTS=docs/screenshots` refreshes the
README's execute.png and clusters.png, and team-day-run.png, compare-baseline.png and flaky.png).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from playwright.sync_api import expect

from tests.browser_support import browser, no_horizontal_overflow, page, shot  # noqa: F401 (fixtures)
from tests.conftest import ServerProcess, make_tenant_on
from tests.test_failures import ingest
from tests.test_failures_manual_ci import failed, make_case, manual_run, passed

CODES = ("PAY-1", "CART-1", "SHIP-1", "SEARCH-1", "COUPON-1")
TIMEOUT = "TimeoutError: POST /payments timed out after {n}ms"


def _ci_night(tenant: Any, project: str, night: int) -> tuple[str, str]:
    """One night of CI: staging (PAY flip-flops, CART regressed from night 3, COUPON new on the last night)
    and production (SHIP always fails there: no flip). Returns (staging run, production run)."""
    red = night % 2 == 1
    staging = ingest(tenant, project, [
        {**failed("PAY-1", TIMEOUT.format(n=3000 + night)), "title": "tests/test_pay.py::test_card"}
        if red else {**passed("PAY-1"), "title": "tests/test_pay.py::test_card"},
        failed("CART-1", f"AssertionError: total {night} != 42") if night >= 3 else passed("CART-1"),
        passed("SHIP-1"), passed("SEARCH-1"),
        failed("COUPON-1", "KeyError: 'coupon'") if night == 5 else passed("COUPON-1"),
    ], environment="staging", run_name=f"Staging nightly {night + 1}")
    production = ingest(tenant, project, [passed("PAY-1"), passed("CART-1"),
                                          failed("SHIP-1", "no carrier for region EU"), passed("SEARCH-1")],
                        environment="production", run_name=f"Production nightly {night + 1}")
    return staging, production


def test_a_team_day_reads_right_in_the_browser(server: ServerProcess, page: Any) -> None:  # noqa: F811
    with ThreadPoolExecutor(1) as pool:  # the admin helper needs an event loop of its own
        tenant = pool.submit(make_tenant_on, server, "Team day").result()
    project = tenant.create_project("Shop")["id"]  # the tenant's only project: the pages' context at once
    for code in CODES:
        make_case(tenant, project, code)
    staging: list[str] = []
    for night in range(5):
        staging.append(_ci_night(tenant, project, night)[0])
    manual = manual_run(tenant, project, "staging", ["PAY-1", "CART-1", "SEARCH-1"])

    base = server.url
    page.goto(f"{base}/login")
    page.get_by_label("Email", exact=True).fill(tenant.email)
    page.get_by_label("Password").fill(tenant.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base}/")

    # --- the manual regression, in the execution view -------------------------------------------------
    page.goto(f"{base}/runs/{manual['run']}")
    tabs = page.get_by_role("navigation", name="Filter results by status").inner_text()
    assert "Untested 3" in tabs and "Unknown" not in tabs  # pre-filled rows nobody has set yet
    page.goto(f"{base}/results/{manual['SEARCH-1']}/execute")
    outcome = page.locator("fieldset:has(input[name=status])")
    assert {"Passed", "Failed", "Blocked", "Skipped", "Untested"} <= set(outcome.inner_text().split())
    page.locator("#step-1").get_by_label("Passed").check()
    page.locator("#step-2").get_by_label("Blocked").check()
    page.locator("#note-2").fill("card form is blank: the payment provider's script does not load")
    page.locator("label.mark-BROKEN input[name=status]").check()
    page.get_by_label("Duration").fill("1m 30s")
    assert page.get_by_label("Duration").input_value() == "1m 30s"  # typing pauses the running timer
    shot(page, "execute")
    save = page.locator("button[aria-keyshortcuts='Control+s']")
    save.click()
    page.wait_for_selector("#last-saved:has-text('Last saved by')")
    assert page.get_by_label("Duration").input_value().startswith("1m 3")  # read back in the same words
    assert "Blocked" in page.locator(".page-head .actions").inner_text()
    saved = tenant.api.get(f"/api/v1/results/{manual['SEARCH-1']}").json()["data"]
    assert (saved["status"], saved["duration_ms"], saved["source"]) == ("BROKEN", 90_000, "manual")
    page.goto(f"{base}/results/{manual['CART-1']}/execute")
    page.locator("label.mark-PASSED input[name=status]").check()
    page.get_by_label("Duration").fill("45s")
    save.click()
    page.wait_for_selector("#last-saved:has-text('Last saved by')")
    page.goto(f"{base}/runs/{manual['run']}")
    words = page.locator("section[aria-labelledby=summary-title] .counts").inner_text()
    assert "1 passed" in words and "1 blocked" in words and "1 untested" in words and "broken" not in words
    expect(page.locator("#clusters")).to_have_count(0)  # a tester's note is no CI cause: no clusters here

    # --- the last nightly arrives from CI ----------------------------------------------------------------
    latest = _ci_night(tenant, project, 5)[0]
    page.goto(f"{base}/runs/{latest}")
    assert "fires test_run.completed" not in page.content()  # no event names to read
    clusters = page.locator("article.cluster")
    by_message = {clusters.nth(i).locator(".errmsg").inner_text(): clusters.nth(i) for i in range(clusters.count())}
    assert set(by_message) == {TIMEOUT.format(n=3005), "AssertionError: total 5 != 42", "KeyError: 'coupon'"}
    # new: the coupon failure only (PAY and CART failed on earlier nights, the manual run does not count)
    expect(by_message["KeyError: 'coupon'"].locator(".cluster-new")).to_have_count(1)
    expect(by_message[TIMEOUT.format(n=3005)].locator(".cluster-new")).to_have_count(0)
    expect(by_message["AssertionError: total 5 != 42"].locator(".cluster-new")).to_have_count(0)
    # the results: failures first, each titled by its case (the CI test path beside it, smaller)
    rows = page.locator("section[aria-labelledby=results-title] tr.result")
    firsts = [rows.nth(i).locator(".badge.st").first.inner_text() for i in range(3)]
    assert firsts == ["Failed", "Failed", "Failed"]
    pay = rows.filter(has_text="PAY-1").first
    assert "Case PAY-1" in pay.locator(".result-title").inner_text()
    assert "tests/test_pay.py::test_card" in pay.locator(".test-path").inner_text()
    assert no_horizontal_overflow(page)
    shot(page, "team-day-run")
    page.locator("#clusters").scroll_into_view_if_needed()
    shot(page, "clusters", full_page=False)

    # case codes stay one word at 1280 px (SHOP-123 never breaks at its hyphen)
    page.goto(f"{base}/cases?project_id={project}")
    codes = page.locator("table a > code")
    expect(codes).to_have_count(len(CODES))
    assert {codes.nth(i).evaluate("e => getComputedStyle(e).whiteSpace") for i in range(codes.count())} == {"nowrap"}
    assert all(codes.nth(i).evaluate("e => e.getClientRects().length") == 1 for i in range(codes.count()))

    # --- the flaky list: the flip-flop only, within its environment; the regression is no flake --------
    page.goto(f"{base}/flaky?project_id={project}")
    flaky = page.locator("#flaky tbody tr")
    expect(flaky).to_have_count(1)
    assert "PAY-1" in flaky.nth(0).inner_text()
    cells = flaky.nth(0).locator("td")
    assert "50%" in flaky.nth(0).inner_text()  # 5 flips in 5 staging steps, none in production: 5 / 10
    assert any(cells.nth(i).inner_text() == "Passed" for i in range(cells.count()))  # last status, in words
    shot(page, "flaky")

    # --- compare with a chosen baseline -------------------------------------------------------------------
    page.goto(f"{base}/runs/{latest}/compare")
    assert "Staging nightly 5" in page.locator("#base").inner_text()  # default: the previous staging nightly
    page.locator("#f-base").select_option(staging[2])  # the lead picks night 3, before CART regressed
    page.get_by_role("button", name="Compare").click()
    page.wait_for_selector("#base:has-text('Staging nightly 3')")

    def listed(section: str) -> set[str]:
        items = page.locator(f"#{section} table tbody tr")
        return {items.nth(i).locator("code").first.inner_text() for i in range(items.count())}

    assert listed("new") == {"CART-1", "PAY-1", "COUPON-1"}  # night 3 had them all green
    assert listed("fixed") == listed("still") == listed("added") == listed("missing") == set()
    new_rows = page.locator("#new table tbody tr")
    assert "Passed" in new_rows.first.inner_text() and "Failed" in new_rows.first.inner_text()
    assert no_horizontal_overflow(page)
    shot(page, "compare-baseline")
