"""The readers of issue 24's third wave: NUnit 2, mocha, jest/Vitest, RSpec and dart, on their fixtures
(tests/fixtures/<format>/README.md says which the real tool wrote and which were written by hand from
the tool's documented output), detected from content, forced with --format, and on broken input."""

from __future__ import annotations

import io
import json
import shutil
import time
from collections import Counter
from pathlib import Path

import pytest

from tms.reporter.cli import PARSERS, _parse_all
from tms.reporter.console import Console
from tms.reporter.detect import FORMATS, detect
from tms.reporter.files import classify, expand
from tms.reporter.mapping import to_items
from tms.reporter.model import MAX_XML_DEPTH, ReportError, TestOutcome

FIXTURES = Path(__file__).parent / "fixtures"
NUNIT2 = FIXTURES / "nunit2" / "TestResult.xml"
MOCHA = FIXTURES / "mocha" / "mocha.json"
JEST = FIXTURES / "jest" / "jest.json"
VITEST = FIXTURES / "jest" / "vitest.json"
RSPEC = FIXTURES / "rspec" / "rspec.json"
DART = FIXTURES / "dart" / "dart-test.json"


@pytest.fixture(autouse=True)
def _elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Titles of jest/Vitest test files depend on the working directory: run outside the fixtures."""
    monkeypatch.chdir(tmp_path)


def read(path: Path, forced: str | None = None) -> list[TestOutcome]:
    """What `tms ingest PATH` reads: detected (or forced), parsed, repeated tests titled apart."""
    files, _ = expand([str(path)])
    outcomes, _, errors = _parse_all([str(path)], files, Console(None, False, io.StringIO(), io.StringIO()), forced)
    assert errors == []
    return outcomes


def statuses(outcomes: list[TestOutcome]) -> dict[str, int]:
    return dict(Counter(o.status for o in outcomes))


def titles(outcomes: list[TestOutcome]) -> list[str]:
    return [item.title for item in to_items(outcomes) if not item.code]


def one(outcomes: list[TestOutcome], name: str) -> TestOutcome:
    found = [o for o in outcomes if o.name == name]
    assert len(found) == 1, (name, [o.name for o in outcomes])
    return found[0]


# --- detection and --format ------------------------------------------------------------------------

def test_the_third_wave_format_names() -> None:
    assert FORMATS[-5:] == ("nunit2", "mocha", "jest", "rspec", "dart")


@pytest.mark.parametrize(("path", "kind"), [
    (NUNIT2, "nunit2"), (MOCHA, "mocha"), (JEST, "jest"), (VITEST, "jest"), (RSPEC, "rspec"), (DART, "dart"),
])
def test_each_fixture_is_detected_from_its_content(path: Path, kind: str, tmp_path: Path) -> None:
    assert detect(str(path)) == kind
    renamed = tmp_path / "report.txt"  # never from the file name
    shutil.copy(path, renamed)
    assert detect(str(renamed)) == kind


def test_near_misses_are_not_taken_for_the_new_formats(tmp_path: Path) -> None:
    cases = {
        # mochawesome writes "stats" then "results", not mocha's JSON reporter
        "mochawesome.json": '{"stats": {"suites": 1, "tests": 1}, "results": []}',
        "package.json": '{"version": "1.0.0", "name": "shop", "scripts": {}}',
        "coverage.json": '{"total": {"lines": {"pct": 90}}}',
        "events.json": '{"type": "start", "time": 0}\n',
    }
    for name, text in cases.items():
        path = tmp_path / name
        path.write_text(text)
        assert detect(str(path)) is None, name


def test_dart_stream_after_build_output_is_detected(tmp_path: Path) -> None:
    stream = tmp_path / "dart.json"
    stream.write_text("Building package executable...\nBuilt test:test.\n" + DART.read_text())
    assert detect(str(stream)) == "dart"
    assert statuses(read(stream)) == statuses(read(DART))


def test_detection_of_existing_formats_stays_cheap() -> None:
    """The new probes are anchored at the file's start: detecting a fixture of an older format costs
    about what it did (a generous bound, far from any size-dependent scan)."""
    paths = [str(FIXTURES / p) for p in ("ctrf/pytest-ctrf.json", "playwright/playwright.json",
                                         "gotest/go-test.json", "nunit/pytest-nunit.xml")]
    started = time.perf_counter()
    for _ in range(200):
        for path in paths:
            detect(path)
    assert (time.perf_counter() - started) / (200 * len(paths)) < 0.002


@pytest.mark.parametrize(("path", "kind"), [
    (NUNIT2, "nunit2"), (MOCHA, "mocha"), (JEST, "jest"), (RSPEC, "rspec"), (DART, "dart"),
])
def test_format_forces_the_reader(path: Path, kind: str, tmp_path: Path) -> None:
    reports, _ = classify([str(path)], {str(path)}, kind)
    assert [r.format for r in reports] == [kind]
    assert statuses(read(path, kind)) == statuses(read(path))


def test_forcing_the_wrong_format_is_a_clear_error() -> None:
    with pytest.raises(ReportError, match=r"not an NUnit 2 report: root element <test-run>.*--format nunit"):
        PARSERS["nunit2"](str(FIXTURES / "nunit" / "pytest-nunit.xml"))
    with pytest.raises(ReportError, match="NUnit 2 format"):
        PARSERS["nunit"](str(NUNIT2))
    with pytest.raises(ReportError, match="not a valid mocha JSON report"):
        PARSERS["mocha"](str(JEST))
    with pytest.raises(ReportError, match="not a valid jest/Vitest JSON report"):
        PARSERS["jest"](str(MOCHA))
    with pytest.raises(ReportError, match="not a valid RSpec JSON report"):
        PARSERS["rspec"](str(MOCHA))
    with pytest.raises(ReportError, match="no start event first"):
        PARSERS["dart"](str(FIXTURES / "gotest" / "go-test.json"))


# --- NUnit 2 ---------------------------------------------------------------------------------------

def test_nunit2_counts_titles_messages_and_tags() -> None:
    outcomes = read(NUNIT2)
    assert statuses(outcomes) == {"PASSED": 6, "FAILED": 2, "BROKEN": 3, "SKIPPED": 2, "UNKNOWN": 1}
    assert [f"{o.classname} > {o.name}" for o in outcomes] == [
        "Shop.Tests.CartTests > AddsOneItem", "Shop.Tests.CartTests > AddsDiscountedItem",
        "Shop.Tests.CartTests > PaysByCard", "Shop.Tests.CartTests > PaysByInvoice",
        "Shop.Tests.CartTests > PaysByVoucher", "Shop.Tests.CartTests > ShipsAbroad",
        "Shop.Tests.CartTests > StoresTheCart", "Shop.Tests.CartTests > AddsItems(1)",
        "Shop.Tests.CartTests > AddsItems(2)", "Shop.Tests.CartTests > AddsItems(3)",
        'Shop.Tests.PriceTests("EUR") > RoundsToCents', 'Shop.Tests.PriceTests("USD") > RoundsToCents',
        "Shop.Tests.OrderTests > ListsOrders", "Shop.Tests.OrderTests > CancelsOrder",
    ]
    assert all(o.suite_path == () for o in outcomes)  # the namespace is written once, in the class
    failed = one(outcomes, "AddsDiscountedItem")
    assert failed.error_message == "Expected: 9.0m" and failed.duration_ms == 34
    assert "CartTests.cs:line 31" in (failed.error_stack or "")
    assert failed.tags == ("@cart", "@service('SHOP-7')")
    assert one(outcomes, "PaysByCard").status == "BROKEN"
    assert one(outcomes, "PaysByCard").error_message == (
        "System.NullReferenceException : Object reference not set to an instance of an object.")
    assert one(outcomes, "PaysByVoucher").error_message == "Method has non-void return value, but no result is expected"
    assert one(outcomes, "PaysByInvoice").notes == ["ignored: invoices are not live yet"]
    assert one(outcomes, "ShipsAbroad").notes == ["inconclusive: no carrier configured for this region"]
    assert one(outcomes, "ListsOrders").error_message == "TestFixtureSetUp failed in OrderTests"
    assert one(outcomes, "StoresTheCart").service_properties == ("SHOP-9",)
    linked = {item.code: item.result["status"] for item in to_items(outcomes) if item.code}
    assert linked == {"SHOP-7": "FAILED", "SHOP-9": "PASSED"}
    assert failed.executed_at is not None and failed.executed_at.startswith("2024-05-0")


def test_nunit2_older_schema_without_result_and_pester_descriptions(tmp_path: Path) -> None:
    report = tmp_path / "old.xml"
    report.write_text(
        '<?xml version="1.0"?>\n<test-results name="t" total="3" failures="1" not-run="1">\n'
        '<test-suite name="Cart" type="TestFixture"><results>\n'
        '<test-case name="Cart.Adds item.works" description="works" executed="True" success="True" time="0.5"/>\n'
        '<test-case name="Cart.Pays" executed="True" success="False" time="0.1">'
        '<failure><message>nope</message></failure></test-case>\n'
        '<test-case name="Cart.Later" executed="False"><reason><message>later</message></reason></test-case>\n'
        '</results></test-suite></test-results>\n')
    outcomes = PARSERS["nunit2"](str(report))
    assert [(o.classname, o.name, o.status) for o in outcomes] == [
        ("Cart", "Adds item.works", "PASSED"), ("Cart", "Pays", "FAILED"), ("Cart", "Later", "SKIPPED")]
    assert outcomes[0].duration_ms == 500 and outcomes[1].error_message == "nope"


def test_nunit2_malformed_and_deep_xml_are_clear_errors(tmp_path: Path) -> None:
    cut = tmp_path / "cut.xml"
    data = NUNIT2.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ReportError, match="malformed XML") as caught:
        PARSERS["nunit2"](str(cut))
    assert caught.value.line is not None
    deep = tmp_path / "deep.xml"
    deep.write_text("<test-results>" + "<test-suite name='x'>" * (MAX_XML_DEPTH + 5))
    with pytest.raises(ReportError, match="nested deeper than 1000"):
        PARSERS["nunit2"](str(deep))
    bomb = tmp_path / "bomb.xml"
    bomb.write_text('<?xml version="1.0"?>\n<!DOCTYPE t [<!ENTITY a "lol">]>\n<test-results name="&a;"/>\n')
    with pytest.raises(ReportError, match="possible XML bomb"):
        PARSERS["nunit2"](str(bomb))


# --- mocha -----------------------------------------------------------------------------------------

def test_mocha_counts_titles_retries_and_a_failed_hook() -> None:
    outcomes = read(MOCHA)
    # mocha's own stats: 8 passes, 2 pending, 4 failures (3 tests and the before-all hook)
    assert statuses(outcomes) == {"PASSED": 8, "FAILED": 3, "SKIPPED": 2, "BROKEN": 1}
    assert titles(outcomes) == [
        "works at the top level",
        "Cart adding items > adds one item",
        "Cart adding items > adds 1 items",
        "Cart adding items > adds 2 items",
        "Cart adding items > adds 3 items",
        "Cart adding items > keeps the total positive",
        "Cart adding items > keeps the total positive [2]",
        "Cart adding items > keeps the total positive [3]",
        "Cart checkout > pays by card",
        "Cart checkout > pays by invoice",
        "Cart checkout > pays by voucher",
        "Cart checkout > retries a flaky payment",
        'Orders > "before all" hook for "lists orders"',
    ]
    linked = one(outcomes, "adds a discounted item @service('SHOP-7')")
    assert linked.status == "FAILED" and linked.error_message == "Expected values to be strictly equal:"
    assert "cart.spec.js:11:14" in (linked.error_stack or "")
    assert one(outcomes, "adds 3 items").error_message == "3 items exceed the limit"
    flaky = one(outcomes, "retries a flaky payment")
    assert flaky.status == "PASSED" and flaky.attempts == ["FAILED"]
    hook = one(outcomes, '"before all" hook for "lists orders"')
    assert hook.status == "BROKEN" and hook.error_message == "database not reachable"
    assert all(o.framework == "mocha" for o in outcomes)
    assert linked.executed_at is not None and linked.executed_at.endswith("Z")


# --- jest and Vitest -------------------------------------------------------------------------------

JS_TITLES = [
    "cart.test.js > Cart > adding items > adds one item",
    "cart.test.js > Cart > adding items > adds 1 items",
    "cart.test.js > Cart > adding items > adds 2 items",
    "cart.test.js > Cart > adding items > adds 3 items",
    "cart.test.js > Cart > adding items > keeps the total positive",
    "cart.test.js > Cart > adding items > keeps the total positive [2]",
    "cart.test.js > Cart > adding items > keeps the total positive [3]",
    "cart.test.js > Cart > checkout > pays by card",
    "cart.test.js > Cart > checkout > pays by invoice",
    "cart.test.js > Cart > checkout > pays by voucher",
]


def test_jest_counts_titles_each_rows_retries_and_a_file_that_failed_to_load() -> None:
    outcomes = read(JEST)
    # jest's own count: 10 passed, 4 failed, 1 pending, 1 todo; broken.test.js a runtime error
    assert statuses(outcomes) == {"PASSED": 10, "FAILED": 4, "SKIPPED": 2, "BROKEN": 1}
    assert titles(outcomes) == [
        *JS_TITLES,
        "cart.test.js > prices in EUR > rounds to cents",
        "cart.test.js > prices in USD > rounds to cents",
        "cart.test.js > works at the top level",
        "retry.test.js > retries a flaky payment",
        "retry.test.js > always fails",
        "broken.test.js > (test file failed)",
    ]
    assert all(o.framework == "jest" for o in outcomes)
    linked = one(outcomes, "adds a discounted item @service('SHOP-7')")
    assert linked.error_message == "Error: expect(received).toBe(expected) // Object.is equality"
    assert "Received: 8.991" in (linked.error_stack or "") and "\x1b" not in (linked.error_stack or "")
    flaky = one(outcomes, "retries a flaky payment")
    assert flaky.status == "PASSED" and flaky.attempts == ["FAILED"]
    assert flaky.notes == ["attempt 1: Error: expect(received).toBeGreaterThanOrEqual(expected)"]
    always = one(outcomes, "always fails")
    assert always.status == "FAILED" and always.attempts == ["FAILED", "FAILED"]
    assert one(outcomes, "pays by voucher").notes == ["todo: not written yet"]
    broken = one(outcomes, "(test file failed)")
    assert broken.error_message == "Cannot find module './no-such-module' from 'broken.test.js'"
    assert linked.duration_ms is not None and linked.executed_at is not None


def test_vitest_counts_titles_and_its_retry_notion() -> None:
    outcomes = read(VITEST)
    # Vitest's own count: 10 passed, 4 failed, 1 pending, 1 todo; broken.test.js failed to load
    assert statuses(outcomes) == {"PASSED": 10, "FAILED": 4, "SKIPPED": 2, "BROKEN": 1}
    assert titles(outcomes) == [
        "broken.test.js > (test file failed)",
        *JS_TITLES,
        "cart.test.js > Cart > checkout > retries a flaky payment",
        "cart.test.js > Cart > checkout > always fails",
        "cart.test.js > prices in EUR > rounds to cents",
        "cart.test.js > prices in USD > rounds to cents",
        "cart.test.js > works at the top level",
    ]
    assert all(o.framework == "vitest" for o in outcomes)
    flaky = one(outcomes, "retries a flaky payment")
    assert flaky.status == "PASSED" and flaky.attempts == ["FAILED"]
    assert one(outcomes, "adds 3 items").error_message == "AssertionError: expected 3 to be less than 3"
    assert (one(outcomes, "(test file failed)").error_message or "").startswith("Cannot find module './no-such-module'")


def test_jest_files_inside_the_working_directory_are_relative_to_it(tmp_path: Path) -> None:
    report = tmp_path / "jest.json"
    body = {"numFailedTestSuites": 0, "openHandles": [], "testResults": [
        {"name": str(tmp_path / "src" / "a.test.js"), "status": "passed", "message": "",
         "assertionResults": [{"title": "x", "ancestorTitles": ["A"], "status": "passed", "duration": 3}]}]}
    report.write_text(json.dumps(body))
    assert titles(read(report)) == ["src/a.test.js > A > x"]


# --- RSpec -----------------------------------------------------------------------------------------

def test_rspec_counts_titles_messages_and_errors_outside_of_examples() -> None:
    outcomes = read(RSPEC)
    # RSpec's summary: 14 examples, 3 failures, 3 pending, 1 error occurred outside of examples
    assert statuses(outcomes) == {"PASSED": 8, "FAILED": 3, "SKIPPED": 3, "BROKEN": 1}
    assert titles(outcomes) == [
        "Cart adding items > adds one item",
        "Cart adding items with 1 items > adds 1 items",
        "Cart adding items with 3 items > adds 3 items",
        "Cart adding items > is expected to be positive",
        "Cart adding items > keeps the total positive",
        "Cart adding items > keeps the total positive [2]",
        "Cart checkout > pays by card",
        "Cart checkout > pays by invoice",
        "Cart checkout > pays by voucher",
        "Cart checkout > ships abroad",
        "Price in EUR > rounds to cents",
        "Price in USD > rounds to cents",
        "works at the top level",
        "(errors outside of examples)",
    ]
    linked = one(outcomes, "adds a discounted item @service('SHOP-7')")
    assert linked.error_message == "RSpec::Expectations::ExpectationNotMetError: expected: 9.0"
    assert linked.duration_ms == 12 and "cart_spec.rb:10" in (linked.error_stack or "")
    assert one(outcomes, "pays by card").error_message == "NoMethodError: undefined method `number' for nil"
    assert one(outcomes, "pays by voucher").notes == ["pending: Temporarily skipped with xit"]
    outside = one(outcomes, "(errors outside of examples)")
    assert outside.error_message == "An error occurred while loading ./spec/orders_spec.rb."
    assert "cannot load such file -- shop/orders" in (outside.error_stack or "")
    assert all(o.framework == "rspec" for o in outcomes)


# --- dart ------------------------------------------------------------------------------------------

def test_dart_counts_titles_retries_and_late_errors() -> None:
    outcomes = read(DART)
    assert statuses(outcomes) == {"PASSED": 8, "FAILED": 3, "BROKEN": 4, "SKIPPED": 2}
    assert titles(outcomes) == [
        "test/cart_test.dart > Cart > adding items > adds one item",
        "test/cart_test.dart > Cart > adding items > adds 1 items",
        "test/cart_test.dart > Cart > adding items > adds 2 items",
        "test/cart_test.dart > Cart > adding items > adds 3 items",
        "test/cart_test.dart > Cart > adding items > keeps the total positive",
        "test/cart_test.dart > Cart > adding items > keeps the total positive [2]",
        "test/cart_test.dart > Cart > checkout > pays by card",
        "test/cart_test.dart > Cart > checkout > pays by invoice",
        "test/cart_test.dart > Cart > checkout > retries a flaky payment",
        "test/cart_test.dart > Cart > checkout > always fails",
        "test/cart_test.dart > prices in EUR > rounds to cents",
        "test/cart_test.dart > works at the top level",
        "test/orders_test.dart > Orders",
        "test/orders_test.dart > lists orders late",
        "test/orders_test.dart > (tearDownAll)",
        "test/broken_test.dart > loading test/broken_test.dart",
    ]
    card = one(outcomes, "pays by card")
    assert card.status == "BROKEN" and (card.error_message or "").startswith("NoSuchMethodError")
    assert "charging card **** 4242" in (card.error_stack or "") and card.duration_ms == 4
    flaky = one(outcomes, "retries a flaky payment")
    assert flaky.status == "PASSED" and flaky.attempts == ["FAILED"]
    always = one(outcomes, "always fails")
    assert always.status == "FAILED" and always.attempts == ["FAILED"]
    assert one(outcomes, "pays by invoice").notes == ["skipped: invoices are not live yet"]
    late = one(outcomes, "lists orders late")
    assert late.status == "BROKEN" and late.error_message == "Bad state: the order stream was closed twice"
    assert one(outcomes, "loading test/broken_test.dart").error_message == 'Failed to load "test/broken_test.dart":'
    assert all(o.framework == "dart" for o in outcomes)


def test_dart_stream_cut_short_and_malformed_lines(tmp_path: Path) -> None:
    lines = DART.read_text().splitlines(keepends=True)
    cut = tmp_path / "cut.json"
    cut.write_text("".join(lines[:18]))  # ends inside "adds a discounted item" after its error
    outcomes = PARSERS["dart"](str(cut))
    unfinished = one(outcomes, "adds a discounted item @service('SHOP-7')")
    assert unfinished.status == "BROKEN" and unfinished.error_message == "Expected: <9.0>"
    assert "no result: the stream ends before the test finished (crash or timeout)" in unfinished.notes
    half = tmp_path / "half.json"
    half.write_text("".join(lines[:5]) + lines[5][: len(lines[5]) // 2])
    with pytest.raises(ReportError, match="cut short") as caught:
        PARSERS["dart"](str(half))
    assert caught.value.line == 6


def test_dart_reading_is_linear(tmp_path: Path) -> None:
    """A stream of 20,000 tests reads in about the time of 10 times 2,000: no per-event rescans."""

    def stream(count: int) -> Path:
        path = tmp_path / f"s{count}.json"
        rows = ['{"protocolVersion":"0.1.1","runnerVersion":"1.25.8","pid":1,"type":"start","time":0}',
                '{"suite":{"id":0,"platform":"vm","path":"test/a_test.dart"},"type":"suite","time":0}',
                '{"group":{"id":1,"suiteID":0,"parentID":null,"name":"","testCount":1},"type":"group","time":0}']
        for number in range(2, count + 2):
            rows.append(f'{{"test":{{"id":{number},"name":"t {number}","suiteID":0,"groupIDs":[1]}},'
                        f'"type":"testStart","time":{number}}}')
            rows.append(f'{{"testID":{number},"result":"success","skipped":false,"hidden":false,'
                        f'"type":"testDone","time":{number + 1}}}')
        path.write_text("\n".join(rows) + "\n")
        return path

    small, large = stream(2_000), stream(20_000)

    def best(path: Path) -> float:
        times = []
        for _ in range(3):
            started = time.perf_counter()
            assert len(PARSERS["dart"](str(path))) in (2_000, 20_000)
            times.append(time.perf_counter() - started)
        return min(times)

    assert best(large) < 25 * best(small)


# --- bad input for the JSON readers ---------------------------------------------------------------

@pytest.mark.parametrize(("kind", "path"), [("mocha", MOCHA), ("jest", JEST), ("rspec", RSPEC)])
def test_truncated_json_names_the_line(kind: str, path: Path, tmp_path: Path) -> None:
    data = path.read_bytes()
    bad = tmp_path / "cut.json"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(ReportError) as caught:
        PARSERS[kind](str(bad))
    assert "truncated" in caught.value.reason and caught.value.path == str(bad)


@pytest.mark.parametrize("kind", ["mocha", "jest", "rspec"])
def test_json_nesting_bombs_are_refused(kind: str, tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.json"
    bomb.write_text({"mocha": '{"stats": {}, "tests": [{"err": ', "jest": '{"testResults": [{"message": ',
                     "rspec": '{"version": "3.13.0", "examples": [{"id": '}[kind] + "[" * 200_000)
    with pytest.raises(ReportError) as caught:
        PARSERS[kind](str(bomb))
    assert "nest" in caught.value.reason or "truncated" in caught.value.reason


def test_json_of_the_wrong_shape_names_the_json_path(tmp_path: Path) -> None:
    bad = tmp_path / "rspec.json"
    bad.write_text(json.dumps({"version": "3.13.0", "examples": [
        {"description": "a", "full_description": "a", "status": "passed"}, {"description": "b", "status": 7}]}))
    with pytest.raises(ReportError, match=r"\$\.examples\[1\]\.status: missing or not a string: 7"):
        PARSERS["rspec"](str(bad))
    bad.write_text(json.dumps({"stats": {}, "tests": [{"title": 3}]}))
    with pytest.raises(ReportError, match=r"\$\.tests\[0\]\.title: a test without a title"):
        PARSERS["mocha"](str(bad))
    bad.write_text(json.dumps({"testResults": [{"assertionResults": "x"}]}))
    with pytest.raises(ReportError, match=r"testResults\[0\]\.assertionResults"):
        PARSERS["jest"](str(bad))


# --- source location: read from the report and sent as the result's file and line (issue 24) ------

@pytest.mark.parametrize(("kind", "path", "name", "where"), [
    ("junit", FIXTURES / "reports" / "pytest" / "junit.xml", None, ("sample_checkout.py", 5)),
    ("playwright", FIXTURES / "playwright" / "playwright.json", None, ("shop.spec.mjs", 6)),
    ("ctrf", FIXTURES / "ctrf" / "pytest-ctrf.json", None, ("sample_shop.py", None)),
    ("mocha", MOCHA, "adds one item", ("/tmp/fix24/npm/mocha/cart.spec.js", None)),
    ("jest", JEST, "adds one item", ("/tmp/fix24/npm/jest/cart.test.js", 4)),
    ("rspec", RSPEC, "adds one item", ("./spec/cart_spec.rb", 5)),
    ("dart", DART, "adds one item", ("file:///build/shop/test/cart_test.dart", 12)),
])
def test_source_location_is_read_and_sent_as_file_and_line(kind: str, path: Path, name: str | None,
                                                           where: tuple[str, int | None]) -> None:
    outcomes = PARSERS[kind](str(path))
    found = one(outcomes, name) if name else outcomes[0]
    assert (found.location_file, found.location_line) == where
    sent = [item.result for item in to_items(outcomes) if item.result["title"] == to_items([found])[0].result["title"]]
    assert sent and (sent[0].get("file"), sent[0].get("line")) == where
    for item in to_items(outcomes):
        assert not {"location", "location_file", "location_line"} & set(item.result)  # the API's names only
