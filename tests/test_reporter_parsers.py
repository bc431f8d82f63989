"""The reporter's parsers and mapping, on real framework reports (tests/fixtures/reports/README.md)
and on small hand-made edge cases. No server: these are the client's own rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from tms.reporter.cucumber import parse_cucumber
from tms.reporter.files import CUCUMBER, JUNIT, NoReports, classify, detect, expand
from tms.reporter.junit import parse_junit, parse_seconds, to_utc_iso
from tms.reporter.mapping import codes_of, title_of, to_items
from tms.reporter.model import ReportError, TestOutcome, fold_retries

REPORTS = Path(__file__).parent / "fixtures" / "reports"


def items_of(*paths: Path) -> list[dict]:
    outcomes: list[TestOutcome] = []
    for path in paths:
        parse = parse_cucumber if path.suffix == ".json" else parse_junit
        outcomes.extend(parse(str(path)))
    return [item.result for item in to_items(fold_retries(outcomes))]


def by_title(results: list[dict], fragment: str) -> dict:
    found = [r for r in results if fragment in r["title"]]
    assert len(found) == 1, (fragment, [r["title"] for r in results])
    return found[0]


# --- JUnit dialects ---------------------------------------------------------------------------------

def test_pytest_junit_statuses_tags_properties_and_unicode() -> None:
    results = items_of(REPORTS / "pytest" / "junit.xml")
    assert len(results) == 10
    assert {r["framework"] for r in results} == {"pytest"}
    assert by_title(results, "test_login_works") == {
        "title": "pytest > sample_checkout > test_login_works", "status": "PASSED", "duration_ms": 1,
        "framework": "pytest", "executed_at": "2026-11-22T05:55:46.884Z",
        "file": "sample_checkout.py", "line": 5,  # pytest's file and line attributes (issue 24)
    }
    # <property name="service" value="SHOP-2"/> links without renaming the test
    assert by_title(results, "test_logout_service_property")["test_case_code"] == "SHOP-2"
    # single and double quotes in a parametrize id
    assert sorted(r.get("test_case_code") for r in results if "test_pay" in r["title"]) == ["SHOP-3", "SHOP-4"]
    failed = by_title(results, "test_total_is_wrong")
    assert failed["status"] == "FAILED"
    assert failed["error_message"].startswith("AssertionError: total mismatch")
    assert "assert 1 + 1 == 3" in failed["error_stack"]
    broken = by_title(results, "test_with_broken_fixture")
    assert broken["status"] == "BROKEN" and "database not seeded" in broken["error_message"]
    skipped = by_title(results, "test_skipped")
    assert skipped["status"] == "SKIPPED" and skipped["comment"] == "skipped: tax service not ready"
    assert by_title(results, "test_known_bug")["status"] == "SKIPPED"  # xfail
    assert by_title(results, "ñandú")["status"] == "PASSED"


def test_surefire_rerun_and_flaky_records_fold_into_one_result_each() -> None:
    results = items_of(*sorted((REPORTS / "surefire").glob("TEST-*.xml")))
    assert len(results) == 8
    assert {r["framework"] for r in results} == {"surefire"}
    flaky = by_title(results, "applesAreCounted")
    assert flaky["status"] == "PASSED"
    assert flaky["comment"].splitlines()[:2] == ["attempts: 2 (FAILED, PASSED)", "flaky: passed only on retry"]
    assert "warm-up run" in flaky["comment"]
    always = by_title(results, "checkoutAlwaysFails")
    assert always["status"] == "FAILED"
    assert always["comment"].startswith("attempts: 3 (FAILED, FAILED, FAILED)")
    assert "flaky" not in always["comment"]
    assert always["error_message"].startswith("org.opentest4j.AssertionFailedError: payment provider answer")
    broken = by_title(results, "brokenFixture")
    assert broken["status"] == "BROKEN" and broken["comment"].startswith("attempts: 3 (BROKEN, BROKEN, BROKEN)")
    # a phrased @DisplayName carries the tag; the title drops it
    linked = [r for r in results if r.get("test_case_code") == "SHOP-1"]
    assert [r["title"] for r in linked] == ["com.example.shop.CartTest > adds an item"]
    assert by_title(results, "taxIsApplied")["status"] == "SKIPPED"
    assert by_title(results, "żółtaKartkaDiscount")["status"] == "FAILED"


def test_jest_junit_drops_the_repeated_describe_and_reads_the_timestamp() -> None:
    results = items_of(REPORTS / "jest" / "junit.xml")
    assert [r["title"] for r in results] == [
        "Checkout > pays by card", "Checkout > total is wrong", "Checkout > pays later",
        "Checkout > flaky network call", "Checkout > Shipping to Japan 🇯🇵 costs 20",
    ]
    assert results[0]["test_case_code"] == "SHOP-30"
    assert [r["status"] for r in results] == ["PASSED", "FAILED", "SKIPPED", "PASSED", "PASSED"]
    assert {r["framework"] for r in results} == {"jest"}
    assert results[1]["error_message"].startswith("Error: expect(received).toBe(expected)")
    assert results[0]["executed_at"].endswith("Z")


def test_node_test_runner_nested_suites_flatten_into_the_path() -> None:
    results = items_of(REPORTS / "node" / "junit.xml")
    assert [r["title"] for r in results] == [
        "Checkout > pays by card", "Checkout > total is wrong", "Checkout > pays later",
        "Checkout > Nested suite > déjà vu works",
    ]
    assert {r["framework"] for r in results} == {"node"}
    assert results[2]["comment"] == "skipped: not ready"


def test_robot_xunit_nested_suites_each_test_once() -> None:
    results = items_of(REPORTS / "robot" / "xunit.xml")
    assert [r["title"] for r in results] == [
        "Robot > Checkout > Login Works", "Robot > Checkout > Total Is Right", "Robot > Checkout > Skipped Test",
        "Robot > Checkout > Ünïcödé Title", "Robot > Nested > Payment > Refund Is Possible",
    ]
    assert results[0]["test_case_code"] == "SHOP-20"
    assert results[1]["error_message"] == "AssertionError: total mismatch: 2 != 3"


def test_go_junit_report_uses_the_body_when_the_message_says_only_failed() -> None:
    results = items_of(REPORTS / "go" / "go-junit-report.xml")
    assert len(results) == 6 and {r["framework"] for r in results} == {"go"}
    failed = by_title(results, "applies_discount")
    assert failed["error_message"] == "cart_test.go:42: total = 95, want 90"
    assert by_title(results, "rounds_to_cents")["test_case_code"] == "GO-1"
    assert by_title(results, "TestCharge")["duration_ms"] == 1000  # time="1", no decimals
    refund = by_title(results, "TestRefund")
    assert "--- system-out ---\nrefund request id=abc-123" in refund["error_stack"]
    assert by_title(results, "TestTax")["executed_at"] == "2026-11-20T09:15:02.000Z"


def test_repeated_testcase_elements_of_a_retried_test_are_one_result() -> None:
    results = items_of(REPORTS / "go" / "gotestsum-rerun.xml")
    assert [r["title"].split(" > ")[-1] for r in results] == ["TestDial", "TestFetchPrices", "TestTimeout"]
    flaky = results[1]
    assert flaky["status"] == "PASSED" and "flaky: passed only on retry" in flaky["comment"]
    assert flaky["duration_ms"] == 800  # the final attempt's
    still = results[2]
    assert still["status"] == "FAILED" and still["comment"].startswith("attempts: 2 (FAILED, FAILED)")


def test_phpunit_three_levels_of_nesting_and_a_tag_on_a_suite() -> None:
    results = items_of(REPORTS / "phpunit" / "junit.xml")
    assert len(results) == 4
    assert by_title(results, "testTotal")["title"] == "Unit > Tests\\Unit\\CartTest > testTotal"
    assert by_title(results, "testTax")["status"] == "BROKEN"
    assert by_title(results, "euro")["test_case_code"] == "PHP-1"


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_bare_testsuite_root_times_timestamps_and_suite_output(tmp_path: Path) -> None:
    path = write(tmp_path, "r.xml", """<?xml version="1.0"?>
<testsuite name="Suite" timestamp="2026-01-02T03:04:05.678+02:00">
  <testcase name="a" classname="C" time="1,234.5"/>
  <testcase name="b" classname="C" time="0,25"><error type="Boom"/></testcase>
  <testcase name="c" classname="C" time=""><failure message="first"/><failure message="second">body</failure></testcase>
  <system-out>suite says hello</system-out>
</testsuite>""")
    a, b, c = parse_junit(path)
    assert (a.duration_ms, b.duration_ms, c.duration_ms) == (1234500, 250, None)
    assert a.executed_at == "2026-01-02T01:04:05.678Z"
    assert b.status == "BROKEN" and b.error_message == "Boom"
    assert c.error_message == "first\nsecond"
    assert "suite says hello" in (c.error_stack or "") and a.error_stack is None


@pytest.mark.parametrize(("value", "ms"), [
    ("1", 1000), ("0.0015", 2), ("12.5", 12500), ("1,234.5", 1234500), ("0,5", 500), ("", None),
    (None, None), ("NaN", None), ("-1", None), ("abc", None),
])
def test_parse_seconds(value: str | None, ms: int | None) -> None:
    assert parse_seconds(value) == ms


def test_to_utc_iso() -> None:
    assert to_utc_iso("2026-05-01T10:00:00Z") == "2026-05-01T10:00:00.000Z"
    assert to_utc_iso("2026-05-01T10:00:00.123456-05:00") == "2026-05-01T15:00:00.123Z"
    assert to_utc_iso("yesterday") is None and to_utc_iso("") is None
    assert to_utc_iso("2026-05-01T10:00:00").endswith("Z")  # naive: this machine's local time


def test_billion_laughs_is_refused_not_expanded(tmp_path: Path) -> None:
    path = write(tmp_path, "bomb.xml", """<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<testsuite name="&lol3;"><testcase name="x"/></testsuite>""")
    with pytest.raises(ReportError) as caught:
        parse_junit(path)
    assert "bomb.xml" in str(caught.value) and "XML bomb" in str(caught.value)


def test_external_entity_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "xxe.xml", """<?xml version="1.0"?>
<!DOCTYPE t [<!ENTITY x SYSTEM "file:///etc/passwd">]><testsuite><testcase name="&x;"/></testsuite>""")
    with pytest.raises(ReportError, match="refused"):
        parse_junit(path)


def test_malformed_xml_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.xml", '<testsuite>\n<testcase name="a">\n</testsuite>\n')
    with pytest.raises(ReportError) as caught:
        parse_junit(path)
    assert caught.value.line == 3 and str(caught.value).startswith(f"{path}:3: malformed XML")


def test_other_xml_is_not_a_junit_report(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="Robot Framework: write one with --xunit") as caught:
        parse_junit(write(tmp_path, "output.xml", "<robot><suite/></robot>"))
    assert caught.value.not_a_report


def test_streaming_memory_does_not_keep_finished_cases(tmp_path: Path) -> None:
    cases = "".join(f'<testcase name="t{i}" classname="c" time="0.001"><system-out>{"x" * 500}</system-out>'
                    "</testcase>" for i in range(3000))
    report = f"<testsuites><testsuite name='s'>{cases}</testsuite></testsuites>"
    outcomes = parse_junit(write(tmp_path, "big.xml", report))
    assert len(outcomes) == 3000 and outcomes[-1].name == "t2999"
    assert all(o.error_stack is None for o in outcomes)  # passing tests carry no output


# --- Cucumber JSON ------------------------------------------------------------------------------------

def test_cucumber_js_scenarios_outline_rows_tags_and_nanoseconds() -> None:
    outcomes = parse_cucumber(str(REPORTS / "cucumber" / "cucumber-js.json"))
    assert [(o.name, o.status) for o in outcomes] == [
        ("Pay by card", "PASSED"), ("Pay with an expired card", "FAILED"), ("Pay by voucher", "BROKEN"),
        ("Shipping to Spain", "PASSED"), ("Shipping to Japan", "FAILED"),
    ]
    assert {o.framework for o in outcomes} == {"cucumber"}
    assert outcomes[0].tags == ("@checkout", "@service('SHOP-10')")
    assert outcomes[0].duration_ms == 6  # 6,290,722 ns
    assert outcomes[2].error_message == "undefined step: When I pay with a voucher"
    results = items_of(REPORTS / "cucumber" / "cucumber-js.json")
    shipping = [r for r in results if r.get("test_case_code") == "SHOP-11"]
    # both rows link to SHOP-11: one result, the failing row decides
    assert len(shipping) == 1 and shipping[0]["status"] == "FAILED"
    assert "- PASSED Checkout > Shipping to Spain" in shipping[0]["comment"]
    assert "20 !== 25" in shipping[0]["error_stack"]


def test_behave_seconds_untested_steps_and_row_names() -> None:
    outcomes = parse_cucumber(str(REPORTS / "cucumber" / "behave-all.json"))
    assert {o.framework for o in outcomes} == {"behave"}
    assert [(o.name, o.status) for o in outcomes] == [
        ("Pay by card", "PASSED"), ("Pay with an expired card", "FAILED"), ("Pay by voucher", "BROKEN"),
        ("Pay later", "BROKEN"), ("Shipping to Spain -- @1.1", "PASSED"), ("Shipping to Japan -- @1.2", "FAILED"),
    ]
    assert outcomes[0].tags == ("@checkout", "@service('SHOP-10')")
    assert outcomes[1].error_message == "ASSERT FAILED: payment was declined: card expired"
    assert outcomes[4].tags[-1] == "@service(SHOP-11)"  # behave drops the double quotes
    assert codes_of(outcomes[4]) == ["SHOP-11"]
    skipped = parse_cucumber(str(REPORTS / "cucumber" / "behave.json"))
    assert [o.status for o in skipped if o.name == "Pay later"] == ["SKIPPED"]  # excluded by --tags


def test_cucumber_jvm_backgrounds_hooks_outlines_and_pending() -> None:
    outcomes = parse_cucumber(str(REPORTS / "cucumber-jvm" / "cucumber.json"))
    assert [(o.name, o.status) for o in outcomes] == [
        ("Pay by card", "PASSED"), ("Pay with an expired card", "FAILED"), ("Pay by voucher", "BROKEN"),
        ("Pay later", "FAILED"),
        ("Shipping to <country> (example 1)", "PASSED"), ("Shipping to <country> (example 2)", "FAILED"),
        ("Shipping to <country> (example 3)", "PASSED"), ("Ambiguous refund", "BROKEN"),
    ]
    card = outcomes[0]
    assert card.duration_ms == 30  # background 1.25 ms + hooks 4 ms + steps 25 ms, in ns
    assert card.executed_at == "2026-11-20T09:30:01.120Z"
    assert outcomes[3].notes == ["failed at: Before hook"]
    assert outcomes[3].error_message == "java.lang.IllegalStateException: browser did not start"
    assert outcomes[2].error_message == "io.cucumber.java.PendingException: TODO: implement me"
    results = items_of(REPORTS / "cucumber-jvm" / "cucumber.json")
    # a row with two tags yields a result for each case
    assert sorted(r["test_case_code"] for r in results if r.get("test_case_code")) == ["JVM-1", "JVM-2", "JVM-3"]


def test_cucumber_statuses_from_steps(tmp_path: Path) -> None:
    def scenario(*statuses: str) -> dict:
        return {"name": "s", "type": "scenario", "keyword": "Scenario",
                "steps": [{"keyword": "Given ", "name": f"step {i}", "result": {"status": s, "duration": 1}}
                          for i, s in enumerate(statuses)]}

    feature = {"uri": "f.feature", "name": "F", "keyword": "Feature", "elements": [
        scenario("passed", "passed"), scenario("passed", "failed", "skipped"), scenario("pending", "skipped"),
        scenario("skipped", "skipped"), scenario("passed", "skipped"), scenario(), scenario("passed", "weird"),
    ]}
    import json
    outcomes = parse_cucumber(write(tmp_path, "c.json", json.dumps([feature])))
    assert [o.status for o in outcomes] == ["PASSED", "FAILED", "BROKEN", "SKIPPED", "SKIPPED", "UNKNOWN", "UNKNOWN"]


def test_malformed_json_names_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(ReportError) as caught:
        parse_cucumber(write(tmp_path, "c.json", '[\n{"name": "x",\n'))
    assert "c.json:" in str(caught.value) and caught.value.line == 3
    with pytest.raises(ReportError, match="not a Cucumber JSON report"):
        parse_cucumber(write(tmp_path, "d.json", '[1, 2]'))


# --- mapping --------------------------------------------------------------------------------------------

def outcome(**fields: object) -> TestOutcome:
    return TestOutcome(**{"name": "t", "status": "PASSED", **fields})  # type: ignore[arg-type]


@pytest.mark.parametrize(("fields", "codes"), [
    ({"name": "logs in @service('TC-1')"}, ["TC-1"]),
    ({"name": 'logs in @service("TC-1")'}, ["TC-1"]),
    ({"name": "logs in @service( 'TC-1' )"}, ["TC-1"]),
    ({"name": "two @service('TC-1') @service('TC-2')"}, ["TC-1", "TC-2"]),
    ({"classname": "Login @service('TC-3')"}, ["TC-3"]),
    ({"suite_path": ("Root @service('TC-4')", "Child")}, ["TC-4"]),
    ({"tags": ("@smoke", "@service('TC-5')")}, ["TC-5"]),
    ({"service_properties": ("TC-6",)}, ["TC-6"]),
    ({"service_properties": ("TC-6, TC-7",)}, ["TC-6", "TC-7"]),
    ({"service_properties": ("@service('TC-8')",)}, ["TC-8"]),
    ({"name": "same @service('TC-1')", "tags": ("@service('TC-1')",)}, ["TC-1"]),
    ({"tags": ("@service(TC-9)",)}, ["TC-9"]),  # behave's spelling of @service("TC-9")
    ({"name": "no tag: service('TC-1') or @service(TC-1)"}, []),
])
def test_codes_of(fields: dict, codes: list[str]) -> None:
    assert codes_of(outcome(**fields)) == codes


def test_two_tags_two_results_and_no_tag_unlinked_with_full_title() -> None:
    items = to_items([
        outcome(name="pays @service('TC-1') @service('TC-2')", suite_path=("Shop", "Cart"), classname="CartTest",
                duration_ms=5),
        outcome(name="logs out", suite_path=("Shop",), status="SKIPPED"),
    ])
    assert [item.result for item in items] == [
        {"test_case_code": "TC-1", "title": "Shop > Cart > CartTest > pays", "status": "PASSED", "duration_ms": 5},
        {"test_case_code": "TC-2", "title": "Shop > Cart > CartTest > pays", "status": "PASSED", "duration_ms": 5},
        {"title": "Shop > logs out", "status": "SKIPPED"},
    ]


def test_tests_sharing_a_code_combine_worst_status_first() -> None:
    items = to_items([
        outcome(name="a @service('TC-1')", status="PASSED", duration_ms=1, executed_at="2026-01-01T00:00:02.000Z"),
        outcome(name="b @service('TC-1')", status="FAILED", duration_ms=2, error_message="boom",
                executed_at="2026-01-01T00:00:01.000Z"),
        outcome(name="c @service('TC-1')", status="SKIPPED"),
        outcome(name="d @service('TC-2')", status="SKIPPED"),
        outcome(name="e @service('TC-2')", status="PASSED"),
    ])
    first, second = (item.result for item in items)
    assert first["status"] == "FAILED" and first["error_message"] == "boom" and first["duration_ms"] == 3
    assert first["executed_at"] == "2026-01-01T00:00:01.000Z"
    assert first["title"] == "a (+2 more)"
    assert first["comment"].splitlines() == [
        "3 tests link to TC-1; the worst status counts:", "- PASSED a", "- FAILED b", "- SKIPPED c",
    ]
    assert second["status"] == "PASSED"  # skipped counts only when every test was skipped


@pytest.mark.parametrize(("name", "title"), [
    ("test_login[@service('LOGIN-1')]", "test_login"),  # pytest's parametrize id held only the tag
    ("test_login[@service('LOGIN-1')-chrome]", "test_login[chrome]"),
    ("test_login[chrome-@service('LOGIN-1')]", "test_login[chrome]"),
    ("test_login[a-@service('LOGIN-1')-b]", "test_login[a-b]"),
    ("pays (@service('TC-1'), @service('TC-2'))", "pays"),
    ("logs in @service('TC-1') quickly", "logs in quickly"),
    ("keeps [] and () of its own @service('TC-1')", "keeps [] and () of its own"),
])
def test_a_removed_tag_leaves_no_empty_brackets_or_stray_separators(name: str, title: str) -> None:
    assert title_of(outcome(name=name)) == title


def test_title_is_capped_for_the_service() -> None:
    assert len(title_of(outcome(name="x" * 900))) == 500


def test_fold_retries_keeps_first_position_and_last_outcome() -> None:
    folded = fold_retries([
        outcome(name="a", status="FAILED", error_message="first try"), outcome(name="b"),
        outcome(name="a", status="FAILED", error_message="second try"), outcome(name="a", status="PASSED"),
    ])
    assert [(o.name, o.status, o.attempts) for o in folded] == [
        ("a", "PASSED", ["FAILED", "FAILED"]), ("b", "PASSED", []),
    ]
    assert folded[0].notes == ["attempt 1: first try", "attempt 2: second try"]


# --- files ------------------------------------------------------------------------------------------------

def test_expand_files_directories_and_globs(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one.xml").write_text("<testsuite/>")
    (tmp_path / "a" / "two.json").write_text("[]")
    (tmp_path / "a" / "notes.txt").write_text("hi")
    (tmp_path / "b.xml").write_text("<testsuite/>")
    files, warnings = expand([str(tmp_path / "a"), str(tmp_path / "*.xml"), str(tmp_path / "a" / "one.xml"),
                              str(tmp_path / "none-*.xml")])
    assert files == [str(tmp_path / "a" / "one.xml"), str(tmp_path / "a" / "two.json"), str(tmp_path / "b.xml")]
    assert warnings == [f"{tmp_path / 'none-*.xml'}: no file matches"]
    with pytest.raises(NoReports, match="no such file"):
        expand([str(tmp_path / "missing.xml")])
    with pytest.raises(NoReports, match="no report file found"):
        expand([str(tmp_path / "zzz*.xml")])


def test_detect_by_content_not_extension(tmp_path: Path) -> None:
    utf16 = tmp_path / "utf16.xml"
    utf16.write_text('<?xml version="1.0" encoding="UTF-16"?><testsuite><testcase name="ü"/></testsuite>',
                     encoding="utf-16")
    assert detect(str(utf16)) == JUNIT and [o.name for o in parse_junit(str(utf16))] == ["ü"]
    assert detect(write(tmp_path, "report.txt", "\ufeff  <?xml version='1.0'?><testsuite/>")) == JUNIT
    assert detect(write(tmp_path, "report.out", "\n [ {} ]")) == CUCUMBER
    assert detect(write(tmp_path, "package.json", '{"name": "x"}')) is None
    found = [write(tmp_path, "package.json", "{}"), write(tmp_path, "r.xml", "<testsuite/>")]
    reports, skipped = classify(found, explicit=set())
    assert [r.path for r in reports] == [found[1]] and skipped == [found[0]]
    with pytest.raises(ReportError, match="not a test report of a known format"):
        classify(found, explicit={found[0]})


def test_the_installed_pytest_writes_what_the_parser_reads(tmp_path: Path) -> None:
    """A fresh report from the pytest of this venv, so a change in its JUnit output shows up here."""
    import subprocess
    import sys

    (tmp_path / "pytest.ini").write_text("[pytest]\njunit_family = xunit1\n")
    (tmp_path / "test_sample.py").write_text(
        "import pytest\n"
        "def test_ok(record_property):\n    record_property('service', 'LIVE-1')\n"
        "def test_bad():\n    assert 1 == 2, 'nope'\n"
        "@pytest.mark.skip(reason='later')\ndef test_skip():\n    pass\n"
        "@pytest.mark.parametrize('x', [1], ids=[\"@service('LIVE-2')\"])\ndef test_tagged(x):\n    pass\n"
        "def test_ünïcode():\n    pass\n"
    )
    report = tmp_path / "junit.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
                    "--rootdir", str(tmp_path), "-c", str(tmp_path / "pytest.ini"), str(tmp_path)],
                   cwd=tmp_path, capture_output=True, check=False, timeout=120)
    results = items_of(report)
    assert [(r["title"].split(" > ")[-1], r["status"], r.get("test_case_code")) for r in results] == [
        ("test_ok", "PASSED", "LIVE-1"), ("test_bad", "FAILED", None), ("test_skip", "SKIPPED", None),
        ("test_tagged", "PASSED", "LIVE-2"), ("test_ünïcode", "PASSED", None),
    ]
    assert {r["framework"] for r in results} == {"pytest"}
    assert "nope" in results[1]["error_message"]
