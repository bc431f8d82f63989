"""Failure intelligence in a real browser: a run's failure clusters ("new" badges, a known issue made in
one click) and the comparison with the previous run of the environment. Screenshots go to
$TMS_SCREENSHOTS (`TMS_SCREENSHOTS=docs/screenshots` refreshes the README's clusters.png and compare.png)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from playwright.sync_api import expect

from tests.browser_support import browser, no_horizontal_overflow, page, shot  # noqa: F401 (fixtures)
from tests.conftest import ServerProcess, make_tenant_on
from tests.test_failures import JAVA_STACK, cases, ingest, timeout_failure


def _history(tenant: Any, project: str) -> tuple[str, str]:
    codes = [f"SHOP-{n}" for n in range(1, 13)]
    cases(tenant, project, *codes)
    runs = []
    for night in range(1, 5):
        results: list[dict[str, Any]] = []
        for i, code in enumerate(codes):
            if i < 5:  # the orders API times out for five tests every night
                results.append(timeout_failure(code, night))
            elif i == 5 and night == 4:  # tonight only: a new failure
                message = f"payment provider answer ==> expected: <paid> but was: <declined-{night}>"
                results.append({"test_case_code": code, "status": "FAILED", "error_message": message,
                                "error_stack": JAVA_STACK.format(message=message, line=77)})
            elif i == 6 and night % 2:  # flips every other night
                results.append({"test_case_code": code, "status": "FAILED", "error_message": "element not visible"})
            else:
                results.append({"test_case_code": code, "status": "PASSED", "duration_ms": 120 + i})
        runs.append(ingest(tenant, project, results, environment="staging", run_name=f"Nightly #{night}"))
    return runs[-2], runs[-1]


def test_clusters_and_compare_page(server: ServerProcess, page: Any) -> None:  # noqa: F811
    # Playwright's sync API runs an event loop in this thread; the admin helper needs one of its own
    with ThreadPoolExecutor(1) as pool:
        tenant = pool.submit(make_tenant_on, server, "Browser failures").result()
    project = tenant.create_project("Web shop")["id"]
    previous, latest = _history(tenant, project)

    page.goto(f"{server.url}/login")
    page.get_by_label("Email", exact=True).fill(tenant.email)
    page.get_by_label("Password").fill(tenant.password)
    page.get_by_role("button", name="Sign in").click()

    page.goto(f"{server.url}/runs/{latest}")
    clusters = page.locator("article.cluster")
    expect(clusters).to_have_count(2)
    # the recurring timeout is the largest cluster and not new; the payment failure is new
    assert "5\u00d7" in clusters.nth(0).inner_text()
    expect(clusters.nth(0).locator(".cluster-new")).to_have_count(0)
    expect(clusters.nth(1).locator(".cluster-new")).to_have_count(1)
    assert no_horizontal_overflow(page)
    shot(page, "clusters")

    # one click (after typing the bug key) turns the new cluster into a known issue
    clusters.nth(1).get_by_label("Bug key").fill("PAY-42")
    clusters.nth(1).get_by_role("button", name="Make a known issue").click()
    page.wait_for_selector("text=Known issue PAY-42 created")
    assert page.locator("article.cluster").nth(1).locator(".cluster-known").inner_text().startswith("known: PAY-42")
    expect(page.locator("article.cluster").nth(1).locator(".cluster-new")).to_have_count(0)

    page.get_by_role("link", name="compared with the previous run of this environment").click()
    page.wait_for_selector("h1:has-text('compared')")
    assert "Nightly #3" in page.locator("#base").inner_text()
    new = page.locator("#new table tbody tr")
    expect(new).to_have_count(1)
    assert "SHOP-6" in new.nth(0).inner_text()
    fixed = page.locator("#fixed table tbody tr")
    expect(fixed).to_have_count(1)
    assert "SHOP-7" in fixed.nth(0).inner_text()
    expect(page.locator("#still table tbody tr")).to_have_count(5)
    assert no_horizontal_overflow(page)
    shot(page, "compare")
    assert previous
