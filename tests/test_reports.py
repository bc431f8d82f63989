"""Reports of runs, plans and milestones, and the run export, in-process (tests/inprocess.py; SQLite, or
PostgreSQL with TMS_TEST_DATABASE=postgres). The export read back through the real `tms ingest` runs against
a server process (tests/test_reports_export.py, which imports the helpers here).
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from pypdf import PdfReader

from tests.conftest import Tenant, assert_problem

ROOT = Path(__file__).resolve().parent.parent
EVIL = "<script>alert('x')</script> & \"quoted\""
KINDS = ("run", "plan", "milestone")

IN_PROCESS = True


def _ok(response: httpx.Response, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.text
    return response.json()  # type: ignore[no-any-return]


def _case(tenant: Tenant, project_id: str, code: str, title: str, section_id: str | None = None) -> dict[str, Any]:
    body = {"project_id": project_id, "code": code, "title": title, "section_id": section_id,
            "bdd_content": f"Feature: {code}\n  Scenario: it works\n    Given it works\n"}
    return _ok(tenant.api.post("/api/v1/cases", json=body), 201)["data"]


def _post_results(tenant: Tenant, run_id: str, results: list[dict[str, Any]]) -> None:
    response = tenant.api.post(f"/api/v1/runs/{run_id}/results", json={"results": results})
    assert response.status_code == 201, response.text


def _ingest(tenant: Tenant, project_id: str, results: list[dict[str, Any]], **run: Any) -> str:
    body = {"project_id": project_id, "results": results, **run}
    return str(_ok(tenant.api.post("/api/v1/ingest", json=body), 201)["run_id"])


def _results(tenant: Tenant, run_id: str) -> list[dict[str, Any]]:
    return _ok(tenant.api.get(f"/api/v1/runs/{run_id}/results", params={"limit": 5000}))["data"]  # type: ignore[no-any-return]


class World:
    """One project with two sections, a milestone, a plan of two environments and two ingested runs."""

    def __init__(self, tenant: Tenant) -> None:
        api = tenant.api
        self.tenant = tenant
        self.project = tenant.create_project(f"Shop {EVIL}")
        pid = self.project["id"]
        checkout = _ok(api.post("/api/v1/sections", json={"project_id": pid, "name": f"Checkout {EVIL}"}), 201)
        self.section = checkout["data"]
        self.cases = [
            _case(tenant, pid, "RPT-1", f"Pays by card {EVIL}", self.section["id"]),
            _case(tenant, pid, "RPT-2", "Pays by voucher", self.section["id"]),
            _case(tenant, pid, "RPT-3", "Logs in"),
        ]
        self.milestone = _ok(api.post("/api/v1/milestones", json={"project_id": pid, "name": f"Release {EVIL}"}),
                             201)["data"]
        self.plan = _ok(api.post("/api/v1/plans", json={
            "project_id": pid, "name": f"Regression {EVIL}", "milestone_id": self.milestone["id"],
            "case_ids": ["RPT-1", "RPT-2", "RPT-3"], "environments": ["staging", "prod"]}), 201)["data"]
        runs = {r["environment"]: r for r in _ok(api.get("/api/v1/runs", params={"plan_id": self.plan["id"]}))["data"]}
        _post_results(tenant, runs["staging"]["id"], [
            {"test_case_code": "RPT-1", "status": "FAILED", "error_message": f"expected {EVIL}",
             "error_stack": f"expected {EVIL}\n  at pay()", "bug_ticket_key": "BUG-7",
             "bug_ticket_url": "https://tracker.example/BUG-7"},
            {"test_case_code": "RPT-2", "status": "PASSED", "duration_ms": 40},
        ])
        _post_results(tenant, runs["prod"]["id"], [{"test_case_code": "RPT-1", "status": "PASSED"}])
        # two runs of one environment outside the plan: the second one's trend compares with the first
        self.first_run = _ingest(tenant, pid, [
            {"test_case_code": "RPT-1", "status": "PASSED"}, {"test_case_code": "RPT-2", "status": "FAILED",
                                                              "error_message": "card declined"},
        ], run_name="nightly 1", environment="ci")
        self.run = _ingest(tenant, pid, [
            {"test_case_code": "RPT-1", "status": "FAILED", "error_message": f"boom {EVIL}"},
            {"test_case_code": "RPT-2", "status": "PASSED"},
            {"test_case_code": "RPT-3", "status": "SKIPPED"},
            {"title": f"unlinked {EVIL}", "status": "BROKEN", "error_message": "setup failed"},
        ], run_name=f"nightly 2 {EVIL}", environment="ci")
        self.ids = {"run": self.run, "plan": self.plan["id"], "milestone": self.milestone["id"]}

    def path(self, kind: str) -> str:
        return f"/api/v1/{kind}s/{self.ids[kind]}/report"


@pytest.fixture
def world(tenant: Tenant) -> World:
    return World(tenant)


# ---- JSON -------------------------------------------------------------------------------------------

def test_run_report_json(world: World) -> None:
    report = _ok(world.tenant.client("read").get(world.path("run")))["data"]
    assert report["kind"] == "run" and report["name"] == f"nightly 2 {EVIL}" and report["environment"] == "ci"
    totals = report["totals"]
    assert (totals["total"], totals["passed"], totals["failed"], totals["broken"], totals["skipped"]) == (4, 1, 1, 1, 1)
    assert totals["pass_rate"] == 25.0 and totals["progress"] == 100.0
    [env] = report["environments"]
    assert env["environment"] == "ci" and env["runs"] == 1
    sections = {s["section"]: s["counts"] for s in report["sections"]}
    assert sections[f"Checkout {EVIL}"]["total"] == 2 and sections["(no section)"]["skipped"] == 1
    assert report["unlinked"]["broken"] == 1
    [assignee] = report["assignees"]
    assert assignee["name"] == "Unassigned" and assignee["counts"]["total"] == 3
    assert sorted(f["status"] for f in report["failures"]) == ["BROKEN", "FAILED"]
    assert report["failures_total"] == 2 and report["clusters_total"] == 2
    assert all(c["new"] for c in report["clusters"])
    trend = report["trend"]
    assert trend["previous_run_id"] == world.first_run and trend["previous"]["pass_rate"] == 50.0
    assert trend["new_failures"] == 1 and trend["fixed"] == 1 and trend["pass_rate_change"] == -25.0
    assert [p["run_id"] for p in trend["history"]] == [world.first_run, world.run]


def test_plan_and_milestone_reports_json(world: World) -> None:
    plan = _ok(world.tenant.api.get(world.path("plan"), params={"format": "json"}))["data"]
    assert plan["kind"] == "plan" and plan["runs_total"] == 2 and plan["trend"] is None
    assert [e["environment"] for e in plan["environments"]] == ["prod", "staging"]
    assert plan["totals"]["total"] == 6  # three placeholders per environment
    assert plan["totals"]["passed"] == 2 and plan["totals"]["failed"] == 1 and plan["totals"]["unknown"] == 3
    [cluster] = plan["clusters"]
    assert cluster["bugs"] == [{"key": "BUG-7", "url": "https://tracker.example/BUG-7"}]
    assert plan["failures"][0]["bug_ticket_key"] == "BUG-7" and plan["failures"][0]["environment"] == "staging"
    milestone = _ok(world.tenant.api.get(world.path("milestone")))["data"]
    assert milestone["kind"] == "milestone" and milestone["status"] == "OPEN"
    assert milestone["totals"] == plan["totals"] and milestone["runs_total"] == 2


def test_assignees_are_grouped(world: World) -> None:
    api = world.tenant.api
    me = _ok(api.get("/api/v1/users"))["data"][0]
    results = [r for r in _results(world.tenant, world.run) if r["test_case_code"] in ("RPT-1", "RPT-2")]
    _ok(api.post(f"/api/v1/runs/{world.run}/assign",
                 json={"result_ids": [r["id"] for r in results], "assignee_id": me["id"]}))
    report = _ok(api.get(world.path("run")))["data"]
    by_name = {a["name"]: a["counts"]["total"] for a in report["assignees"]}
    assert by_name == {me["name"] or me["email"]: 2, "Unassigned": 1}


# ---- HTML, PDF, CSV ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_html_is_self_contained_and_escaped(world: World, kind: str) -> None:
    response = world.tenant.client("read").get(world.path(kind), params={"format": "html"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    page = response.text
    assert "<script" not in page.lower()  # the titles' markup is text, and the report has no script of its own
    assert "&lt;script&gt;alert(" in page
    assert "<svg" in page and "<style>" in page
    for external in ('src="http', "src='http", 'href="http://', "<link", "@import", "url("):
        assert external not in page.replace('href="https://tracker.example/BUG-7"', "")
    assert "Pass rate" in page and "By section" in page and "By assignee" in page and "Failure clusters" in page


def test_html_links_only_web_bug_urls(tenant: Tenant) -> None:
    project = tenant.create_project("Links")
    run = _ingest(tenant, project["id"], [
        {"title": "a", "status": "FAILED", "error_message": "x", "bug_ticket_key": "B-1",
         "bug_ticket_url": "javascript:alert(1)"}], run_name="r")
    page = tenant.api.get(f"/api/v1/runs/{run}/report", params={"format": "html"}).text
    assert "javascript:" not in page and "B-1" in page


@pytest.mark.parametrize("kind", KINDS)
def test_pdf_text(world: World, kind: str) -> None:
    response = world.tenant.client("read").get(world.path(kind), params={"format": "pdf"})
    assert response.status_code == 200 and response.headers["content-type"] == "application/pdf"
    assert response.content.startswith(b"%PDF-")
    assert "attachment" in response.headers["content-disposition"]
    reader = PdfReader(io.BytesIO(response.content))
    text = "\n".join(page.extract_text() for page in reader.pages)
    assert f"{kind.capitalize()} report" in text
    assert "Totals" in text and "By section" in text and "Failure clusters" in text
    assert "<script>alert('x')</script>" in text  # drawn as text: a PDF has no markup to inject into
    if kind == "run":
        assert "boom" in text and "previous run" in text
    else:
        assert "BUG-7" in text and "staging" in text


@pytest.mark.parametrize("kind", KINDS)
def test_csv_report(world: World, kind: str) -> None:
    response = world.tenant.client("read").get(world.path(kind), params={"format": "csv"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode("utf-8-sig"))))
    groups = {row["group"] for row in rows}
    assert {"totals", "environment", "section", "assignee", "failure", "cluster"} <= groups
    [totals] = [row for row in rows if row["group"] == "totals"]
    report = _ok(world.tenant.api.get(world.path(kind)))["data"]
    assert int(totals["total"]) == report["totals"]["total"] and int(totals["failed"]) == report["totals"]["failed"]
    failures = [row for row in rows if row["group"] == "failure"]
    assert len(failures) == len(report["failures"])


def test_csv_cells_never_run_as_formulas(tenant: Tenant) -> None:
    project = tenant.create_project("Formulas")
    run = _ingest(tenant, project["id"], [
        {"title": "=HYPERLINK(\"http://evil\")", "status": "FAILED", "error_message": "+1"}], run_name="r")
    body = tenant.api.get(f"/api/v1/runs/{run}/report", params={"format": "csv"}).content.decode("utf-8-sig")
    failure = next(row for row in csv.DictReader(io.StringIO(body)) if row["group"] == "failure")
    assert failure["name"] == "'=HYPERLINK(\"http://evil\")" and failure["error_message"] == "'+1"


# ---- access -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_another_tenants_report_is_404(world: World, other_tenant: Tenant, kind: str) -> None:
    for fmt in ("json", "html", "pdf", "csv"):
        assert_problem(other_tenant.api.get(world.path(kind), params={"format": fmt}), 404)
    web = other_tenant.web()
    assert web.get(f"/{kind}s/{world.ids[kind]}/report").status_code == 404
    assert web.get(f"/{kind}s/{world.ids[kind]}/report/download", params={"format": "pdf"}).status_code == 404


def test_another_tenants_export_is_404(world: World, other_tenant: Tenant) -> None:
    for fmt in ("junit", "ctrf", "csv"):
        assert_problem(other_tenant.api.get(f"/api/v1/runs/{world.run}/export", params={"format": fmt}), 404)
    assert_problem(world.tenant.api.get("/api/v1/runs/nope/export"), 404)


def test_no_token_is_401_and_read_scope_is_enough(world: World) -> None:
    anonymous = world.tenant.server.http_client(timeout=30)
    for path in (world.path("run"), world.path("plan"), world.path("milestone"), f"/api/v1/runs/{world.run}/export"):
        assert_problem(anonymous.get(path), 401)
        assert world.tenant.client("read").get(path).status_code == 200


def test_bad_format_is_400(world: World) -> None:
    body = assert_problem(world.tenant.api.get(world.path("run"), params={"format": "docx"}), 400)
    assert "format" in json.dumps(body)
    assert_problem(world.tenant.api.get(f"/api/v1/runs/{world.run}/export", params={"format": "xlsx"}), 400)


# ---- web pages --------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_report_page_and_downloads(world: World, kind: str) -> None:
    web = world.tenant.web()
    detail = web.get(f"/{kind}s/{world.ids[kind]}")
    assert detail.status_code == 200 and f'href="/{kind}s/{world.ids[kind]}/report"' in detail.text
    page = web.get(f"/{kind}s/{world.ids[kind]}/report")
    assert page.status_code == 200 and "&lt;script&gt;" in page.text and "<script" not in page.text.lower()
    for fmt in ("html", "pdf", "csv", "json"):
        assert f"/report/download?format={fmt}" in page.text
        download = web.get(f"/{kind}s/{world.ids[kind]}/report/download", params={"format": fmt})
        assert download.status_code == 200, download.text
        assert download.headers["content-disposition"].startswith("attachment")
    pdf = web.get(f"/{kind}s/{world.ids[kind]}/report/download", params={"format": "pdf"})
    assert "Totals" in PdfReader(io.BytesIO(pdf.content)).pages[0].extract_text()
    assert web.get("/runs/nope/report").status_code == 404
    anonymous = world.tenant.server.http_client()
    assert anonymous.get(f"/{kind}s/{world.ids[kind]}/report").status_code in (302, 303, 401)


# ---- run export round trip through the real `tms ingest` -----------------------------------------------

def _ingest_file(tenant: Tenant, path: Path, project_id: str, *extra: str) -> dict[str, Any]:
    env = {**os.environ, "TMS_URL": tenant.server.url, "TMS_TOKEN": tenant.write_token}
    done = subprocess.run([sys.executable, "-m", "tms", "ingest", str(path), "--project", project_id,
                           "--run-name", "round trip", "--json", *extra],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


_COMPARED = ("test_case_code", "title", "status", "duration_ms", "error_message", "error_stack", "executed_at",
             "file", "line")


def _rows(tenant: Tenant, run_id: str) -> list[tuple[Any, ...]]:
    return sorted((tuple(r[k] for k in _COMPARED) for r in _results(tenant, run_id)), key=repr)


def _round_trip_results(fmt: str) -> list[dict[str, Any]]:
    """Results as tests write them: HTML, quotes, newlines and tabs in titles and messages, unicode,
    results without a message or duration, and two results of one title.

    What each format cannot hold (docs/reports.md) is left out of its data: JUnit has no UNKNOWN; CTRF
    has no message without a stack (its reader makes the stack from the message and the trace)."""
    results: list[dict[str, Any]] = [
        {"test_case_code": "RT-1", "title": f"checkout > pays by card {EVIL}", "status": "PASSED",
         "duration_ms": 1234, "executed_at": "2026-11-20T10:00:00.123Z", "file": f"tests/checkout {EVIL}.py",
         "line": 12},
        {"test_case_code": "RT-2", "title": "same title", "status": "FAILED", "duration_ms": 5,
         "error_message": f"AssertionError: 1 != 2 {EVIL}",
         "error_stack": f"AssertionError: 1 != 2 {EVIL}\n\tat line 3\r\n  ]]> <![CDATA[ \u00e9\u4e2d\U0001f600"},
        {"test_case_code": "RT-3", "title": "same title", "status": "BROKEN", "duration_ms": 0,
         "error_message": "fixture 'db' not found",
         **({"error_stack": "fixture 'db' not found\n  at setup"} if fmt == "ctrf" else {})},
        {"test_case_code": "RT-4", "title": "skipped one", "status": "SKIPPED"},
        {"title": "pytest > tests.test_x > test_unlinked", "status": "FAILED", "duration_ms": 987654321,
         "error_message": "boom", "error_stack": "boom\nTraceback (most recent call last):\n  x",
         "file": "tests/test_x.py"},
        {"title": "unlinked passes", "status": "PASSED", "duration_ms": 1},
    ]
    if fmt == "ctrf":
        results.append({"test_case_code": "RT-5", "title": "not run", "status": "UNKNOWN"})
    return results


def test_csv_export_is_a_spreadsheet(tenant: Tenant) -> None:
    project = tenant.create_project("Spreadsheet")
    _case(tenant, project["id"], "CSV-1", "Case")
    run = _ingest(tenant, project["id"], [
        {"test_case_code": "CSV-1", "status": "FAILED", "duration_ms": 12, "error_message": "a, \"b\"\nc",
         "error_stack": "trace"},
        {"title": "-unlinked", "status": "PASSED"}], run_name="r")
    response = tenant.client("read").get(f"/api/v1/runs/{run}/export", params={"format": "csv"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode("utf-8-sig"))))
    assert list(rows[0]) == ["test_case_code", "title", "status", "duration_ms", "executed_at", "error_message",
                             "error_stack", "framework", "comment", "bug_ticket_key", "bug_ticket_url"]
    assert rows[0]["test_case_code"] == "CSV-1" and rows[0]["status"] == "FAILED"
    assert rows[0]["duration_ms"] == "12" and rows[0]["error_message"] == "a, \"b\"\nc"
    assert rows[1]["title"] == "'-unlinked" and rows[1]["test_case_code"] == ""


def test_export_of_many_results_streams_every_one(tenant: Tenant, tmp_path: Path) -> None:
    """More results than one export page (1,000) on both tables, read back whole."""
    project = tenant.create_project("Big")
    codes = [f"BIG-{n}" for n in range(1, 1201)]
    rows = "".join(f'{code},Case {code},"Feature: F\n  Scenario: S\n    Given x\n"\n' for code in codes)
    created = tenant.api.post("/api/v1/cases/import", params={"project_id": project["id"]},
                              files={"file": ("c.csv", "code,title,bdd_content\n" + rows, "text/csv")})
    assert created.status_code == 201, created.text
    results = [{"test_case_code": code, "status": "PASSED", "duration_ms": 1} for code in codes]
    results += [{"title": f"unlinked {n}", "status": "FAILED", "error_message": f"m{n}"} for n in range(1100)]
    run = _ingest(tenant, project["id"], results, run_name="big")
    body = tenant.api.get(f"/api/v1/runs/{run}/export", params={"format": "ctrf"}).content
    tests = json.loads(body)["results"]["tests"]
    assert len(tests) == 2300 and len({t["name"] for t in tests}) == 2300
    assert sum(1 for t in tests if t.get("suite")) == 1200 and sum(t["status"] == "failed" for t in tests) == 1100


def test_report_clusters_follow_the_failure_rules(tenant: Tenant) -> None:
    """As the run page's clusters (tms.failures): failures that say nothing and manual failures never
    form a cluster in a report (issue 24/27), while automated failures of one cause do."""
    project = tenant.create_project("Cluster rules")["id"]
    for code in ("CR-1", "CR-2", "CR-3", "CR-4"):
        _case(tenant, project, code, f"Case {code}")
    run = _ingest(tenant, project, [
        {"test_case_code": "CR-1", "status": "FAILED"}, {"test_case_code": "CR-2", "status": "BROKEN"},
        {"test_case_code": "CR-3", "status": "FAILED", "error_message": "ValueError: boom 1"},
        {"test_case_code": "CR-4", "status": "FAILED", "error_message": "ValueError: boom 2"}])
    report = _ok(tenant.api.get(f"/api/v1/runs/{run}/report"))["data"]
    assert [(c["failures"], c["error_message"]) for c in report["clusters"]] == [(2, "ValueError: boom 1")]
    assert len(report["failures"]) == 4  # the silent ones are still listed as failures
    # a manual regression: two testers fail two cases with the same note; a note is not a CI cause
    made = _ok(tenant.api.post("/api/v1/runs", json={"project_id": project, "name": "By hand",
                                                     "test_case_ids": ["CR-1", "CR-2"]}), 201)["data"]
    for row in _results(tenant, made["id"]):
        _ok(tenant.api.patch(f"/api/v1/results/{row['id']}", json={"status": "FAILED", "comment": "page is blank"}))
    manual = _ok(tenant.api.get(f"/api/v1/runs/{made['id']}/report"))["data"]
    assert manual["clusters"] == [] and len(manual["failures"]) == 2
    # the CSV says the words people read
    rows = list(csv.DictReader(io.StringIO(tenant.api.get(f"/api/v1/runs/{run}/report", params={"format": "csv"})
                                           .content.decode("utf-8-sig"))))
    totals = next(row for row in rows if row["group"] == "totals")
    assert (totals["blocked"], totals["failed"]) == ("1", "3")
    assert {row["status"] for row in rows if row["group"] == "failure"} == {"Failed", "Blocked"}
