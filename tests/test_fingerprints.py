"""Fingerprints on the reports of real frameworks (tests/fixtures/reports): stable across runs, distinct
across failures. Pure functions: no server needed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tms.failures.fingerprints import EMPTY, fingerprint, normalise, of_manual, of_result, top_frames
from tms.reporter.cucumber import parse_cucumber
from tms.reporter.junit import parse_junit
from tms.reporter.model import TestOutcome

REPORTS = Path(__file__).parent / "fixtures" / "reports"


def _failures() -> list[tuple[str, TestOutcome]]:
    found = []
    for path in sorted(REPORTS.glob("*/*")):
        if path.parent.name == "sources" or path.suffix not in (".xml", ".json"):
            continue
        outcomes = parse_cucumber(str(path)) if path.suffix == ".json" else parse_junit(str(path))
        found += [(f"{path.parent.name}/{path.name}", o) for o in outcomes if o.status in ("FAILED", "BROKEN")]
    return found


FAILURES = _failures()


def _next_run(text: str | None) -> str | None:
    """The same failure as another CI run prints it: other numbers, addresses, checkout and temp dirs."""
    if text is None:
        return None
    text = re.sub(r"0x[0-9a-f]+", "0x7ffd0000beef", text)
    text = re.sub(r"(?<![A-Za-z_])\d+", lambda m: str(int(m.group(0)) + 7), text)
    text = text.replace("/work/main/", "/home/runner/work/shop/shop/").replace("/tmp/fixgen/", "/tmp/ci-4711/")
    return text


def test_the_fixtures_hold_failures_of_every_family() -> None:
    families = {name.split("/")[0] for name, _ in FAILURES}
    assert {"pytest", "surefire", "jest", "go", "node", "phpunit", "robot", "cucumber-jvm"} <= families


@pytest.mark.parametrize(("name", "outcome"), FAILURES, ids=[f"{n}:{o.name[:30]}" for n, o in FAILURES])
def test_the_same_failure_in_another_run_has_the_same_fingerprint(name: str, outcome: TestOutcome) -> None:
    first = fingerprint(outcome.error_message, outcome.error_stack)
    again = fingerprint(_next_run(outcome.error_message), _next_run(outcome.error_stack))
    assert re.fullmatch(r"[0-9a-f]{16}", first)
    assert again == first, (name, normalise(outcome.error_message or ""), top_frames(outcome.error_stack or ""))


def test_different_failures_have_different_fingerprints() -> None:
    by_print: dict[str, set[str]] = {}
    for _, outcome in FAILURES:
        message = normalise(outcome.error_message or "")
        by_print.setdefault(fingerprint(outcome.error_message, outcome.error_stack), set()).add(message)
    # one fingerprint never covers two different messages
    assert all(len(messages) == 1 for messages in by_print.values()), by_print
    # and the fixtures' distinct failures stay apart: most of them are distinct
    assert len(by_print) >= len(FAILURES) * 2 // 3


def test_retried_go_test_is_one_failure() -> None:
    timeouts = [o for n, o in FAILURES if n == "go/gotestsum-rerun.xml" and "Timeout" in o.name]
    assert timeouts
    assert len({fingerprint(o.error_message, o.error_stack) for o in timeouts}) == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("self = <sample.TestCart object at 0x7f42a8bbe290>", "self = <sample.TestCart object at <addr>>"),
        ("request 6f1c2a3b-1111-2222-3333-444455556666 failed", "request <uuid> failed"),
        ("case ckv9q8w7e6r5t4y3u2i1o0p9 missing", "case <id> missing"),
        ("commit deadbeefcafe1234 broke it", "commit <hex> broke it"),
        ("at 2026-11-23T10:01:02.123Z and 10:01:02", "at <ts> and <ts>"),
        ("KeyError: 'user_id'", "KeyError: '<v>'"),
        ('expected "a" got "b"', "expected '<v>' got '<v>'"),
        ("expected: <paid> but was: <declined>", "expected: '<v>' but was: '<v>'"),
        ("wrote /tmp/pytest-of-ci/pytest-7/test_x0/out.json", "wrote <tmp>"),
        ("C:\\Users\\ci\\AppData\\Local\\Temp\\xyz\\a.txt missing", "<tmp> missing"),
        ("at Object.toBe (/home/runner/work/app/src/cart.test.js:11:19)", "at Object.toBe (cart.test.js:<n>:<n>)"),
        ("timeout after 5000ms on port 8080", "timeout after <n>ms on port <n>"),
        ("org.opentest4j.AssertionFailedError", "org.opentest4j.AssertionFailedError"),
        ("don't stop, can't stop", "don't stop, can't stop"),
    ],
)
def test_normalisation(text: str, expected: str) -> None:
    assert normalise(text) == expected


def test_top_frames_of_each_language_skip_the_frameworks() -> None:
    java = ("org.opentest4j.AssertionFailedError: boom\n"
            "\tat org.junit.jupiter.api.AssertionUtils.fail(AssertionUtils.java:151)\n"
            "\tat com.shop.Client.charge(Client.java:77)\n\tat com.shop.CartTest.pay(CartTest.java:31)\n"
            "\tat java.base/java.lang.reflect.Method.invoke(Method.java:569)\n")
    assert top_frames(java) == ["at com.shop.Client.charge(Client.java:<n>)",
                                "at com.shop.CartTest.pay(CartTest.java:<n>)"]
    python = ('Traceback (most recent call last):\n  File "/w/tests/test_api.py", line 41, in test_order\n'
              '    client.get("/orders/42")\n  File "/w/shop/client.py", line 88, in get\n'
              '    raise ConnectionError(url)\nConnectionError: http://127.0.0.1:5000/orders/42\n')
    assert top_frames(python) == ["client.py:<n> in get", "test_api.py:<n> in test_order"]
    dotnet = ("   at Shop.Cart.Total() in /src/Shop/Cart.cs:line 42\n"
              "   at Shop.Tests.CartTests.Total() in /src/Shop.Tests/CartTests.cs:line 17\n"
              "   at System.RuntimeMethodHandle.InvokeMethod(Object target)\n")
    assert top_frames(dotnet) == ["at Shop.Cart.Total() in Cart.cs:line <n>",
                                  "at Shop.Tests.CartTests.Total() in CartTests.cs:line <n>"]
    go = "=== RUN   TestRefund\n    pay_test.go:17: refund declined\n--- FAIL: TestRefund (0.00s)\n"
    assert top_frames(go) == ["pay_test.go:<n>: refund declined"]


def test_only_failed_and_broken_results_get_one() -> None:
    assert of_result("PASSED", "x", None) is None
    assert of_result("SKIPPED", "x", None) is None
    # no error text at all is EMPTY, whatever the whitespace or runner chatter (it never forms a cluster)
    assert of_result("FAILED", None, None) == of_result("BROKEN", "", "") == of_result("FAILED", " \n", None) == EMPTY
    assert of_result("FAILED", "--- FAIL: TestX (0.20s)", None) == EMPTY
    assert of_result("FAILED", "x", None) not in (None, EMPTY)


def test_a_manual_failure_is_named_by_its_failed_step_and_note() -> None:
    step = "When I pay by card"
    base = of_manual(step, "card form is blank", None)
    assert base not in (EMPTY, fingerprint("card form is blank", None))  # never an error message's
    # the step's note wins over the result's comment; without one the comment counts
    assert of_manual(step, "card form is blank", "retried twice") == base
    assert of_manual(step, None, "card form is blank") == base == of_manual(step, "  ", "card form is blank")
    # numbers and quoted values go, as in messages; another step or another note is another failure
    assert of_manual("When I pay 30 EUR by card", "order 'A-17' stuck", None) == \
        of_manual("When I pay 45 EUR by card", "order 'B-99' stuck", None)
    assert of_manual("Then I see a receipt", "card form is blank", None) != base
    assert of_manual(step, "card form shows an error", None) != base
    assert of_manual(step, None, None) not in (EMPTY, base)  # the failed step alone names it
    assert of_manual(None, None, None) == of_manual(None, " ", "") == EMPTY


def test_huge_inputs_are_bounded() -> None:
    stack = "\n".join(f"\tat com.shop.Deep.call{i}(Deep.java:{i})" for i in range(100_000))
    assert len(top_frames(stack)) == 2
    assert fingerprint("x" * 1_000_000, "a" * 1_000_000)
