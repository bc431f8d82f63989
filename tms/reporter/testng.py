"""TestNG's `testng-results.xml` (TestNG itself, Maven Surefire and Gradle with TestNG): one outcome
per `<test-method>` that is not a configuration method.

| status | outcome |
|--------|---------|
| PASS   | PASSED  |
| FAIL   | FAILED; BROKEN when the exception is not an assertion error |
| SKIP   | SKIPPED; a SKIP with `retried="true"` is an earlier attempt of the test that follows |

A configuration method (`@BeforeMethod`, ...) that FAILed becomes a BROKEN outcome of its own: the
tests it skipped say only "skipped". Suite path: the `<suite>` and `<test>` names; the class is the
classname; data-provider parameters are appended to the name ("pay(10, EUR)"). Tags: the groups of
the method (`@Test(groups = "@service('X')")` links) and `@service('X')` in its description. Retries:
TestNG 7 writes each retried attempt as SKIP with `retried="true"`; older versions as a plain SKIP of
the same method just before its final attempt, which folds the same way.
"""

from __future__ import annotations

from typing import Any

from tms.reporter.junit import to_utc_iso
from tms.reporter.model import ReportError, TestOutcome, fold_retries, paused_gc
from tms.reporter.reading import START, cap, child_text, first_line, local, text_of, xml_errors, xml_stream

# delivered whole, never evented inside: a test method, and a group with its methods
_UNITS = frozenset({"test-method", "group"})
_STATUS = {"PASS": "PASSED", "FAIL": "FAILED", "SKIP": "SKIPPED"}


@paused_gc
def parse_testng(path: str) -> list[TestOutcome]:
    opened: list[str] = []  # the open elements around the test methods, root first
    outcomes: list[TestOutcome] = []
    suite: list[str] = []
    classname: str | None = None
    groups: dict[str, list[str]] = {}  # "class.method" -> group names
    last: dict[tuple[Any, ...], TestOutcome] = {}  # the latest outcome of each test, to spot retries
    skip_errors: dict[int, tuple[str | None, str | None]] = {}
    with xml_errors(path, "TestNG"):
        for event, tag, elem in xml_stream(path, _UNITS):
            if event == START:
                if not opened and tag != "testng-results":
                    raise ReportError(path, f"not a TestNG report: root element <{tag}>", 1, not_a_report=True)
                if tag in ("suite", "test"):
                    suite.append((elem.get("name") or "").strip())
                elif tag == "class":
                    classname = (elem.get("name") or "").strip() or None
                opened.append(tag)
                continue
            if tag == "group":
                name = (elem.get("name") or "").strip()
                for method in elem:
                    if local(method.tag) == "method" and name:
                        method_key = f"{method.get('class') or ''}.{method.get('name') or ''}"
                        groups.setdefault(method_key, []).append(name)
            elif tag == "test-method":
                outcome = _outcome(elem, tuple(s for s in suite if s), classname, groups, path, skip_errors)
                if outcome is not None:
                    key = (outcome.suite_path, outcome.classname, outcome.name)
                    earlier = last.get(key)
                    if earlier is not None and earlier.status == "SKIPPED" and id(earlier) in skip_errors:
                        # TestNG 6 writes a retried attempt as a SKIP carrying the failure: it failed
                        earlier.status = "FAILED"
                        earlier.error_message, earlier.error_stack = skip_errors[id(earlier)]
                        earlier.notes = [n for n in earlier.notes if not n.startswith("skipped: ")] + ["retried"]
                    last[key] = outcome
                    outcomes.append(outcome)
            else:
                opened.pop()
                if tag in ("suite", "test"):
                    if suite:
                        suite.pop()
                    if tag == "suite":
                        groups.clear()
                elif tag == "class":
                    classname = None
    # only an attempt TestNG marks as retried is folded into the next run of its method: a method run
    # again otherwise (invocationCount, a data provider row without parameters) is a test of its own
    return fold_retries(outcomes, _retried)


def _retried(earlier: TestOutcome, later: TestOutcome) -> bool:
    return "retried" in earlier.notes


def _outcome(elem: Any, suite_path: tuple[str, ...], classname: str | None, groups: dict[str, list[str]],
             path: str, skip_errors: dict[int, tuple[str | None, str | None]]) -> TestOutcome | None:
    raw = (elem.get("status") or "").strip().upper()
    status = _STATUS.get(raw, "UNKNOWN")
    config = (elem.get("is-config") or "").lower() == "true"
    if config and status != "FAILED":
        return None
    name = (elem.get("name") or "").strip() or "(unnamed test)"
    params = []
    description = (elem.get("description") or "").strip()
    for child in elem:
        if local(child.tag) == "params":
            for param in child:
                value = child_text(param, "value").strip()
                params.append(value)
    if params:
        name = f"{name}({', '.join(params)})"
    if config:
        name = f"{name} (configuration method)"
        status = "BROKEN"
    method_groups = groups.get(f"{classname or ''}.{elem.get('name') or ''}", ())
    tags = [g if g.startswith("@") else f"@{g}" for g in method_groups]
    if "@service" in description.lower():
        tags.append(description)
    outcome = TestOutcome(
        name=name,
        status=status,
        suite_path=suite_path,
        classname=classname,
        duration_ms=_ms(elem.get("duration-ms")),
        executed_at=to_utc_iso(elem.get("started-at")),
        framework="testng",
        tags=tuple(dict.fromkeys(tags)),
        source=path,
    )
    exception = next((c for c in elem if local(c.tag) == "exception"), None)
    if exception is not None:
        kind = (exception.get("class") or "").strip()
        message = child_text(exception, "message").strip()
        trace = child_text(exception, "full-stacktrace").strip()
        line = first_line(message)
        error = (f"{kind}: {line}" if kind and line and kind not in line else line or kind) or None
        if status in ("FAILED", "BROKEN"):
            outcome.error_message, outcome.error_stack = error, cap(trace or message) or None
            if status == "FAILED" and kind and "Assert" not in kind and "ComparisonFailure" not in kind:
                outcome.status = "BROKEN"  # an exception, not a failed assertion (JUnit's error)
        elif "skip" not in kind.lower() and kind != "java.lang.Throwable":
            skip_errors[id(outcome)] = (error, cap(trace or message) or None)
    if exception is not None and status == "SKIPPED":
        reason = first_line(child_text(exception, "message")) or (exception.get("class") or "")
        if reason:
            outcome.notes.append(f"skipped: {reason}")
    output = next((c for c in elem if local(c.tag) == "reporter-output"), None)
    if output is not None and status in ("FAILED", "BROKEN"):
        text = text_of(output).strip()
        if text:
            parts = (outcome.error_stack, f"--- reporter output ---\n{text}")
            outcome.error_stack = cap("\n\n".join(p for p in parts if p))
    if (elem.get("retried") or "").lower() == "true":
        outcome.notes.append("retried")
        outcome.status = "FAILED" if status == "SKIPPED" else status  # TestNG 7 marks a retried failure SKIP
    return outcome


def _ms(value: str | None) -> int | None:
    try:
        number = int(value) if value is not None else None
    except ValueError:
        return None
    return number if number is not None and number >= 0 else None
