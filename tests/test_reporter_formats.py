"""The parsers of issue 16 on real framework reports (tests/fixtures/<format>/README.md says how each
was made) and on broken input. No server: these are the client's own rules."""

from __future__ import annotations

import dataclasses
import glob
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tms.reporter import reading
from tms.reporter.allure import AllureResults, parse_allure
from tms.reporter.cli import PARSERS
from tms.reporter.detect import FORMATS, detect
from tms.reporter.files import classify, expand
from tms.reporter.mapping import to_items
from tms.reporter.model import ReportError, TestOutcome, fold_retries

FIXTURES = Path(__file__).parent / "fixtures"
ALLURE = FIXTURES / "allure" / "results"


def outcomes_of(path: Path, kind: str | None = None) -> list[TestOutcome]:
    if path.is_dir():
        found, errors = parse_allure(sorted(glob.glob(str(path / "*.json"))))
        assert errors == []
        return fold_retries(found)
    kind = kind or detect(str(path))
    assert kind is not None, path
    return fold_retries(PARSERS[kind](str(path)))


def results_of(path: Path) -> list[dict[str, Any]]:
    return [item.result for item in to_items(outcomes_of(path))]


def one(outcomes: list[TestOutcome], fragment: str) -> TestOutcome:
    found = [o for o in outcomes if fragment in o.name]
    assert len(found) == 1, (fragment, [o.name for o in outcomes])
    return found[0]


def by_code(results: list[dict[str, Any]]) -> dict[str, str]:
    return {r["test_case_code"]: r["status"] for r in results if r.get("test_case_code")}


def flaky(outcome: TestOutcome) -> bool:
    return outcome.status == "PASSED" and "FAILED" in outcome.attempts


# --- detection ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("path", "kind"), [
    ("allure/results/" + os.path.basename(sorted(glob.glob(str(ALLURE / "*-result.json")))[0]), "allure"),
    ("ctrf/pytest-ctrf.json", "ctrf"), ("ctrf/playwright-ctrf.json", "ctrf"),
    ("playwright/playwright.json", "playwright"), ("nunit/pytest-nunit.xml", "nunit"),
    ("trx/jest.trx", "trx"), ("trx/mstest.trx", "trx"), ("xunit/jest-xunit.xml", "xunit"),
    ("xunit/xunit-dotnet.xml", "xunit"), ("testng/testng-results.xml", "testng"), ("robot/output.xml", "robot"),
    ("gotest/go-test.json", "gotest"), ("reports/pytest/junit.xml", "junit"),
    ("reports/cucumber/cucumber-js.json", "cucumber"),
])
def test_every_fixture_is_detected_from_its_content(path: str, kind: str) -> None:
    assert detect(str(FIXTURES / path)) == kind


def test_the_format_names_are_the_contract_s() -> None:
    assert FORMATS == ("junit", "cucumber", "ctrf", "playwright", "allure", "trx", "nunit", "xunit", "testng",
                       "robot", "gotest", "nunit2", "mocha", "jest", "rspec", "dart")


def test_detection_ignores_names_and_reads_utf16_and_prolog(tmp_path: Path) -> None:
    nunit = tmp_path / "results.txt"
    nunit.write_text('<?xml version="1.0" encoding="utf-16"?>\n<!-- x --><test-run><test-suite/></test-run>',
                     encoding="utf-16")
    assert detect(str(nunit)) == "nunit"
    robot = tmp_path / "o.xml"
    robot.write_text('<?xml version="1.0"?>\n<robot generator="Robot 7"><suite name="s"/></robot>')
    assert detect(str(robot)) == "robot"
    other = tmp_path / "x-result.json"
    other.write_text('{"name": "package"}')
    assert detect(str(other)) is None
    go = tmp_path / "go.log"
    go.write_text('go: downloading x\n{"Time":"2024-01-01T00:00:00Z","Action":"start","Package":"p"}\n')
    assert detect(str(go)) == "gotest"


# --- each format on its real fixture -------------------------------------------------------------------

def test_allure_results_directory() -> None:
    outcomes = outcomes_of(ALLURE)
    assert len(outcomes) == 12  # 14 result files: two tests ran twice
    assert {o.status for o in outcomes} == {"PASSED", "FAILED", "BROKEN", "SKIPPED"}
    assert by_code(results_of(ALLURE)) == {"SHOP-1": "PASSED", "SHOP-2": "FAILED", "SHOP-3": "FAILED",
                                           "SHOP-4": "PASSED"}
    retried = one(outcomes, "test_flaky_then_passes")
    assert flaky(retried) and retried.attempts == ["FAILED"]
    assert one(outcomes, "test_always_fails_with_retry").attempts == ["FAILED"]
    broken = one(outcomes, "test_orders_need_database")
    assert broken.status == "BROKEN" and broken.error_message == "ConnectionError: database is down"
    deep = one(outcomes, "test_unicode_ümlaut_日本語")
    assert deep.suite_path == ("sample_shop", "TestNested > TestDeeper") and "ß is not ss" in deep.error_message
    cart = one(outcomes, "test_cart_keeps_items")
    assert [name for name, _ in cart.attachments] == ["cart screenshot"]
    assert os.path.isfile(cart.attachments[0][1]) and cart.attachments[0][1].endswith("-attachment.png")
    assert "@smoke" in cart.tags and one(outcomes, "test_refund").status == "SKIPPED"
    assert len([o for o in outcomes if "test_pay_amount" in o.name]) == 3  # parametrized runs stay apart


def test_ctrf_from_pytest() -> None:
    outcomes = outcomes_of(FIXTURES / "ctrf" / "pytest-ctrf.json")
    assert len(outcomes) == 12
    assert one(outcomes, "test_orders_need_database").status == "BROKEN"  # rawStatus setup_failed
    assert flaky(one(outcomes, "test_flaky_then_passes"))
    always = one(outcomes, "test_always_fails_with_retry")
    assert always.status == "FAILED" and always.attempts == ["FAILED"]
    assert one(outcomes, "test_passes_deep").suite_path == ("sample_shop.py", "TestNested", "TestDeeper")
    assert one(outcomes, "test_passes_deep").name == "test_passes_deep"
    assert by_code(results_of(FIXTURES / "ctrf" / "pytest-ctrf.json")) == {"SHOP-2": "FAILED"}


def test_ctrf_from_playwright_with_attachments_and_annotations() -> None:
    outcomes = outcomes_of(FIXTURES / "ctrf" / "playwright-ctrf.json")
    assert by_code(results_of(FIXTURES / "ctrf" / "playwright-ctrf.json")) == {
        "SHOP-1": "PASSED", "SHOP-2": "PASSED", "SHOP-3": "FAILED"}
    assert flaky(one(outcomes, "flaky: passes on retry"))
    wrong = one(outcomes, "total wrong on purpose")
    assert wrong.suite_path == ("shop.spec.mjs", "cart", "totals") and "\x1b" not in (wrong.error_stack or "")
    assert any(path.endswith("trace.zip") and os.path.isfile(path) for _, path in wrong.attachments)


def test_playwright_json_retries_attachments_tags_and_annotations() -> None:
    outcomes = outcomes_of(FIXTURES / "playwright" / "playwright.json")
    assert len(outcomes) == 9 and {o.framework for o in outcomes} == {"playwright"}
    assert by_code(results_of(FIXTURES / "playwright" / "playwright.json")) == {
        "SHOP-1": "PASSED", "SHOP-2": "PASSED", "SHOP-3": "FAILED"}
    retried = one(outcomes, "flaky: passes on retry")
    assert flaky(retried) and retried.attempts == ["FAILED"]
    assert any(name.startswith("screenshot") for name, _ in retried.attachments)  # the failed attempt's
    wrong = one(outcomes, "total wrong on purpose ünïcödé 日本語")
    assert wrong.status == "FAILED" and wrong.attempts == ["FAILED"]
    assert wrong.suite_path == ("shop.spec.mjs", "cart", "totals")
    assert wrong.error_message and "toHaveText" in wrong.error_message and "\x1b" not in wrong.error_message
    files = [path for _, path in wrong.attachments]
    assert len([f for f in files if f.endswith(".png")]) == 2 and all(os.path.isfile(f) for f in files)
    skipped = one(outcomes, "skipped: payment sandbox offline")
    assert skipped.status == "SKIPPED" and skipped.notes == ["skipped: payment sandbox offline"]
    log = one(outcomes, "attaches a log file")
    assert [name for name, _ in log.attachments] == ["server log"]  # the inline body has no file
    assert "@smoke" in one(outcomes, "total is shown in euro").tags


def test_nunit_from_pytest_nunit() -> None:
    outcomes = outcomes_of(FIXTURES / "nunit" / "pytest-nunit.xml")
    assert len(outcomes) == 12
    assert one(outcomes, "test_login_works").status == "PASSED"  # an empty <failure> on a pass is ignored
    assert one(outcomes, "test_login_works").error_message is None
    assert one(outcomes, "test_refund").status == "SKIPPED"
    deep = one(outcomes, "test_passes_deep")
    assert deep.classname == "sample_shop.py > TestNested > TestDeeper"
    assert by_code(results_of(FIXTURES / "nunit" / "pytest-nunit.xml")) == {"SHOP-2": "FAILED"}


def test_nunit_categories_of_suites_and_cases_link(tmp_path: Path) -> None:
    report = tmp_path / "nunit.xml"
    report.write_text("""<test-run>
<test-suite type="Assembly" name="/bin/Shop.Tests.dll"><test-suite type="TestFixture" name="CartTests">
<properties><property name="Category" value="service('SHOP-1')"/></properties>
<test-case name="Adds" classname="Shop.CartTests" result="Passed" duration="0.5"/>
<test-case name="Throws" classname="Shop.CartTests" result="Failed" label="Error" duration="0.1">
 <properties><property name="service" value="SHOP-2"/></properties>
 <failure><message>System.Exception : boom</message><stack-trace>at Shop.CartTests.Throws()</stack-trace></failure>
 <attachments><attachment><filePath>shot.png</filePath><description>screen</description></attachment></attachments>
</test-case>
<test-case name="Later" classname="Shop.CartTests" result="Skipped" label="Ignored">
 <reason><message>not yet</message></reason></test-case>
</test-suite></test-suite></test-run>""")
    outcomes = outcomes_of(report)
    assert [(o.name, o.status, o.classname, o.suite_path) for o in outcomes] == [  # issue 24: the class once
        ("Adds", "PASSED", "Shop.CartTests", ()), ("Throws", "BROKEN", "Shop.CartTests", ()),
        ("Later", "SKIPPED", "Shop.CartTests", ())]
    assert outcomes[1].error_message == "System.Exception : boom" and outcomes[1].duration_ms == 100
    assert outcomes[1].attachments == [("screen", str(tmp_path / "shot.png"))]
    assert outcomes[2].notes == ["skipped: not yet"]
    assert by_code([i.result for i in to_items(outcomes)]) == {"SHOP-1": "BROKEN", "SHOP-2": "BROKEN"}


def test_trx_mstest_shape_categories_properties_rows_and_result_files() -> None:
    outcomes = outcomes_of(FIXTURES / "trx" / "mstest.trx")
    assert [(o.classname, o.name, o.status) for o in outcomes] == [
        ("Shop.Tests.LoginTests", "LoginWorks", "PASSED"),
        ("Shop.Tests.CheckoutTests", "TotalIsRight", "FAILED"),
        ("Shop.Tests.CheckoutTests", 'PayAmount (10,"EUR")', "PASSED"),
        ("Shop.Tests.CheckoutTests", 'PayAmount (1000,"USD")', "FAILED"),
        ("Shop.Tests.CheckoutTests", "Refund", "SKIPPED"),
        ("Shop.Tests.Nested.DeepTests", "Ünïcödé日本語", "BROKEN"),
    ]
    total = outcomes[1]
    assert total.duration_ms == 45 and "Expected:<5>" in total.error_message
    assert "--- StdOut ---" in total.error_stack
    shot, missing = total.attachments
    assert os.path.isfile(shot[1]) and shot[1].endswith("mstest/In/run1/checkout.png")
    assert not os.path.exists(missing[1])
    assert by_code(results_of(FIXTURES / "trx" / "mstest.trx")) == {"SHOP-60": "PASSED", "SHOP-61": "FAILED"}
    assert outcomes[5].duration_ms == 1500


def test_trx_from_jest() -> None:
    outcomes = outcomes_of(FIXTURES / "trx" / "jest.trx")
    assert len(outcomes) == 9
    assert one(outcomes, "total is right").name == "cart / totals / total is right (Test Type:smoke)"
    assert one(outcomes, "total is right").classname is None  # the name holds the describe path
    assert one(outcomes, "gift cards").status == "SKIPPED"
    assert one(outcomes, "throws an error").error_message.startswith("TypeError")
    assert by_code(results_of(FIXTURES / "trx" / "jest.trx")) == {"SHOP-50": "PASSED", "SHOP-51": "FAILED"}


def test_xunit_dotnet_shape_traits_errors_and_exceptions() -> None:
    outcomes = outcomes_of(FIXTURES / "xunit" / "xunit-dotnet.xml")
    assert outcomes[0].name == "(test-class-cleanup) Shop.Tests.CartTests" and outcomes[0].status == "BROKEN"
    assert one(outcomes, "LoginWorks").classname == "Shop.Tests.CheckoutTests"
    assert one(outcomes, "LoginWorks").suite_path == ("Shop.Tests.dll",)
    assert one(outcomes, 'currency: "USD"').status == "BROKEN"  # NullReferenceException is no assertion
    assert one(outcomes, "TotalIsRight").status == "FAILED"
    assert one(outcomes, "Refund").notes == ["skipped: payment sandbox offline"]
    assert by_code(results_of(FIXTURES / "xunit" / "xunit-dotnet.xml")) == {"SHOP-70": "PASSED", "SHOP-71": "FAILED"}


def test_xunit_from_jest_xunit() -> None:
    outcomes = outcomes_of(FIXTURES / "xunit" / "jest-xunit.xml")
    assert len(outcomes) == 9
    failed = one(outcomes, "total is right")
    assert failed.status == "FAILED" and failed.error_message and failed.suite_path == ("source", "shop.test.js")
    assert one(outcomes, "refund").status == "UNKNOWN"  # jest-xunit writes result="undefined" for a skip


def test_testng_groups_retries_data_providers_and_config_failures() -> None:
    outcomes = outcomes_of(FIXTURES / "testng" / "testng-results.xml")
    retried = one(outcomes, "flakyPassesOnRetry")
    assert flaky(retried) and retried.attempts == ["FAILED"]
    assert one(outcomes, "payAmount(1000, USD)").status == "FAILED"
    assert one(outcomes, "payAmount(10, EUR)").status == "PASSED"
    assert one(outcomes, "throwsError").status == "BROKEN"
    assert one(outcomes, "openCart").status == "BROKEN" and "cart service unavailable" in one(
        outcomes, "openCart").error_message
    assert one(outcomes, "addsItem").status == "SKIPPED"
    assert one(outcomes, "ünïcödé日本語").suite_path == ("Shop", "Checkout")
    assert by_code(results_of(FIXTURES / "testng" / "testng-results.xml")) == {
        "SHOP-40": "PASSED", "SHOP-41": "FAILED"}


def test_robot_output_xml_nested_tags_retry_and_setup() -> None:
    outcomes = outcomes_of(FIXTURES / "robot" / "output.xml")
    assert len(outcomes) == 8 and {o.framework for o in outcomes} == {"robot"}
    assert one(outcomes, "Pay By Card").suite_path == ("Source", "Nested", "Payment")
    retried = one(outcomes, "Flaky Test")
    assert flaky(retried) and retried.attempts == ["FAILED"]
    total = one(outcomes, "Total Is Right")
    assert total.error_message == "total mismatch: 2 != 3" and "Check Total" in total.error_stack
    assert one(outcomes, "Broken Setup").status == "BROKEN"
    assert one(outcomes, "Skipped Test").notes == ["skipped: not ready yet"]
    assert by_code(results_of(FIXTURES / "robot" / "output.xml")) == {
        "SHOP-20": "PASSED", "SHOP-21": "FAILED", "SHOP-22": "PASSED"}


def test_go_test_json_subtests_reruns_and_package_failures() -> None:
    outcomes = outcomes_of(FIXTURES / "gotest" / "go-test.json")
    large = one(outcomes, "large")
    assert large.suite_path == ("example.com/shop/shop", "TestTotals") and large.status == "FAILED"
    assert large.error_message == "shop_test.go:23: total 1000 over the limit"
    assert one(outcomes, "inner_fails").suite_path == ("example.com/shop/shop", "TestNested", "outer")
    assert one(outcomes, "TestTotals").error_message == "subtest failed: large"
    assert flaky(one(outcomes, "TestFlaky"))
    package = one(outcomes, "(package example.com/shop/broken)")
    assert package.status == "BROKEN" and package.error_message == "panic: database is down"
    assert one(outcomes, "TestSkipped").status == "SKIPPED"
    assert by_code(results_of(FIXTURES / "gotest" / "go-test.json")) == {"SHOP-30": "PASSED"}


def test_go_test_stream_cut_mid_test(tmp_path: Path) -> None:
    stream = tmp_path / "go.json"
    stream.write_text('{"Action":"run","Package":"p","Test":"TestA"}\n'
                      '{"Action":"output","Package":"p","Test":"TestA","Output":"working\\n"}\n')
    [outcome] = outcomes_of(stream, "gotest")
    assert outcome.status == "BROKEN" and outcome.error_message == "working"
    assert "the stream ends before the test finished" in outcome.notes[0]


# --- bad input: every parser names the file, the line or JSON path, and the reason ----------------------

XML_FORMATS = {"trx": "<TestRun>", "nunit": "<test-run>", "xunit": "<assemblies>",
               "testng": "<testng-results>", "robot": "<robot>"}
JSON_FORMATS = ("ctrf", "playwright")


@pytest.mark.parametrize("kind", sorted(XML_FORMATS))
def test_truncated_xml_names_the_line(tmp_path: Path, kind: str) -> None:
    bad = tmp_path / "cut.xml"
    bad.write_text(f'<?xml version="1.0"?>\n{XML_FORMATS[kind]}\n  <x a="1">\n')
    with pytest.raises(ReportError) as caught:
        PARSERS[kind](str(bad))
    assert caught.value.path == str(bad) and caught.value.line == 4 and "malformed XML" in caught.value.reason


@pytest.mark.parametrize("kind", sorted(XML_FORMATS))
def test_entity_bombs_are_refused(tmp_path: Path, kind: str) -> None:
    root = XML_FORMATS[kind]
    levels = ['<!ENTITY a0 "lol">'] + [f'<!ENTITY a{i} "{f"&a{i - 1};" * 10}">' for i in range(1, 10)]
    bomb = tmp_path / "bomb.xml"
    bomb.write_text(f'<?xml version="1.0"?>\n<!DOCTYPE t [{"".join(levels)}]>\n{root[:-1]} name="&a9;"/>\n')
    with pytest.raises(ReportError, match="possible XML bomb"):
        PARSERS[kind](str(bomb))


@pytest.mark.parametrize("kind", sorted(XML_FORMATS))
def test_wrong_encoding_is_a_clear_error(tmp_path: Path, kind: str) -> None:
    bad = tmp_path / "latin1.xml"
    bad.write_bytes(f'<?xml version="1.0" encoding="utf-8"?>\n{XML_FORMATS[kind]}\n<x n="gr\xfc\xdfe"/>'.encode(
        "latin-1"))
    with pytest.raises(ReportError) as caught:
        PARSERS[kind](str(bad))
    assert caught.value.line == 3 and "malformed XML" in caught.value.reason


@pytest.mark.parametrize("kind", JSON_FORMATS)
def test_truncated_json_names_the_line(tmp_path: Path, kind: str) -> None:
    source = FIXTURES / ("ctrf/pytest-ctrf.json" if kind == "ctrf" else "playwright/playwright.json")
    data = source.read_bytes()
    bad = tmp_path / "cut.json"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(ReportError) as caught:
        PARSERS[kind](str(bad))
    assert "truncated" in caught.value.reason and caught.value.line == data[: len(data) // 2].count(b"\n") + 1


@pytest.mark.parametrize("kind", [*JSON_FORMATS, "allure"])
def test_json_nesting_bombs_are_refused(tmp_path: Path, kind: str) -> None:
    bomb = tmp_path / "x-result.json"
    inner = '{"suites": [' * 200_000 if kind == "playwright" else '{"steps": [' * 200_000
    prefix = {"ctrf": '{"results": {"tests": [], "extra": ', "playwright": '{"suites": [',
              "allure": '{"name": "t", "status": "passed", "steps": ['}[kind]
    bomb.write_text(prefix + inner)
    with pytest.raises(ReportError) as caught:
        if kind == "allure":
            _, errors = parse_allure([str(bomb)])
            raise errors[0]
        PARSERS[kind](str(bomb))
    assert caught.value.path == str(bomb)
    assert "nest" in caught.value.reason or "truncated" in caught.value.reason


def test_json_of_the_wrong_shape_names_the_json_path(tmp_path: Path) -> None:
    bad = tmp_path / "ctrf.json"
    bad.write_text(json.dumps({"reportFormat": "CTRF", "results": {"tests": [{"name": "a", "status": "passed"},
                                                                             {"name": "b", "status": "exploded"}]}}))
    with pytest.raises(ReportError, match=r"\$\.results\.tests\[1\]\.status: unknown status 'exploded'"):
        PARSERS["ctrf"](str(bad))
    bad.write_text(json.dumps({"reportFormat": "CTRF", "results": {"tests": {"a": 1}}}))
    with pytest.raises(ReportError, match=r"\$\.results\.tests"):
        PARSERS["ctrf"](str(bad))


def test_json_in_another_encoding(tmp_path: Path) -> None:
    report = tmp_path / "utf16.json"
    report.write_text(json.dumps({"reportFormat": "CTRF", "results": {"tests": [
        {"name": "grüße", "status": "passed", "duration": 3}]}}), encoding="utf-16")
    assert [o.name for o in PARSERS["ctrf"](str(report))] == ["grüße"]
    latin = tmp_path / "latin1.json"
    latin.write_bytes('{"reportFormat": "CTRF", "results": {"tests": [{"name": "gr\xfc\xdfe"}]}}'.encode("latin-1"))
    with pytest.raises(ReportError, match="UTF-8"):
        PARSERS["ctrf"](str(latin))


def test_huge_attributes_are_read_not_choked_on(tmp_path: Path) -> None:
    big = "x" * 5_000_000
    report = tmp_path / "testng.xml"
    report.write_text(f'<testng-results><suite name="s"><test name="t"><class name="C">'
                      f'<test-method name="m" status="FAIL" description="{big}"><exception class="E">'
                      f'<message>{big}</message></exception></test-method></class></test></suite></testng-results>')
    [outcome] = PARSERS["testng"](str(report))
    assert outcome.status == "BROKEN" and len(outcome.error_stack or "") <= 16_000


def test_gotest_truncated_line_names_it(tmp_path: Path) -> None:
    stream = tmp_path / "go.json"
    stream.write_text('{"Action":"run","Package":"p","Test":"TestA"}\n{"Action":"pass","Pack')
    with pytest.raises(ReportError) as caught:
        PARSERS["gotest"](str(stream))
    assert caught.value.line == 2 and "cut short" in caught.value.reason


def test_junit_attachment_lines_in_system_out(tmp_path: Path) -> None:
    (tmp_path / "shots").mkdir()
    (tmp_path / "shots" / "login.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    report = tmp_path / "junit.xml"
    report.write_text('<testsuite name="s"><testcase classname="C" name="login"><failure message="x"/>'
                      "<system-out>step 1\n[[ATTACHMENT|shots/login.png]]\n"
                      "[[ATTACHMENT|/elsewhere/ci/shots/login.png]]</system-out></testcase></testsuite>")
    [outcome] = PARSERS["junit"](str(report))
    expected = str(tmp_path / "shots" / "login.png")
    assert outcome.attachments == [("login.png", expected), ("login.png", expected)]  # the 2nd found by its tail


@pytest.mark.parametrize("kind", sorted(XML_FORMATS))
def test_external_entities_and_dtds_are_never_fetched(tmp_path: Path, kind: str) -> None:
    root = XML_FORMATS[kind]
    xxe = tmp_path / "xxe.xml"
    xxe.write_text(f'<?xml version="1.0"?>\n<!DOCTYPE r [<!ENTITY e SYSTEM "file:///etc/passwd">]>\n{root}&e;')
    with pytest.raises(ReportError, match="possible XML bomb"):
        PARSERS[kind](str(xxe))
    external = tmp_path / "dtd.xml"
    external.write_text(f'<?xml version="1.0"?>\n<!DOCTYPE r SYSTEM "http://127.0.0.1:9/evil.dtd">\n'
                        f'{root}<x>&e;</x></{root[1:]}')
    with pytest.raises(ReportError) as caught:  # the DTD is never loaded, so the entity stays undefined
        PARSERS[kind](str(external))
    assert caught.value.line == 3 and "undefined entity" in caught.value.reason
    utf16 = tmp_path / "utf16.xml"
    levels = '<!ENTITY a0 "lol"><!ENTITY a1 "&a0;&a0;&a0;">'
    utf16.write_text(f'<?xml version="1.0" encoding="utf-16"?><!DOCTYPE r [{levels}]>{root[:-1]} n="&a1;"/>',
                     encoding="utf-16")
    with pytest.raises(ReportError, match="possible XML bomb"):
        PARSERS[kind](str(utf16))


# --- streaming XML: the same outcomes however the file arrives, and a test's log is not kept -------------

XML_FIXTURES = [("trx/jest.trx", "trx"), ("trx/mstest.trx", "trx"), ("nunit/pytest-nunit.xml", "nunit"),
                ("xunit/jest-xunit.xml", "xunit"), ("xunit/xunit-dotnet.xml", "xunit"),
                ("testng/testng-results.xml", "testng"), ("robot/output.xml", "robot")]


def as_dicts(outcomes: list[TestOutcome]) -> list[dict[str, Any]]:
    return [dataclasses.asdict(o) for o in outcomes]


@pytest.mark.parametrize(("path", "kind"), XML_FIXTURES)
def test_xml_cut_into_any_chunks_reads_the_same(path: str, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tree is walked after every chunk the parser is fed: an element open across a chunk's end
    (a suite, a test, a tag cut in two) must come out exactly as when the file is read whole."""
    whole = as_dicts(PARSERS[kind](str(FIXTURES / path)))
    assert whole
    for size in (1, 7, 100, 4096):
        monkeypatch.setattr(reading, "_CHUNK", size)
        assert as_dicts(PARSERS[kind](str(FIXTURES / path))) == whole, size


@pytest.mark.parametrize(("path", "kind"), XML_FIXTURES)
def test_xml_read_the_same_without_silencing_the_parser(path: str, kind: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where XMLPullParser has no `_setevents` (another Python), its start events are read and dropped."""
    whole = as_dicts(PARSERS[kind](str(FIXTURES / path)))
    monkeypatch.setattr(reading, "_quiet", lambda parser: None)
    monkeypatch.setattr(reading, "_CHUNK", 50)
    assert as_dicts(PARSERS[kind](str(FIXTURES / path))) == whole


def test_xml_stream_events_and_drops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = tmp_path / "r.xml"
    report.write_text('<r><s name="a"><t n="1"><x/></t><s name="b"><t n="2"/></s></s><t n="3"/></r>')
    for size in (1, 5, 1000):
        monkeypatch.setattr(reading, "_CHUNK", size)
        # a unit ends whole (with its children); anything else ends emptied, its children handed out before
        events = [(event, tag, elem.get("name") or elem.get("n"), len(elem) if event == "end" else None)
                  for event, tag, elem in reading.xml_stream(str(report), frozenset({"t"}))]
        assert events == [("start", "r", None, None), ("start", "s", "a", None), ("end", "t", "1", 1),
                          ("start", "s", "b", None), ("end", "t", "2", 0), ("end", "s", "b", 0),
                          ("end", "s", "a", 0), ("end", "t", "3", 0), ("end", "r", None, 0)], size


def test_robot_keyword_logs_are_dropped_while_their_test_is_read(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    log = "x" * 1000
    keywords = "".join(f'<kw name="Log {n}"><msg time="2026-11-23T10:00:00" level="INFO">{log}</msg>'
                       '<status status="PASS" start="2026-11-23T10:00:00" elapsed="0.001"/></kw>' for n in range(300))
    report = tmp_path / "output.xml"
    report.write_text(f'<robot><suite name="S"><test name="loud">{keywords}'
                      '<kw name="Fail"><status status="FAIL" start="2026-11-23T10:00:00" elapsed="0.001"/></kw>'
                      '<status status="FAIL" start="2026-11-23T10:00:00" elapsed="1.5">boom</status>'
                      '</test></suite></robot>')
    monkeypatch.setattr(reading, "_CHUNK", 4096)
    [(_, _, test)] = [e for e in reading.xml_stream(str(report), frozenset({"test"}), prune="msg") if e[1] == "test"]
    kept = sum(len(msg.text or "") for msg in test.iter("msg"))
    assert kept <= 8 * len(log)  # only what the last chunks held, not the test's 300 kB of log
    [outcome] = PARSERS["robot"](str(report))
    assert outcome.status == "FAILED" and outcome.error_message == "boom" and outcome.duration_ms == 1500
    assert outcome.error_stack == "boom\n\nfailing keywords:\n  Fail"


@pytest.mark.parametrize("kind", sorted(XML_FORMATS))
def test_entity_bombs_are_refused_however_the_file_is_cut(tmp_path: Path, kind: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    levels = ['<!ENTITY a0 "lol">'] + [f'<!ENTITY a{i} "{f"&a{i - 1};" * 10}">' for i in range(1, 10)]
    bomb = tmp_path / "bomb.xml"
    bomb.write_text(f'<?xml version="1.0"?>\n<!DOCTYPE t [{"".join(levels)}]>\n{XML_FORMATS[kind][:-1]} n="&a9;"/>\n')
    monkeypatch.setattr(reading, "_CHUNK", 3)
    with pytest.raises(ReportError, match="possible XML bomb"):
        PARSERS[kind](str(bomb))


# --- Allure: each file read once, and again only when detection did not read all of it ------------------

def allure_result(name: str, trace: str = "") -> str:
    return json.dumps({"uuid": name, "historyId": name, "name": name, "status": "failed" if trace else "passed",
                       "statusDetails": {"message": "boom", "trace": trace}, "start": 1795455137000,
                       "stop": 1795455137010, "labels": [{"name": "suite", "value": "S"}]})


def test_allure_result_larger_than_the_detected_head_is_read_whole(tmp_path: Path) -> None:
    big = tmp_path / "a-result.json"
    big.write_text(allure_result("big", "at line\n" * 20_000))  # 160 kB: more than detection reads
    small = tmp_path / "b-result.json"
    small.write_text(allure_result("small"))
    files, _ = expand([str(tmp_path)])
    reports, _ = classify(files, explicit=set())
    assert [(r.format, r.content is None) for r in reports] == [("allure", True), ("allure", False)]
    results = AllureResults()
    for report in reports:
        results.add(report.path, report.content)
    outcomes, errors = results.finish()
    assert errors == [] and [o.name for o in outcomes] == ["big", "small"]
    assert outcomes[0].error_message == "boom" and "[144045 characters cut]" in (outcomes[0].error_stack or "")
    # bytes that are not the whole document (a short read) are not trusted: the file is read again
    results = AllureResults()
    results.add(str(small), small.read_bytes()[:40])
    assert [o.name for o in results.finish()[0]] == ["small"]
    results = AllureResults()
    results.add(str(big), b'{"name": ')
    results.add(str(tmp_path / "gone-result.json"), b'{"name": ')
    outcomes, errors = results.finish()
    assert [o.name for o in outcomes] == ["big"] and [e.path for e in errors] == [str(tmp_path / "gone-result.json")]


def test_gotest_detected_with_escaped_keys_and_json_objects_are_not(tmp_path: Path) -> None:
    escaped = tmp_path / "go.json"
    escaped.write_text('\n  {"\\u0041ction":"run","Package":"p","Test":"TestA"}\n')
    assert detect(str(escaped)) == "gotest"
    ctrf = tmp_path / "ctrf.json"
    ctrf.write_text('{\n  "results": {\n    "tool": {"name": "jest"}, "tests": []}}')
    assert detect(str(ctrf)) == "ctrf"
    ctrf.write_text('{"x": 1,\n "reportFormat" : "CTRF", "results": {"tests": []}}')
    assert detect(str(ctrf)) == "ctrf"
