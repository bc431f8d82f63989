"""xUnit.net v2 XML (`dotnet test --logger xunit`, `xunit.console -xml`): one outcome per `<test>`.

| result  | outcome  |
|---------|----------|
| Pass    | PASSED   |
| Fail    | FAILED; BROKEN when the exception is not an assertion's (Xunit.Sdk.*) |
| Skip, NotRun | SKIPPED |

Suite path: the assembly's file name and the collection; the class (`type`) is the classname and is
cut from the front of the test name ("Ns.Cart.Adds(qty: 3)" -> "Adds(qty: 3)"). Tags: trait values
(`[Trait("Category", "@service('X')")]` links); a trait named `service` links like JUnit's property.
Assembly-level `<errors>` (a failing fixture or class cleanup) become BROKEN outcomes of their own:
they are failures no test reports. Retries are not written by xUnit v2.
"""

from __future__ import annotations

import os
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

# delivered whole, never evented inside: a test, and an assembly-level error
_UNITS = frozenset({"test", "error"})
_STATUS = {"pass": "PASSED", "fail": "FAILED", "skip": "SKIPPED", "notrun": "SKIPPED"}


@paused_gc
def parse_xunit(path: str) -> list[TestOutcome]:
    opened: list[str] = []  # the open elements around the tests, root first
    outcomes: list[TestOutcome] = []
    assembly: tuple[str, ...] = ()
    collection: tuple[str, ...] = ()
    executed_at: str | None = None
    with xml_errors(path, "xUnit.net"):
        for event, tag, elem in xml_stream(path, _UNITS):
            if event == START:
                if not opened and tag not in ("assemblies", "assembly"):
                    raise ReportError(path, f"not an xUnit.net v2 report: root element <{tag}>", 1, not_a_report=True)
                if tag == "assembly":
                    name = (elem.get("name") or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
                    assembly = (name,) if name else ()
                    date, time = elem.get("run-date"), elem.get("run-time")
                    executed_at = to_utc_iso(f"{date}T{time}") if date and time else None
                elif tag == "collection":
                    collection = _collection(elem.get("name"))
                opened.append(tag)
                continue
            if tag == "test":
                outcomes.append(_outcome(elem, (*assembly, *collection), executed_at, path))
            elif tag == "error":
                if opened and opened[-1] == "errors":
                    outcomes.append(_error(elem, assembly, path))
            else:
                opened.pop()
                if tag == "collection":
                    collection = ()
    return outcomes


def _outcome(elem: Any, suite_path: tuple[str, ...], executed_at: str | None, path: str) -> TestOutcome:
    raw = (elem.get("result") or "").strip()
    status = _STATUS.get(raw.lower(), "UNKNOWN")
    classname = (elem.get("type") or "").strip() or None
    name = (elem.get("name") or "").strip() or (elem.get("method") or "").strip() or "(unnamed test)"
    if classname and name.startswith(classname + "."):
        name = name[len(classname) + 1:]
    outcome = TestOutcome(name=name, status=status, suite_path=suite_path, classname=classname,
                          duration_ms=seconds_to_ms(elem.get("time")), executed_at=executed_at,
                          framework="xunit", source=path)
    if not len(elem):
        return outcome  # the common case: a passed test with nothing inside
    tags: list[str] = []
    services: list[str] = []
    for child in elem:
        tag = local(child.tag)
        if tag == "traits":
            for trait in child:
                key = (trait.get("name") or "").strip()
                value = (trait.get("value") or "").strip()
                if key.lower() == "service" and value:
                    services.append(value)
                elif value:
                    tags.append(value if value.startswith("@") else f"@{value}")
        elif tag == "failure" and status in ("FAILED", "BROKEN"):
            kind = (child.get("exception-type") or "").strip()
            message = child_text(child, "message").strip()
            trace = child_text(child, "stack-trace").strip()
            line = first_line(message)
            outcome.error_message = (f"{kind}: {line}" if kind and line and kind not in line else line or kind) or None
            outcome.error_stack = cap("\n\n".join(t for t in (message, trace) if t)) or None
            if kind and "Xunit.Sdk." not in kind and "Assert" not in kind:
                outcome.status = status = "BROKEN"  # an exception, not a failed assertion
        elif tag == "reason" and status == "SKIPPED":
            reason = first_line("".join(child.itertext()))
            if reason:
                outcome.notes.append(f"skipped: {reason}")
        elif tag == "output" and status in ("FAILED", "BROKEN"):
            text = "".join(child.itertext()).strip()
            if text:
                outcome.error_stack = cap("\n\n".join(p for p in (outcome.error_stack, f"--- output ---\n{text}") if p))
        elif tag == "attachments":  # xUnit v3 writes <attachments><attachment name=...>path</attachment>
            for attachment in child:
                value = "".join(attachment.itertext()).strip()
                if value and os.path.splitext(value)[1]:
                    base = os.path.dirname(os.path.abspath(path))
                    outcome.attachments.append((attachment.get("name") or os.path.basename(value),
                                                resolve_path(base, value)))
    if status == "FAILED" and not outcome.error_message and outcome.error_stack:
        # jest-xunit writes the failure into <output> only
        outcome.error_message = first_line(outcome.error_stack.removeprefix("--- output ---")) or None
    outcome.tags = tuple(dict.fromkeys(tags))
    outcome.service_properties = tuple(services)
    if status == "UNKNOWN" and raw:
        outcome.notes.append(f"xUnit result: {raw}")
    return outcome


def _collection(raw: str | None) -> tuple[str, ...]:
    """xUnit's default collection per class says nothing the class does not; a path is cut to its file."""
    name = (raw or "").strip()
    if not name or name.startswith("Test collection for "):
        return ()
    return (name.replace("\\", "/").rsplit("/", 1)[-1],)


def _error(elem: Any, assembly: tuple[str, ...], path: str) -> TestOutcome:
    kind = (elem.get("type") or "error").strip()
    name = (elem.get("name") or "").strip()
    failure = next((c for c in elem if local(c.tag) == "failure"), None)
    message = child_text(failure, "message").strip() if failure is not None else ""
    trace = child_text(failure, "stack-trace").strip() if failure is not None else ""
    return TestOutcome(
        name=f"({kind}) {name}".strip(),
        status="BROKEN",
        suite_path=assembly,
        framework="xunit",
        error_message=first_line(message) or kind,
        error_stack=cap("\n\n".join(t for t in (message, trace) if t)) or None,
        source=path,
    )
