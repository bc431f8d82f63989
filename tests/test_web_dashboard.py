"""Web interface: the dashboard of the active project (charts, failing, flaky, unlinked, retest queue)."""

from __future__ import annotations

import re

from tests.conftest import Tenant
from tests.web_helpers import HTML, text_of

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)

FEATURE = "Feature: f\n  Scenario: s\n    Given a step\n"


def _ingest(tenant: Tenant, project_id: str, name: str, statuses: dict[str, str], unlinked: int = 0) -> None:
    results = [{"test_case_code": code, "status": status} for code, status in statuses.items()]
    results += [{"title": f"unlinked {i}", "status": "PASSED"} for i in range(unlinked)]
    response = tenant.api.post("/api/v1/ingest", json={"project_id": project_id, "run_name": name,
                                                       "results": results})
    assert response.status_code == 201, response.text


def test_dashboard_without_projects_guides_the_user(tenant: Tenant) -> None:
    page = tenant.web().get("/", headers=HTML)
    assert page.status_code == 200 and "Create your first project" in page.text
    tenant.create_project("Idle")  # through the API: created inactive, as SPEC says
    only = tenant.web().get("/", headers=HTML).text  # the only project is the context all the same (issue 24)
    assert "No runs in this project yet" in only and "Idle" in only and "Choose the active project" not in only
    tenant.create_project("Other")
    assert "Choose the active project" in tenant.web().get("/", headers=HTML).text


def test_dashboard_of_active_project(tenant: Tenant) -> None:
    project = tenant.create_project("Shop")
    codes = []
    for title, automation in (("Stable", "AUTOMATED"), ("Wobbly", "MANUAL"), ("Marked", "FLAKY")):
        case = tenant.api.post("/api/v1/cases", json={"title": title, "bdd_content": FEATURE,
                                                      "project_id": project["id"],
                                                      "automation_status": automation}).json()["data"]
        codes.append(case["code"])
    stable, wobbly, marked = codes
    _ingest(tenant, project["id"], "Run one", {stable: "PASSED", wobbly: "FAILED", marked: "PASSED"}, unlinked=2)
    _ingest(tenant, project["id"], "Run two", {stable: "PASSED", wobbly: "PASSED", marked: "BROKEN"})
    _ingest(tenant, project["id"], "Run three", {stable: "PASSED", wobbly: "FAILED", marked: "SKIPPED"})
    web = tenant.web()
    web.post(f"/projects/{project['id']}/activate")
    page = web.get("/", headers=HTML)
    assert page.status_code == 200
    html, text = page.text, text_of(page.text)
    # charts: inline SVG with accessible names, nothing loaded from elsewhere
    assert html.count('<svg class="chart"') == 2
    assert '<title id="runs-chart-t">Result mix of the last runs</title>' in html
    assert "Run three: 1 passed, 1 failed, 1 skipped" in html
    # under the columns, oldest first: the day of the first run, then "latest" (never a countdown 3 2 1)
    ticks = re.findall(r'class="tick" text-anchor="middle">([^<]*)</text>', html.split('id="runs-chart-t"')[1])
    assert ticks[-1] == "latest" and ticks[:-1] and all(re.fullmatch(r"[A-Z][a-z]{2} \d{1,2}", t) for t in ticks[:-1])
    legend = html.split('id="mix-title"')[1].split("<svg")[0]
    assert "blocked" in legend and "untested" in legend and "broken" not in legend
    assert "Run one 80%" in html and "Run two 67%" in html and "Run three 50%" in html
    assert "<script src=\"http" not in html and "<link rel=\"stylesheet\" href=\"http" not in html
    # figures
    assert "50% pass rate, latest run" in text
    assert "3 runs" in text and "3 test cases" in text and "2 unlinked results" in text
    failing = html.split('id="failing-title"')[1].split("</section>")[0]
    assert failing.index(wobbly) < failing.index(marked) and stable not in failing
    assert "2 of 3" in failing
    flaky = html.split('id="flaky-title"')[1].split("</section>")[0]
    assert marked in flaky and wobbly in flaky and stable not in flaky
    assert 'id="retest-title"' in html and "No case waits for a retest" in html


def test_retest_queue_lists_flagged_cases(tenant: Tenant) -> None:
    project = tenant.create_project("Shop")
    case = tenant.api.post("/api/v1/cases", json={"title": "Flag me", "bdd_content": FEATURE,
                                                  "project_id": project["id"]}).json()["data"]
    web = tenant.web()
    web.post(f"/projects/{project['id']}/activate")
    assert web.post(f"/cases/{case['code']}/retest", data={"needs_retest": "true"}).status_code == 303
    page = web.get("/", headers=HTML).text
    queue = page.split('id="retest-title"')[1]
    assert case["code"] in queue and re.search(r"Retest queue <span[^>]*>\(1\)", page)


def test_dashboard_of_another_tenants_project_is_404(tenant: Tenant, other_tenant: Tenant) -> None:
    theirs = other_tenant.create_project("Theirs")
    response = tenant.web().get(f"/?project_id={theirs['id']}", headers=HTML)
    assert response.status_code == 404 and "Theirs" not in response.text
