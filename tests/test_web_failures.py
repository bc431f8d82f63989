"""Web pages of failure intelligence: clusters on the run page and their one-click known issue, the
compare page, the Flaky, Quarantine and Known issues pages (forms re-rendered with 400 on bad input)."""

from __future__ import annotations

from tests.conftest import Tenant
from tests.test_failures import cases, ingest, payment_failure, timeout_failure
from tests.web_helpers import every_post_form_has_csrf, field_error, input_value, text_of

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)


def _two_runs(tenant: Tenant) -> tuple[str, str, str]:
    project = tenant.create_project("Shop")["id"]
    cases(tenant, project, "W-1", "W-2", "W-3")
    first = ingest(tenant, project, [timeout_failure("W-1", 1), {"test_case_code": "W-2", "status": "PASSED"}],
                   environment="staging", run_name="Nightly 1")
    second = ingest(tenant, project, [timeout_failure("W-1", 2), payment_failure("W-2", 2),
                                      timeout_failure("W-3", 2)], environment="staging", run_name="Nightly 2")
    return project, first, second


def test_run_page_shows_clusters_new_badges_and_makes_a_known_issue_in_one_click(tenant: Tenant) -> None:
    project, _, run = _two_runs(tenant)
    web = tenant.web()
    page = web.get(f"/runs/{run}")
    assert page.status_code == 200 and every_post_form_has_csrf(page.text)
    text = text_of(page.text)
    assert "Failures by cause (2 clusters, 3 failures)" in text
    assert text.count(" new ") >= 1 and "2\u00d7 " in text and "1\u00d7 new" in text
    assert f'href="/runs/{run}/compare"' in page.text
    assert "compared with the previous run of this environment" in text

    fingerprint = tenant.api.get(f"/api/v1/runs/{run}/failures").json()["data"][0]["fingerprint"]
    made = web.post("/known-issues", data={
        "project_id": project, "fingerprint": fingerprint, "run_id": run, "bug_ticket_key": "SHOP-1",
        "back": f"/runs/{run}#cluster-{fingerprint}", "_csrf_token": web.cookies.get("csrftoken")})
    assert made.status_code == 303 and made.headers["location"] == f"/runs/{run}#cluster-{fingerprint}"
    after = text_of(web.get(f"/runs/{run}").text)
    assert "known: SHOP-1" in after
    codes = {r["test_case_code"]: r["bug_ticket_key"] for r in tenant.api.get(f"/api/v1/runs/{run}/results")
             .json()["data"]}
    assert codes == {"W-1": "SHOP-1", "W-2": None, "W-3": "SHOP-1"}

    # a missing bug key re-renders the form with the input kept and the field named
    bad = web.post("/known-issues", data={"project_id": project, "fingerprint": fingerprint, "bug_ticket_key": "",
                                          "_csrf_token": web.cookies.get("csrftoken")})
    assert bad.status_code == 400
    assert field_error(bad.text, "bug_ticket_key") and input_value(bad.text, "fingerprint") == fingerprint
    bad_pattern = web.post("/known-issues", data={"project_id": project, "pattern": r"(a)\1",
                                                  "bug_ticket_key": "X-1", "_csrf_token": web.cookies.get("csrftoken")})
    assert bad_pattern.status_code == 400 and "linear time" in (field_error(bad_pattern.text, "pattern") or "")


def test_compare_page_lists_new_fixed_and_still_failing(tenant: Tenant) -> None:
    _, first, run = _two_runs(tenant)
    page = tenant.web().get(f"/runs/{run}/compare")
    assert page.status_code == 200
    text = text_of(page.text)
    assert "Compared with the previous run of environment staging" in text and "Nightly 1" in text
    # W-3 is only in this run: added, not also a new failure
    assert "1 new failures 0 fixed 1 still failing 1 added 0 missing" in text, text
    assert tenant.web().get(f"/runs/{first}/compare", params={"base": run}).status_code == 200


def test_quarantine_page_adds_lists_and_ends_entries(tenant: Tenant) -> None:
    project, _, _ = _two_runs(tenant)
    web = tenant.web()
    token = web.cookies.get("csrftoken")
    missing = web.post("/quarantine", data={"project_id": project, "test_case_code": "W-1", "reason": "",
                                            "_csrf_token": token})
    assert missing.status_code == 400 and field_error(missing.text, "reason")
    assert input_value(missing.text, "test_case_code") == "W-1"
    both = web.post("/quarantine", data={"project_id": project, "test_case_code": "W-1", "title": "t",
                                         "reason": "r", "_csrf_token": token})
    assert both.status_code == 400 and field_error(both.text, "test_case_code")
    added = web.post("/quarantine", data={"project_id": project, "test_case_code": "W-1", "reason": "slow vendor",
                                          "expires_at": "2099-05-01T10:00", "_csrf_token": token})
    assert added.status_code == 303
    page = web.get(f"/quarantine?project_id={project}")
    assert "slow vendor" in text_of(page.text) and every_post_form_has_csrf(page.text)
    [entry] = tenant.api.get("/api/v1/quarantine", params={"project_id": project}).json()["data"]
    assert entry["expires_at"] == "2099-05-01T10:00:00.000Z"
    ended = web.post(f"/quarantine/{entry['id']}/delete", data={"project_id": project, "_csrf_token": token})
    assert ended.status_code == 303
    assert tenant.api.get("/api/v1/quarantine", params={"project_id": project}).json()["data"] == []


def test_flaky_and_known_issues_pages(tenant: Tenant) -> None:
    project = tenant.create_project("Flip")["id"]
    cases(tenant, project, "FP-1")
    for status in ("PASSED", "FAILED", "PASSED", "FAILED", "PASSED"):  # judged from 5 runs on
        ingest(tenant, project, [{"test_case_code": "FP-1", "status": status}])
    web = tenant.web()
    flaky = web.get(f"/flaky?project_id={project}")
    assert flaky.status_code == 200
    assert "FP-1" in text_of(flaky.text) and "100%" in text_of(flaky.text)
    assert f"/quarantine?project_id={project}&amp;test_case_code=FP-1" in flaky.text
    known = web.get(f"/known-issues?project_id={project}")
    assert known.status_code == 200 and "No known issue in this project yet" in text_of(known.text)
    tenant.api.post("/api/v1/known-issues", json={"project_id": project, "pattern": "boom", "bug_ticket_key": "B-7"})
    listed = web.get(f"/known-issues?project_id={project}")
    assert "B-7" in text_of(listed.text) and every_post_form_has_csrf(listed.text)


def test_dashboard_shows_new_failures_top_clusters_flakiest_and_quarantine(tenant: Tenant) -> None:
    project, _, _ = _two_runs(tenant)
    tenant.api.post("/api/v1/quarantine", json={"project_id": project, "test_case_code": "W-3", "reason": "r"})
    page = tenant.web().get(f"/?project_id={project}")
    assert page.status_code == 200
    panel = text_of(page.text.split('id="failure-panel"', 1)[1].split('id="retest"', 1)[0])
    assert "New failures in Nightly 2" in panel and "payment provider answer" in panel
    assert "Top failure clusters, last 30 days" in panel and "3 failures" in panel  # the timeout, both runs
    assert "1 test quarantined" in panel
