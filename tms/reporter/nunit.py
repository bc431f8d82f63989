"""NUnit 3 result XML (`nunit3-console`, `dotnet test --logger nunit`, pytest-nunit, jest/karma NUnit
reporters): one outcome per `<test-case>`, suites nested to any depth.

| result (label)                                   | outcome |
|--------------------------------------------------|---------|
| Passed; Warning (a note keeps the warning)       | PASSED  |
| Failed                                           | FAILED  |
| Failed with label Error, Cancelled or Invalid    | BROKEN  |
| Skipped (Ignored, Explicit, ...)                 | SKIPPED |
| Inconclusive                                     | UNKNOWN |

Suite path: the `test-suite` names, leaving out the assembly (a file path) and the parameterized
method or theory (the case's own name repeats it). Tags: `Category` properties of the case and of its
suites (`[Category("@service('X')")]` links); a `service` property links like JUnit's. Attachments:
`<attachments><attachment><filePath>`. Retries (`[Retry]`) are not written by NUnit: only the final
attempt is in the file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from tms.reporter.junit import to_utc_iso
from tms.reporter.model import ReportError, TestOutcome, paused_gc
from tms.reporter.reading import (
    START,
    cap,
    child_text,
    first_line,
    local,
    resolve_path,
    seconds_to_ms,
    xml_errors,
    xml_stream,
)

# delivered whole, never evented inside: a test case, and the properties of a suite
_UNITS = frozenset({"test-case", "properties"})
_SKIP_SUITES = {"Assembly", "ParameterizedMethod", "Theory", "GenericMethod", "Project"}
_BROKEN_LABELS = {"error", "cancelled", "invalid"}
# suites that are a test class: their full name ("Shop.Tests.CartTests(\"EUR\")") is the test's class
_FIXTURES = {"TestFixture", "GenericFixture", "SetUpFixture"}


@dataclass(slots=True)
class _Suite:
    path: tuple[str, ...]
    fixture: str | None = None  # a fixture's full name, namespace and arguments included
    categories: list[str] = field(default_factory=list)
    services: list[str] = field(default_factory=list)


@paused_gc
def parse_nunit(path: str) -> list[TestOutcome]:
    opened: list[str] = []  # the open elements around the test cases, root first
    suites: list[_Suite] = []
    outcomes: list[TestOutcome] = []
    base = os.path.dirname(os.path.abspath(path))
    with xml_errors(path, "NUnit"):
        for event, tag, elem in xml_stream(path, _UNITS):
            if event == START:
                if not opened and tag not in ("test-run", "test-suite"):
                    hint = " (NUnit 2 format: read it as --format nunit2)" if tag == "test-results" else ""
                    raise ReportError(path, f"not an NUnit 3 report: root element <{tag}>{hint}", 1, not_a_report=True)
                if tag == "test-suite":
                    above = suites[-1].path if suites else ()
                    name = (elem.get("name") or "").strip()
                    kind = elem.get("type")
                    keep = name and kind not in _SKIP_SUITES
                    fixture = suites[-1].fixture if suites else None
                    if kind in _FIXTURES:
                        fixture = (elem.get("fullname") or "").strip() or name or fixture
                    suites.append(_Suite((*above, name) if keep else above, fixture))
                opened.append(tag)
                continue
            if tag == "test-case":
                outcomes.append(_outcome(elem, suites, path, base))
            elif tag == "properties":
                if opened and opened[-1] == "test-suite" and suites:
                    categories, services = _properties(elem)
                    suites[-1].categories.extend(categories)
                    suites[-1].services.extend(services)
            else:
                opened.pop()
                if tag == "test-suite":
                    suites.pop()
    return outcomes


def _properties(elem: Any) -> tuple[list[str], list[str]]:
    categories, services = [], []
    for prop in elem:
        if local(prop.tag) != "property":
            continue
        name = (prop.get("name") or "").strip().lower()
        value = (prop.get("value") or "").strip()
        if not value:
            continue
        if name == "category":
            categories.append(value if value.startswith("@") else f"@{value}")
        elif name == "service":
            services.append(value)
    return categories, services


def _outcome(elem: Any, suites: list[_Suite], path: str, base: str) -> TestOutcome:
    result = (elem.get("result") or "").strip().lower()
    label = (elem.get("label") or "").strip().lower()
    if result == "passed" or result == "warning":
        status = "PASSED"
    elif result == "failed":
        status = "BROKEN" if label in _BROKEN_LABELS else "FAILED"
    elif result == "skipped":
        status = "SKIPPED"
    else:
        status = "UNKNOWN"
    categories = [c for s in suites for c in s.categories]
    services = [v for s in suites for v in s.services]
    name = (elem.get("name") or "").strip() or (elem.get("fullname") or "").strip() or "(unnamed test)"
    classname = (elem.get("classname") or "").strip() or None
    suite_path = suites[-1].path if suites else ()
    fixture = suites[-1].fixture if suites else None
    if (classname and "." in classname) or fixture:
        # the namespace suites and the fixture repeat what the class's full name says: the title is
        # "Shop.Tests.CartTests > Adds", with a parametrized fixture's arguments kept
        if fixture and fixture.startswith(classname or fixture):
            classname = fixture
        suite_path = ()
    if "::" in name:  # pytest-nunit: "file.py::Class::test" with the file as classname
        parts = name.split("::")
        name, classname = parts[-1], " > ".join(parts[:-1]) or classname
    outcome = TestOutcome(
        name=name,
        status=status,
        suite_path=suite_path,
        classname=classname,
        duration_ms=seconds_to_ms(elem.get("duration")),
        executed_at=to_utc_iso(_iso(elem.get("start-time"))),
        framework=None,
        source=path,
    )
    for child in elem:
        tag = local(child.tag)
        if tag == "properties":
            own_categories, own_services = _properties(child)
            categories.extend(own_categories)
            services.extend(own_services)
        elif tag == "failure" and status in ("FAILED", "BROKEN"):
            message = child_text(child, "message").strip()
            trace = child_text(child, "stack-trace").strip()
            outcome.error_message = first_line(message) or first_line(trace) or None
            outcome.error_stack = cap("\n\n".join(t for t in (message, trace) if t and t != "None")) or None
        elif tag == "reason" and status in ("SKIPPED", "UNKNOWN", "PASSED"):
            reason = first_line(child_text(child, "message"))
            if reason:
                outcome.notes.append(f"{'warning' if result == 'warning' else 'skipped'}: {reason}"
                                     if status != "UNKNOWN" else f"inconclusive: {reason}")
        elif tag == "output" and status in ("FAILED", "BROKEN"):
            text = "".join(child.itertext()).strip()
            if text:
                outcome.error_stack = cap("\n\n".join(p for p in (outcome.error_stack, f"--- output ---\n{text}") if p))
        elif tag == "attachments":
            for attachment in child:
                file_path = child_text(attachment, "filePath").strip()
                if file_path:
                    description = child_text(attachment, "description").strip()
                    outcome.attachments.append((description or os.path.basename(file_path),
                                                resolve_path(base, file_path)))
    outcome.tags = tuple(dict.fromkeys(categories))
    outcome.service_properties = tuple(dict.fromkeys(services))
    if status in ("FAILED", "BROKEN") and not outcome.error_message:
        outcome.error_message = f"{result} ({label})" if label else result
    return outcome


def _iso(value: str | None) -> str | None:
    """NUnit writes "2024-05-01 10:00:00Z" or "2024-05-01T10:00:00.123Z"."""
    if not value:
        return None
    return value.strip().replace(" ", "T", 1)
