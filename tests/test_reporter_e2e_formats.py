"""`tms ingest` on the formats of issue 16, end to end: the real command against a real `tms serve`,
checked through the API, attachments included."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.conftest import Tenant
from tests.test_reporter_e2e import ROOT, create_case, ingest, results_of

FIXTURES = ROOT / "tests" / "fixtures"


def summary_of(done: Any) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def by_title(rows: list[dict[str, Any]], fragment: str) -> dict[str, Any]:
    found = [r for r in rows if fragment in (r["title"] or "")]
    assert len(found) == 1, (fragment, [r["title"] for r in rows])
    return found[0]


def test_playwright_json_with_retries_and_screenshots(tenant: Tenant) -> None:
    project = tenant.create_project("Web")
    for code in ("SHOP-1", "SHOP-2", "SHOP-3"):
        create_case(tenant, project["id"], code)
    summary = summary_of(ingest(tenant, str(FIXTURES / "playwright" / "playwright.json"), "--project",
                                project["id"], "--json"))
    assert (summary["tests"], summary["results"], summary["accepted"], summary["flaky"]) == (9, 8, 8, 1)
    files = summary["attachments"]
    # PNG screenshots, trace zips and the text log go up; Playwright's error-context.md is no accepted type
    skipped = {Path(s["file"]).name: s["reason"] for s in files["skipped"]}
    assert set(skipped) == {"error-context.md"} and "type not accepted" in skipped["error-context.md"]
    assert files["uploaded"] == files["found"] - len(files["skipped"]) > 0

    rows = results_of(tenant, summary["run_id"])
    wrong = by_title(rows, "total wrong on purpose")
    assert wrong["status"] == "FAILED" and "attempts: 2 (FAILED, FAILED)" in wrong["comment"]
    names = sorted(a["fileName"] for a in wrong["attachments"])
    assert [n for n in names if n.endswith(".png")] == ["screenshot (attempt 1).png", "screenshot (attempt 2).png"]
    assert "trace (attempt 1).zip" in names
    flaky = by_title(rows, "flaky: passes on retry")
    assert flaky["status"] == "PASSED" and "flaky: passed only on retry" in flaky["comment"]
    assert by_title(rows, "attaches a log file")["attachments"][0]["fileName"] == "server log.txt"
    linked = {r["test_case_code"]: r["status"] for r in rows if r["test_case_code"]}
    assert linked == {"SHOP-1": "PASSED", "SHOP-2": "PASSED", "SHOP-3": "FAILED"}
    shot = next(a for a in wrong["attachments"] if a["fileName"].endswith(".png"))
    download = tenant.api.get(f"/api/v1/attachments/{shot['id']}")
    assert download.status_code == 200 and download.content.startswith(b"\x89PNG")


def test_ctrf_allure_and_trx_merge_into_one_run(tenant: Tenant, tmp_path: Path) -> None:
    project = tenant.create_project("Mixed")
    for code in ("SHOP-1", "SHOP-2", "SHOP-4", "SHOP-60", "SHOP-61"):
        create_case(tenant, project["id"], code)
    # the reports arrive as CI artifacts in another folder: attachment paths are found by their tail
    allure = tmp_path / "allure-results"
    shutil.copytree(FIXTURES / "allure" / "results", allure)
    done = ingest(tenant, str(allure), str(FIXTURES / "ctrf" / "pytest-ctrf.json"),
                  str(FIXTURES / "trx" / "mstest.trx"), "--project", project["id"], "--run-name", "mixed",
                  "--json")
    summary = summary_of(done)
    assert summary["tests"] == 12 + 12 + 6
    assert summary["rejected"] == 1  # SHOP-3 (Allure tag) is no case here
    assert [e["test_case_code"] for e in summary["errors"]] == ["SHOP-3"]
    files = summary["attachments"]
    reasons = {Path(s["file"]).name: s["reason"] for s in files["skipped"]}
    # the Allure screenshot belongs to the rejected SHOP-3 result; the TRX names a file that is not there
    assert reasons.pop("missing-trace.zip") == "file not found"
    [(screenshot, reason)] = reasons.items()
    assert screenshot.endswith("-attachment.png") and reason == "its result was rejected by the service"
    assert files["uploaded"] == 1

    rows = results_of(tenant, summary["run_id"])
    total = next(r for r in rows if r["test_case_code"] == "SHOP-61")
    assert total["status"] == "FAILED" and [a["fileName"] for a in total["attachments"]] == ["checkout.png"]
    assert next(r for r in rows if r["test_case_code"] == "SHOP-60")["status"] == "PASSED"
    # the same pytest suite came as Allure and as CTRF: SHOP-2 combines both (worst status), SHOP-4 from Allure
    assert next(r for r in rows if r["test_case_code"] == "SHOP-2")["status"] == "FAILED"
    assert next(r for r in rows if r["test_case_code"] == "SHOP-4")["status"] == "PASSED"
    broken = [r for r in rows if r["title"] and r["title"].endswith("test_orders_need_database")]
    assert {r["status"] for r in broken} == {"BROKEN"}


def test_xml_formats_robot_testng_and_gotest(tenant: Tenant) -> None:
    project = tenant.create_project("Backends")
    for code in ("SHOP-20", "SHOP-21", "SHOP-22", "SHOP-30", "SHOP-40", "SHOP-41"):
        create_case(tenant, project["id"], code)
    summary = summary_of(ingest(tenant, str(FIXTURES / "robot" / "output.xml"),
                                str(FIXTURES / "testng" / "testng-results.xml"),
                                str(FIXTURES / "gotest" / "go-test.json"), "--project", project["id"], "--json"))
    assert summary["rejected"] == 0 and summary["flaky"] == 3  # one flaky test in each
    rows = results_of(tenant, summary["run_id"])
    linked = {r["test_case_code"]: r["status"] for r in rows if r["test_case_code"]}
    assert linked == {"SHOP-20": "PASSED", "SHOP-21": "FAILED", "SHOP-22": "PASSED", "SHOP-30": "PASSED",
                      "SHOP-40": "PASSED", "SHOP-41": "FAILED"}
    assert {r["framework"] for r in rows} == {"robot", "testng", "go"}


def test_a_broken_file_in_a_directory_does_not_hide_the_rest(tenant: Tenant, tmp_path: Path) -> None:
    project = tenant.create_project("Partial")
    shutil.copy(FIXTURES / "nunit" / "pytest-nunit.xml", tmp_path / "nunit.xml")
    shutil.copy(FIXTURES / "xunit" / "xunit-dotnet.xml", tmp_path / "xunit.xml")
    (tmp_path / "cut.json").write_bytes((FIXTURES / "ctrf" / "pytest-ctrf.json").read_bytes()[:500])
    done = ingest(tenant, str(tmp_path), "--project", project["id"], "--json")
    assert done.returncode == 1
    assert f"{tmp_path / 'cut.json'}:" in done.stderr and "truncated" in done.stderr
    summary = json.loads(done.stdout)
    # 10 NUnit + 8 xUnit results; SHOP-2, SHOP-70 and SHOP-71 are no cases of this project
    assert (summary["accepted"], summary["rejected"]) == (15, 3)
    assert summary["unreadable"][0]["file"] == str(tmp_path / "cut.json")
    assert len(results_of(tenant, summary["run_id"])) == 15

    strict = ingest(tenant, str(tmp_path), "--project", project["id"], "--strict")
    assert strict.returncode == 1 and "nothing was sent (--strict)" in strict.stderr
    runs = tenant.api.get(f"/api/v1/runs?project_id={project['id']}").json()["data"]
    assert len(runs) == 1


def test_format_flag_forces_a_parser(tenant: Tenant, tmp_path: Path) -> None:
    project = tenant.create_project("Forced")
    odd = tmp_path / "results.log"
    odd.write_bytes((FIXTURES / "gotest" / "go-test.json").read_bytes())
    done = ingest(tenant, str(odd), "--project", project["id"], "--format", "gotest", "--json")
    assert summary_of(done)["tests"] == 13
    wrong = ingest(tenant, str(odd), "--project", project["id"], "--format", "trx")
    assert wrong.returncode == 1 and f"{odd}:1: malformed XML" in wrong.stderr
    bad = ingest(tenant, str(odd), "--project", project["id"], "--format", "mstest")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
