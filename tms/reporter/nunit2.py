"""NUnit 2 result XML (`<test-results>`: nunit-console 2.x, NUnit 2.6's `TestResult.xml`, Pester's
`NUnitXml`, and the many tools that still write the NUnit 2.5 schema): one outcome per `<test-case>`,
suites nested to any depth.

| result (NUnit 2.5/2.6)                     | outcome |
|--------------------------------------------|---------|
| Success                                    | PASSED  |
| Failure                                    | FAILED  |
| Error, Cancelled, NotRunnable (invalid)    | BROKEN  |
| Ignored, Skipped                           | SKIPPED |
| Inconclusive                               | UNKNOWN |

NUnit 2.2 to 2.4 write no `result`: `executed="False"` is SKIPPED, else `success` says PASSED or FAILED.

Title: NUnit 2 names a test case by its full name (`Shop.Tests.PriceTests.Rounds(2.5m)`); the class is
the fixture's full name (the `Namespace` suites and the `TestFixture`, a parametrized fixture's
arguments included) and the name the rest, so the title reads like NUnit 3's:
`Shop.Tests.PriceTests > Rounds(2.5m)`. Pester writes the `It` block as the case's `description`
(`name="Describe.It"`), which splits it the same way. Tags: `<categories>` of the case and its suites
(`[Category("@service('X')")]` links); a `service` property links like JUnit's. NUnit 2 has no
retries (only the last attempt is written): a repeat is a test of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tms.reporter.junit import to_utc_iso
from tms.reporter.model import ReportError, TestOutcome, paused_gc
from tms.reporter.reading import START, cap, child_text, first_line, local, seconds_to_ms, xml_errors, xml_stream

# delivered whole, never evented inside: a test case, a suite's categories and properties, and the
# small elements of the header
_UNITS = frozenset({"test-case", "categories", "properties", "environment", "culture-info", "reason", "failure"})
_STATUS = {
    "success": "PASSED", "failure": "FAILED", "error": "BROKEN", "cancelled": "BROKEN", "notrunnable": "BROKEN",
    "ignored": "SKIPPED", "skipped": "SKIPPED", "inconclusive": "UNKNOWN",
}
# suites whose name is a file (the assembly, a project) or repeats the case's own name
_SKIP_SUITES = {"assembly", "project", "parameterizedtest", "theory", "genericmethod"}
_NAMESPACES = {"namespace", "setupfixture"}
_FIXTURES = {"testfixture", "genericfixture"}


@dataclass(slots=True)
class _Suite:
    path: tuple[str, ...]  # the names of the suites kept in a title when no fixture names the class
    namespace: str  # the dotted namespace so far
    fixture: str | None  # the fixture's full name
    categories: list[str] = field(default_factory=list)
    services: list[str] = field(default_factory=list)


@paused_gc
def parse_nunit2(path: str) -> list[TestOutcome]:
    opened: list[str] = []
    suites: list[_Suite] = []
    outcomes: list[TestOutcome] = []
    executed_at: str | None = None
    with xml_errors(path, "NUnit 2"):
        for event, tag, elem in xml_stream(path, _UNITS):
            if event == START:
                if not opened:
                    if tag != "test-results":
                        nunit3 = tag in ("test-run", "test-suite")
                        hint = " (NUnit 3 format: read it as --format nunit)" if nunit3 else ""
                        raise ReportError(path, f"not an NUnit 2 report: root element <{tag}>{hint}", 1,
                                          not_a_report=True)
                    moment = " ".join(v.strip() for v in (elem.get("date"), elem.get("time")) if v and v.strip())
                    executed_at = to_utc_iso(moment.replace(" ", "T", 1)) if " " in moment else None
                elif tag == "test-suite":
                    suites.append(_suite(elem, suites[-1] if suites else None))
                opened.append(tag)
                continue
            if tag == "test-case":
                outcomes.append(_outcome(elem, suites, path, executed_at))
            elif tag in ("categories", "properties"):
                if opened and opened[-1] == "test-suite" and suites:
                    categories, services = _tags(elem)
                    suites[-1].categories.extend(categories)
                    suites[-1].services.extend(services)
            elif tag not in _UNITS:
                opened.pop()
                if tag == "test-suite" and suites:
                    suites.pop()
    return outcomes


def _suite(elem: Any, parent: _Suite | None) -> _Suite:
    name = (elem.get("name") or "").strip()
    kind = (elem.get("type") or "").strip().lower()
    path = parent.path if parent else ()
    namespace = parent.namespace if parent else ""
    fixture = parent.fixture if parent else None
    if kind in _NAMESPACES and name:
        namespace = f"{namespace}.{name}" if namespace else name
    elif kind in _FIXTURES and name:
        fixture = f"{namespace}.{name}" if namespace and not name.startswith(namespace + ".") else name
    if name and kind not in _SKIP_SUITES and kind not in _NAMESPACES:
        path = (*path, name)
    return _Suite(path, namespace, fixture)


def _tags(elem: Any) -> tuple[list[str], list[str]]:
    categories, services = [], []
    for child in elem:
        tag = local(child.tag)
        if tag == "category":
            value = (child.get("name") or "").strip()
            if value:
                categories.append(value if value.startswith("@") else f"@{value}")
        elif tag == "property":
            name = (child.get("name") or "").strip().lower()
            value = (child.get("value") or "").strip()
            if value and name == "service":
                services.append(value)
            elif value and name in ("category", "_categories"):
                categories.append(value if value.startswith("@") else f"@{value}")
    return categories, services


def _status(elem: Any) -> tuple[str, str]:
    result = (elem.get("result") or "").strip()
    if result:
        return _STATUS.get(result.lower(), "UNKNOWN"), result
    if (elem.get("executed") or "").strip().lower() == "false":
        return "SKIPPED", "not executed"
    success = (elem.get("success") or "").strip().lower()
    if success == "true":
        return "PASSED", "success"
    if success == "false":
        return "FAILED", "failure"
    return "UNKNOWN", "no result"


def _split(full: str, description: str, fixture: str | None) -> tuple[str | None, str]:
    """The class and the test's own name in a case's full name."""
    if fixture and full.startswith(fixture + ".") and len(full) > len(fixture) + 1:
        return fixture, full[len(fixture) + 1:]
    if description and full.endswith("." + description) and len(full) > len(description) + 1:
        return full[: -len(description) - 1], description  # Pester: "Describe.Context.It" and the It
    head = full.split("(", 1)[0]
    dot = head.rfind(".")
    if dot > 0:
        return full[:dot], full[dot + 1:]
    return None, full


def _outcome(elem: Any, suites: list[_Suite], path: str, executed_at: str | None) -> TestOutcome:
    status, result = _status(elem)
    suite = suites[-1] if suites else None
    full = (elem.get("name") or "").strip()
    description = (elem.get("description") or "").strip()
    classname, name = _split(full, description, suite.fixture if suite else None) if full else (None, "")
    if not name:
        name = description or "(unnamed test)"
    categories = [c for s in suites for c in s.categories]
    services = [v for s in suites for v in s.services]
    outcome = TestOutcome(
        name=name,
        status=status,
        # the class's full name says what the namespace and fixture suites would: written once
        suite_path=() if classname else (suite.path if suite else ()),
        classname=classname,
        duration_ms=seconds_to_ms((elem.get("time") or "").replace(",", ".")) if elem.get("time") else None,
        executed_at=executed_at,
        source=path,
    )
    for child in elem:
        tag = local(child.tag)
        if tag in ("categories", "properties"):
            own_categories, own_services = _tags(child)
            categories.extend(own_categories)
            services.extend(own_services)
        elif tag == "failure" and status in ("FAILED", "BROKEN", "UNKNOWN"):
            message = child_text(child, "message").strip()
            trace = child_text(child, "stack-trace").strip()
            if status == "UNKNOWN":
                if message:
                    outcome.notes.append(f"inconclusive: {first_line(message)}")
                continue
            outcome.error_message = first_line(message) or first_line(trace) or None
            outcome.error_stack = cap("\n\n".join(t for t in (message, trace) if t)) or None
        elif tag == "reason":
            reason = first_line(child_text(child, "message"))
            if not reason:
                continue
            if status == "SKIPPED":
                outcome.notes.append(f"{result.lower()}: {reason}")
            elif status == "BROKEN" and not outcome.error_message:
                outcome.error_message = reason  # NotRunnable: why it could not run
            elif status == "UNKNOWN":
                outcome.notes.append(f"inconclusive: {reason}")
    outcome.tags = tuple(dict.fromkeys(categories))
    outcome.service_properties = tuple(dict.fromkeys(services))
    if status in ("FAILED", "BROKEN") and not outcome.error_message:
        outcome.error_message = result
    return outcome
