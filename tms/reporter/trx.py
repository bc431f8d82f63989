"""Visual Studio TRX (`dotnet test --logger trx`, vstest, MSTest, and the jest/mocha/karma TRX
reporters): one outcome per `UnitTestResult` (data rows in `InnerResults` each their own).

The results come before the `TestDefinitions` that hold each test's class, categories and
properties, so the file is read as a stream keeping only the outcomes and a small definition per
test id, and the two are joined at the end.

| outcome attribute                             | outcome  |
|-----------------------------------------------|----------|
| Passed, PassedButRunAborted, Warning          | PASSED   |
| Failed                                        | FAILED   |
| Error, Timeout, Aborted, Disconnected         | BROKEN   |
| NotExecuted, NotRunnable, Pending             | SKIPPED  |
| Inconclusive, InProgress, Completed, other    | UNKNOWN  |

Tags: `TestCategory` items (an MSTest `[TestCategory("@service('X')")]` links). A property (`Key`
"service") links like JUnit's service property. Attachments: `ResultFiles`, looked up in the run's
deployment folder `<run>/In/<relativeResultsDirectory>/` next to the report.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from tms.reporter.junit import to_utc_iso
from tms.reporter.model import ReportError, TestOutcome, paused_gc
from tms.reporter.reading import START, cap, child_text, first_line, local, resolve_path, xml_errors, xml_stream

_STATUS = {
    "passed": "PASSED", "passedbutrunaborted": "PASSED", "warning": "PASSED",
    "failed": "FAILED",
    "error": "BROKEN", "timeout": "BROKEN", "aborted": "BROKEN", "disconnected": "BROKEN",
    "notexecuted": "SKIPPED", "notrunnable": "SKIPPED", "pending": "SKIPPED",
}
# delivered whole, never evented inside: a result (with its data rows) and a test's definition
_UNITS = frozenset({"UnitTestResult", "UnitTest"})
_CONTAINERS = {"Results", "TestDefinitions"}
_DURATION = re.compile(r"^(?:(\d+)\.)?(\d+):(\d+):(\d+(?:\.\d+)?)$")


@dataclass(slots=True)
class _Definition:
    classname: str | None = None
    categories: list[str] = field(default_factory=list)
    services: list[str] = field(default_factory=list)
    storage: str | None = None
    _tags: tuple[str, ...] | None = None

    def tags(self) -> tuple[str, ...]:
        """The categories, each once (computed once: data rows share their test's definition)."""
        if self._tags is None:
            self._tags = tuple(dict.fromkeys(self.categories))
        return self._tags


@paused_gc
def parse_trx(path: str) -> list[TestOutcome]:
    root: Any = None
    containers: list[str] = []  # the open <Results>/<TestDefinitions>
    found: list[tuple[str | None, TestOutcome]] = []
    definitions: dict[str, _Definition] = {}
    deployment: str | None = None
    with xml_errors(path, "TRX"):
        for event, tag, elem in xml_stream(path, _UNITS):
            if event == START:
                if root is None:
                    if tag != "TestRun":
                        raise ReportError(path, f"not a TRX report: root element <{tag}>", 1, not_a_report=True)
                    root = elem
                elif tag in _CONTAINERS:
                    containers.append(tag)
                continue
            if tag == "UnitTestResult":
                if containers and containers[-1] == "Results":  # not one outside the results
                    found.extend(_results(elem, path))
            elif tag == "UnitTest":
                definitions[elem.get("id") or ""] = _definition(elem)
            elif tag in _CONTAINERS:
                containers.pop()
            elif tag == "Deployment":
                deployment = elem.get("runDeploymentRoot") or deployment
    base = os.path.dirname(os.path.abspath(path))
    outcomes = []
    for test_id, outcome in found:
        definition = definitions.get(test_id or "")
        if definition is not None:
            classname = definition.classname
            if classname and outcome.name.startswith(classname + " / "):
                classname = None  # jest-trx-results-processor: the name holds the describe path already
            outcome.classname = classname
            outcome.tags = definition.tags()
            outcome.service_properties = tuple(definition.services)
            if definition.storage and outcome.framework is None:
                outcome.framework = _framework(definition.storage)
        if outcome.attachments:
            outcome.attachments = [(name, _resolve(base, deployment, raw)) for name, raw in outcome.attachments]
        outcomes.append(outcome)
    return outcomes


def _results(elem: Any, path: str) -> list[tuple[str | None, TestOutcome]]:
    """The result, or each data row of a data-driven result (`InnerResults`)."""
    inner = next((c for c in elem if local(c.tag) == "InnerResults"), None) if len(elem) else None
    if inner is not None and len(inner):
        rows = []
        for child in inner:
            if local(child.tag) == "UnitTestResult":
                rows.extend(_results(child, path))
        if rows:
            return rows
    return [(elem.get("testId"), _outcome(elem, path))]


def _outcome(elem: Any, path: str) -> TestOutcome:
    raw = (elem.get("outcome") or "").strip()
    status = _STATUS.get(raw.lower(), "UNKNOWN")
    outcome = TestOutcome(
        name=(elem.get("testName") or "").strip() or "(unnamed test)",
        status=status,
        duration_ms=_duration_ms(elem.get("duration")),
        executed_at=to_utc_iso(elem.get("startTime")),
        source=path,
    )
    if not len(elem):
        if status == "UNKNOWN" and raw:
            outcome.notes.append(f"TRX outcome: {raw}")
        return outcome  # the common case: a passed test with nothing inside
    output = next((c for c in elem if local(c.tag) == "Output"), None)
    if output is not None:
        info = next((c for c in output if local(c.tag) == "ErrorInfo"), None)
        message = child_text(info, "Message").strip() if info is not None else ""
        stack_trace = child_text(info, "StackTrace").strip() if info is not None else ""
        if status in ("FAILED", "BROKEN"):
            outcome.error_message = first_line(message) or first_line(stack_trace) or raw or None
            parts = [message, stack_trace]
            for name in ("StdOut", "StdErr"):
                text = child_text(output, name).strip()
                if text:
                    parts.append(f"--- {name} ---\n{text}")
            outcome.error_stack = cap("\n\n".join(p for p in parts if p)) or None
        elif status == "SKIPPED" and message:
            outcome.notes.append(f"skipped: {first_line(message)}")
    if status == "UNKNOWN" and raw:
        outcome.notes.append(f"TRX outcome: {raw}")
    directory = elem.get("relativeResultsDirectory") or elem.get("executionId") or ""
    for child in elem:
        if local(child.tag) == "ResultFiles":
            for result_file in child:
                raw_path = result_file.get("path")
                if raw_path:
                    outcome.attachments.append((os.path.basename(raw_path.replace("\\", "/")),
                                                os.path.join(directory, raw_path.replace("\\", "/"))))
    return outcome


def _definition(elem: Any) -> _Definition:
    definition = _Definition(storage=elem.get("storage"))
    for child in elem:
        tag = local(child.tag)
        if tag == "TestMethod":
            classname = (child.get("className") or "").split(",")[0].strip()
            definition.classname = classname if classname and classname != "No suite" else None
        elif tag == "TestCategory":
            for item in child:
                value = (item.get("TestCategory") or "").strip()
                if value:
                    definition.categories.append(value if value.startswith("@") else f"@{value}")
        elif tag == "Properties":
            for prop in child:
                key = child_text(prop, "Key").strip()
                value = child_text(prop, "Value").strip()
                if key.lower() == "service" and value:
                    definition.services.append(value)
    return definition


@lru_cache(maxsize=256)  # one storage per test assembly
def _framework(storage: str) -> str | None:
    storage = storage.lower()
    if storage.endswith((".js", ".ts", ".mjs", ".cjs")):
        return None
    if storage.endswith(".dll"):
        return "dotnet"
    return None


@lru_cache(maxsize=4096)  # short tests share their few durations
def _duration_ms(value: str | None) -> int | None:
    """TRX durations are "hh:mm:ss.fffffff" (with an optional "d." day prefix)."""
    if not value:
        return None
    match = _DURATION.match(value.strip())
    if not match:
        return None
    days, hours, minutes, seconds = match.groups()
    total = (int(days or 0) * 86400 + int(hours) * 3600 + int(minutes) * 60) + float(seconds)
    return round(total * 1000)


def _resolve(base: str, deployment: str | None, raw: str) -> str:
    if deployment:
        candidate = os.path.join(base, deployment, "In", raw)
        if os.path.isfile(candidate):
            return os.path.normpath(candidate)
    return resolve_path(base, raw)

