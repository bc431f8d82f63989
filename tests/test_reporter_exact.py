"""Issue 22 item 13 and issue 24: the reporter never reads outside a report's folder, refuses deep XML
nesting with a clear message, and never drops or merges a test silently."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tms.reporter import attachments as report_files
from tms.reporter.allure import parse_allure
from tms.reporter.cli import PARSERS, _parse_all
from tms.reporter.console import Console
from tms.reporter.detect import detect
from tms.reporter.files import expand
from tms.reporter.mapping import to_items
from tms.reporter.model import MAX_XML_DEPTH, RefusedPath, ReportError, TestOutcome

FIXTURES = Path(__file__).parent / "fixtures"


def parse_paths(*paths: Path | str) -> tuple[list[TestOutcome], list[ReportError]]:
    """What `tms ingest PATH...` reads: files found, detected, parsed, repeated tests handled."""
    arguments = [str(p) for p in paths]
    files, _ = expand(arguments)
    outcomes, _, errors = _parse_all(arguments, files, Console(None, False, io.StringIO(), io.StringIO()))
    return outcomes, errors


def titles(outcomes: list[TestOutcome]) -> list[str]:
    return [item.title for item in to_items(outcomes)]


def allure_result(folder: Path, name: str, **fields: Any) -> Path:
    body = {"uuid": name, "historyId": name, "name": name, "status": "passed", "start": 1, "stop": 2, **fields}
    path = folder / f"{name}-result.json"
    path.write_text(json.dumps(body))
    return path


# --- issue 22 item 13: files outside the results folder ------------------------------------------------

def test_allure_attachment_outside_the_results_folder_is_refused_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("token=hunter2")
    (tmp_path / "other.json").write_text("{}")
    results = tmp_path / "ci" / "allure-results"
    results.mkdir(parents=True)
    (results / "shot.png").write_bytes(b"\x89PNG")
    (results / "link.txt").symlink_to(secret)
    attachments = [{"name": "up", "source": "../../secret.txt", "type": "text/plain"},
                   {"name": "absolute", "source": str(tmp_path / "other.json")},
                   {"name": "symlink", "source": "link.txt"},
                   {"name": "ok", "source": "shot.png"}]
    allure_result(results, "a", attachments=attachments)
    outcomes, errors = parse_allure([str(results / "a-result.json")])
    assert errors == []
    files = outcomes[0].attachments
    assert [name for name, _ in files] == ["up", "absolute", "symlink", "ok"]
    assert [isinstance(path, RefusedPath) for _, path in files] == [True, True, True, False]
    assert files[3][1] == os.path.realpath(results / "shot.png")
    planned, skipped = report_files.plan([("r1", files)])
    assert [p.name for p in planned] == ["ok"]
    assert [s["name"] for s in skipped] == ["up", "absolute", "symlink"]
    assert all("outside the results folder" in s["reason"] for s in skipped)


# --- issue 22 item 13: nesting --------------------------------------------------------------------------

DEEP = 200_000


def deep_files(folder: Path) -> dict[str, Path]:
    n = DEEP
    made = {
        "junit": '<testsuites>' + '<testsuite name="s">' * n + '<testcase name="t"/>' + '</testsuite>' * n
                 + '</testsuites>',
        "nunit": '<test-run>' + '<test-suite name="s" type="TestSuite">' * n + '<test-case name="t" result="Passed"/>'
                 + '</test-suite>' * n + '</test-run>',
        "nunit-in-test": '<test-run><test-suite name="s"><test-case name="t" result="Failed">' + '<x>' * n
                         + '</x>' * n + '</test-case></test-suite></test-run>',
        "robot": '<robot><suite name="s"><test name="t">' + '<kw name="k">' * n + '</kw>' * n
                 + '<status status="PASS"/></test></suite></robot>',
        "trx": '<TestRun><Results>' + '<x>' * n + '</x>' * n + '</Results></TestRun>',
        "xunit": '<assemblies><assembly name="a">' + '<collection name="c">' * n + '</collection>' * n
                 + '</assembly></assemblies>',
        "testng": '<testng-results><suite name="s">' + '<test name="t">' * n + '</test>' * n
                  + '</suite></testng-results>',
        # a deep nesting that fits in one 64 kB chunk, inside and outside a test
        "small-suites": '<test-run>' + '<test-suite name="s">' * 3000 + '<test-case name="t" result="Passed"/>'
                        + '</test-suite>' * 3000 + '</test-run>',
        "small-in-test": '<test-run><test-suite name="s"><test-case name="t" result="Failed">' + '<x>' * 3000
                         + '</x>' * 3000 + '</test-case></test-suite></test-run>',
    }
    paths = {}
    for name, text in made.items():
        paths[name] = folder / f"{name}.xml"
        paths[name].write_text(text)
    return paths


def test_every_xml_format_refuses_nesting_past_the_limit_quickly_naming_file_and_limit(tmp_path: Path) -> None:
    for name, path in deep_files(tmp_path).items():
        kind = detect(str(path))
        assert kind is not None, name
        started = time.perf_counter()
        with pytest.raises(ReportError) as caught:
            PARSERS[kind](str(path))
        assert time.perf_counter() - started < 3, name
        assert caught.value.path == str(path), name
        assert f"nested deeper than {MAX_XML_DEPTH} levels" in str(caught.value), (name, str(caught.value))


def test_nesting_up_to_the_limit_is_read(tmp_path: Path) -> None:
    depth = MAX_XML_DEPTH - 3  # the root, the innermost suite's case and its failure stay within it
    path = tmp_path / "deep.xml"
    path.write_text('<testsuites>' + '<testsuite name="s">' * depth + '<testcase name="t"><failure/></testcase>'
                    + '</testsuite>' * depth + '</testsuites>')
    outcomes = PARSERS["junit"](str(path))
    assert [o.status for o in outcomes] == ["FAILED"]
    path = tmp_path / "nunit.xml"
    path.write_text('<test-run>' + '<test-suite name="s" type="TestSuite">' * depth
                    + '<test-case name="t" result="Passed"/>' + '</test-suite>' * depth + '</test-run>')
    assert [o.status for o in PARSERS["nunit"](str(path))] == ["PASSED"]


# --- issue 24: Allure detection and files never skipped in silence ------------------------------------

def long_failure(folder: Path, name: str, trace_kb: int) -> Path:
    """allure-python's key order: statusDetails and steps before uuid and historyId."""
    body = {"name": name, "status": "failed",
            "statusDetails": {"message": "AssertionError: boom", "trace": "  File x.py, line 1\n" * (trace_kb * 50)},
            "steps": [{"name": f"step {i}", "status": "passed"} for i in range(20)],
            "start": 1, "stop": 5, "uuid": name, "historyId": f"h-{name}", "labels": [{"name": "suite", "value": "s"}]}
    path = folder / f"{name}-result.json"
    path.write_text(json.dumps(body))
    return path


@pytest.mark.parametrize("trace_kb", [5, 200])
def test_allure_result_with_its_keys_after_a_long_trace_is_detected(tmp_path: Path, trace_kb: int) -> None:
    path = long_failure(tmp_path, "long", trace_kb)
    assert detect(str(path)) == "allure"
    outcomes, errors = parse_paths(tmp_path)
    assert errors == [] and [(o.name, o.status) for o in outcomes] == [("long", "FAILED")]


def test_an_unreadable_file_of_an_allure_results_folder_is_an_error_not_skipped(tmp_path: Path) -> None:
    results = tmp_path / "allure-results"
    results.mkdir()
    allure_result(results, "good")
    (results / "cut-result.json").write_text('{"name": "cut", "status": "passed", "uuid": "c')
    (results / "odd-result.json").write_text('{"name": "odd"}')
    (results / "1a-attachment.json").write_text('{"an": "attachment, not a result"}')
    outcomes, errors = parse_paths(results)
    assert [o.name for o in outcomes] == ["good"]
    assert sorted(os.path.basename(e.path) for e in errors) == ["cut-result.json", "odd-result.json"]
    assert "truncated" in str(errors[0]) or "truncated" in str(errors[1])


def test_strict_fails_on_an_unreadable_allure_result_and_the_summary_counts_it(tmp_path: Path) -> None:
    import subprocess
    import sys

    results = tmp_path / "allure-results"
    results.mkdir()
    allure_result(results, "good")
    (results / "cut-result.json").write_text('{"name": "cut", "status": "pass')
    base = [sys.executable, "-m", "tms", "ingest", str(results), "--project", "p", "--dry-run"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TMS_")}
    strict = subprocess.run([*base, "--strict"], capture_output=True, text=True, env=env, timeout=60)
    assert strict.returncode == 1 and "cut-result.json" in strict.stderr and "nothing was sent" in strict.stderr
    loose = subprocess.run([*base, "--json"], capture_output=True, text=True, env=env, timeout=60)
    summary = json.loads(loose.stdout)
    assert [os.path.basename(u["file"]) for u in summary["unreadable"]] == ["cut-result.json"]


# --- issue 24: repeated tests are retries only where the format says so --------------------------------

def test_pytest_rerunfailures_attempts_fold_into_one_result(tmp_path: Path) -> None:
    outcomes, errors = parse_paths(FIXTURES / "exact" / "pytest-rerunfailures.xml")
    assert errors == []
    found = {o.name: (o.status, o.attempts) for o in outcomes}
    assert found == {
        "test_flaky_passes_on_second_try": ("PASSED", ["FAILED"]),
        "test_always_fails": ("FAILED", ["FAILED", "FAILED"]),
        "test_rows_with_the_same_id[same0]": ("PASSED", []),
        "test_rows_with_the_same_id[same1]": ("PASSED", []),
        "test_rows_with_the_same_id[other]": ("PASSED", []),
        "test_passes": ("PASSED", []),
    }


def test_same_named_junit_cases_are_tests_of_their_own_titled_apart(tmp_path: Path) -> None:
    report = tmp_path / "rows.xml"
    report.write_text('<testsuite name="s" tests="4"><testcase classname="c" name="row"/>'
                      '<testcase classname="c" name="row"><failure message="bad"/></testcase>'
                      '<testcase classname="c" name="row"/><testcase classname="c" name="row [2]"/></testsuite>')
    outcomes, _ = parse_paths(report)
    assert [(o.name, o.status, o.attempts) for o in outcomes] == [
        ("row", "PASSED", []), ("row [3]", "FAILED", []), ("row [4]", "PASSED", []), ("row [2]", "PASSED", [])]
    assert titles(outcomes) == ["s > c > row", "s > c > row [3]", "s > c > row [4]", "s > c > row [2]"]


def test_the_same_report_twice_is_two_results_each(tmp_path: Path) -> None:
    for name in ("a.xml", "b.xml"):
        (tmp_path / name).write_text('<testsuite name="s"><testcase name="t"><failure/></testcase></testsuite>')
    outcomes, _ = parse_paths(tmp_path / "a.xml", tmp_path / "b.xml")
    assert [(o.name, o.attempts) for o in outcomes] == [("t", []), ("t [2]", [])]


def test_allure_results_without_history_id_are_never_merged(tmp_path: Path) -> None:
    for name in ("one", "two"):
        (tmp_path / f"{name}-result.json").write_text(json.dumps(
            {"uuid": name, "name": "same", "status": "passed" if name == "one" else "failed"}))
    outcomes, errors = parse_paths(tmp_path)
    assert errors == [] and sorted((o.name, o.status) for o in outcomes) == [("same", "PASSED"), ("same [2]", "FAILED")]


def test_testng_invocations_are_tests_of_their_own_but_a_retried_attempt_folds(tmp_path: Path) -> None:
    report = tmp_path / "testng-results.xml"
    method = '<test-method status="{}" name="{}" signature="x()" duration-ms="1" started-at="2024-01-01T00:00:00Z"{}/>'
    report.write_text('<testng-results><suite name="S"><test name="T"><class name="C">'
                      + method.format("PASS", "twice", "") + method.format("PASS", "twice", "")
                      + method.format("SKIP", "flaky", ' retried="true"') + method.format("PASS", "flaky", "")
                      + '</class></test></suite></testng-results>')
    outcomes, _ = parse_paths(report)
    assert [(o.name, o.status, o.attempts) for o in outcomes] == [
        ("twice", "PASSED", []), ("twice [2]", "PASSED", []), ("flaky", "PASSED", ["FAILED"])]


# --- issue 24: JUnit status attribute, NUnit assembly roots and titles, go subtest names ----------------

@pytest.mark.parametrize(("attributes", "status"), [
    ('status="disabled"', "SKIPPED"), ('status="skipped"', "SKIPPED"), ('status="notrun"', "SKIPPED"),
    ('status="notrun" result="suppressed"', "SKIPPED"), ('status="run" result="completed"', "PASSED"),
    ('status="failed"', "FAILED"), ('status="error"', "BROKEN"), ('status="passed"', "PASSED"),
])
def test_junit_status_attribute_is_read(tmp_path: Path, attributes: str, status: str) -> None:
    report = tmp_path / "status.xml"
    report.write_text(f'<testsuite name="s"><testcase name="t" {attributes}/>'
                      f'<testcase name="u" {attributes}><system-out>hello</system-out></testcase></testsuite>')
    outcomes = PARSERS["junit"](str(report))
    assert [o.status for o in outcomes] == [status, status]


NUNIT_ASSEMBLY = """<?xml version="1.0" encoding="utf-8"?>
<test-suite type="Assembly" id="0-1005" name="Shop.Tests.dll" fullname="/src/Shop.Tests/bin/Shop.Tests.dll"
  runstate="Runnable" testcasecount="3" result="Failed" total="3" passed="2" failed="1">
 <test-suite type="TestSuite" id="0-1006" name="Shop" fullname="Shop" testcasecount="3" result="Failed">
  <test-suite type="TestSuite" id="0-1007" name="Tests" fullname="Shop.Tests" testcasecount="3" result="Failed">
   <test-suite type="TestFixture" id="0-1000" name="CartTests" fullname="Shop.Tests.CartTests"
     classname="Shop.Tests.CartTests" testcasecount="1" result="Passed">
    <test-case id="0-1001" name="Adds" fullname="Shop.Tests.CartTests.Adds" methodname="Adds"
      classname="Shop.Tests.CartTests" result="Passed" duration="0.01"/>
   </test-suite>
   <test-suite type="ParameterizedFixture" id="0-1008" name="PriceTests" fullname="Shop.Tests.PriceTests"
     testcasecount="2" result="Failed">
    <test-suite type="TestFixture" id="0-1002" name="PriceTests(&quot;EUR&quot;)"
      fullname="Shop.Tests.PriceTests(&quot;EUR&quot;)" classname="Shop.Tests.PriceTests" result="Failed">
     <test-suite type="ParameterizedMethod" id="0-1009" name="Rounds"
       fullname="Shop.Tests.PriceTests(&quot;EUR&quot;).Rounds" classname="Shop.Tests.PriceTests" result="Failed">
      <test-case id="0-1003" name="Rounds(1.005m)" fullname="Shop.Tests.PriceTests(&quot;EUR&quot;).Rounds(1.005m)"
        methodname="Rounds" classname="Shop.Tests.PriceTests" result="Failed" duration="0.02">
       <failure><message>Expected 1.01 but was 1.00</message></failure>
      </test-case>
      <test-case id="0-1004" name="Rounds(2m)" fullname="Shop.Tests.PriceTests(&quot;EUR&quot;).Rounds(2m)"
        methodname="Rounds" classname="Shop.Tests.PriceTests" result="Passed" duration="0.01"/>
     </test-suite>
    </test-suite>
   </test-suite>
  </test-suite>
 </test-suite>
</test-suite>
"""


def test_nunit_assembly_root_is_recognised_and_titles_name_the_namespace_once(tmp_path: Path) -> None:
    report = tmp_path / "TestResult.xml"
    report.write_text(NUNIT_ASSEMBLY)
    assert detect(str(report)) == "nunit"
    outcomes, errors = parse_paths(tmp_path)
    assert errors == []
    assert titles(outcomes) == ["Shop.Tests.CartTests > Adds", 'Shop.Tests.PriceTests("EUR") > Rounds(1.005m)',
                                'Shop.Tests.PriceTests("EUR") > Rounds(2m)']


def test_a_long_title_keeps_the_tests_own_name(tmp_path: Path) -> None:
    namespace = ".".join(f"Namespace{i:03d}" for i in range(60))
    report = tmp_path / "long.xml"
    report.write_text(f'<test-run><test-suite type="TestFixture" name="C" fullname="{namespace}.C">'
                      f'<test-case name="Pays_by_card" classname="{namespace}.C" result="Passed"/>'
                      '</test-suite></test-run>')
    outcomes, _ = parse_paths(report)
    title = titles(outcomes)[0]
    assert len(title) == 500 and title.endswith("… > Pays_by_card") and title.startswith("Namespace000.")


def go_events(*events: tuple[str, str]) -> str:
    return "".join(json.dumps({"Time": "2024-05-01T10:00:00Z", "Action": action, "Package": "shop/calc",
                               "Test": test, **({"Elapsed": 0.01} if action in ("pass", "fail") else {})}) + "\n"
                   for action, test in events)


def test_go_subtest_names_holding_a_slash_stay_one_level(tmp_path: Path) -> None:
    stream = tmp_path / "go.json"
    stream.write_text(go_events(
        ("run", "TestDiv"), ("run", "TestDiv/1_/_2_=_0"), ("run", "TestDiv/nested"), ("run", "TestDiv/nested/a/b"),
        ("fail", "TestDiv/1_/_2_=_0"), ("pass", "TestDiv/nested/a/b"), ("pass", "TestDiv/nested"),
        ("fail", "TestDiv"), ("fail", "shop/calc"[:0])))
    outcomes = PARSERS["gotest"](str(stream))
    by_name = {o.name: o for o in outcomes}
    assert by_name["1_/_2_=_0"].suite_path == ("shop/calc", "TestDiv")
    assert by_name["a/b"].suite_path == ("shop/calc", "TestDiv", "nested")
    assert by_name["TestDiv"].error_message == "subtest failed: 1_/_2_=_0"


def test_go_count_repeats_still_fold_even_after_a_pass(tmp_path: Path) -> None:
    stream = tmp_path / "go.json"
    stream.write_text(go_events(("run", "TestA"), ("pass", "TestA"), ("run", "TestA"), ("fail", "TestA")))
    outcomes, _ = parse_paths(stream)
    assert [(o.name, o.status, o.attempts) for o in outcomes] == [("TestA", "FAILED", ["PASSED"])]
