"""Allure 2 results directories (`allure-results/*-result.json`): one outcome per test, retries folded.

Every Allure adapter (allure-pytest, allure-junit5, allure-playwright, allure-jest, ...) writes one
`<uuid>-result.json` per executed attempt; attempts of one test share its `historyId`. They are
grouped by `historyId` and ordered by `start`: the last is the outcome, the earlier ones its attempts.
`*-container.json` files (fixtures) add nothing a result lacks and are passed over.

| Allure status | outcome |      | label                          | used as                  |
|---------------|---------|------|--------------------------------|--------------------------|
| passed        | PASSED  |      | parentSuite, suite, subSuite   | suite path               |
| failed        | FAILED  |      | testClass (when no suite)      | classname                |
| broken        | BROKEN  |      | tag                            | tags (`@service('X')`)   |
| skipped       | SKIPPED |      | service                        | case code, like JUnit's property |
| unknown       | UNKNOWN |      | framework                      | framework                |

Parameters are appended to a name that does not show them ("test_pay [10, EUR]") so each
parametrized run stays its own test. Attachments of the test and of its steps (at any depth) are
uploaded; `source` is a file name in the results directory, and a `source` that resolves anywhere else
(`../../secret`, an absolute path, a symbolic link leading out) is refused, never read: the summary
names it as skipped with the reason.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import msgspec

from tms.reporter.model import ReportError, TestOutcome, paused_gc
from tms.reporter.reading import (
    cap,
    decode_json,
    first_line,
    json_bytes,
    ms_to_iso,
    path_inside,
    read_json_bytes,
    strip_ansi,
    tags_of,
)

_STATUS = {"passed": "PASSED", "failed": "FAILED", "broken": "BROKEN", "skipped": "SKIPPED", "unknown": "UNKNOWN"}
_MAX_STEP_DEPTH = 64
# the labels read (adapters write a dozen more: host, thread, language, package, ...)
_USED_LABELS = frozenset({"parentSuite", "suite", "subSuite", "testClass", "tag", "service", "framework"})


class _Attachment(msgspec.Struct):
    name: Any = None
    source: Any = None
    type: Any = None


class _Step(msgspec.Struct):
    attachments: list[_Attachment] | None = None
    steps: list[_Step] | None = None


class _Details(msgspec.Struct):
    message: Any = None
    trace: Any = None
    flaky: Any = None


class _Label(msgspec.Struct):
    name: Any = None
    value: Any = None


class _Parameter(msgspec.Struct):
    name: Any = None
    value: Any = None
    excluded: Any = None


class _Result(msgspec.Struct):
    name: Any = None
    status: Any = None
    uuid: Any = None
    historyId: Any = None
    fullName: Any = None
    statusDetails: _Details | None = None
    labels: list[_Label] | None = None
    parameters: list[_Parameter] | None = None
    attachments: list[_Attachment] | None = None
    steps: list[_Step] | None = None
    start: Any = None
    stop: Any = None


_DECODER = msgspec.json.Decoder(_Result)  # built once: a results directory holds thousands of files


def is_container(path: str) -> bool:
    return path.endswith("-container.json")


@paused_gc
def parse_allure(paths: list[str]) -> tuple[list[TestOutcome], list[ReportError]]:
    """Outcomes of every result file, and the files that could not be read (each its own error, so
    one broken file does not hide the others)."""
    results = AllureResults()
    for path in paths:
        results.add(path)
    return results.finish()


class AllureResults:
    """A results directory read one file at a time (`add`, with the file's bytes when detection has
    read them already: each file is read once), folded into outcomes at the end (`finish`)."""

    def __init__(self) -> None:
        self.runs: list[tuple[Any, float, int, TestOutcome]] = []
        self.errors: list[ReportError] = []
        self.order = 0
        self.bases: dict[str, str] = {}  # folder as written -> absolute, for the attachments' paths

    def add(self, path: str, content: bytes | None = None) -> None:
        """Read one result file; `content`: its bytes as detection read them (all of it, most likely)."""
        order = self.order
        self.order += 1
        if is_container(path):
            return
        try:
            result = None
            if content is not None:
                try:  # noqa: SIM105 (contextlib.suppress costs a context manager per file)
                    result = decode_json(path, json_bytes(path, content), _DECODER, "Allure result")
                except ReportError:
                    pass  # not a whole document: read the file itself
            if result is None:
                result = decode_json(path, read_json_bytes(path), _DECODER, "Allure result")
            outcome = _outcome(result, path, self._base)
        except ReportError as exc:
            self.errors.append(exc)
            return
        # attempts of one test share its historyId (Allure's own retry grouping); without one, a result
        # is a test of its own even when another has its name
        key = result.historyId if isinstance(result.historyId, str) and result.historyId else ("", order)
        start = result.start if isinstance(result.start, (int, float)) and not isinstance(result.start, bool) else 0
        outcome.executed_at = ms_to_iso(result.start)
        self.runs.append((key, start, order, outcome))

    def _base(self, path: str) -> str:
        folder = path[: max(path.rfind("/"), path.rfind(os.sep)) + 1]  # all of the path up to its name
        base = self.bases.get(folder)
        if base is None:
            base = self.bases[folder] = os.path.dirname(os.path.abspath(path))
        return base

    @paused_gc
    def finish(self) -> tuple[list[TestOutcome], list[ReportError]]:
        """The outcomes, one per test (attempts sharing a `historyId` folded, by `start`), and the errors."""
        groups: dict[Any, list[tuple[float, int, TestOutcome]]] = {}
        first: dict[Any, tuple[float, int]] = {}
        for key, start, order, outcome in self.runs:
            group = groups.get(key)
            if group is None:
                groups[key] = [(start, order, outcome)]
                first[key] = (start, order)
            else:
                group.append((start, order, outcome))
                first[key] = min(first[key], (start, order))
        outcomes: list[TestOutcome] = []
        for key in sorted(groups, key=first.__getitem__):
            group = groups[key]
            if len(group) == 1:
                outcomes.append(group[0][2])
                continue
            attempts = [o for _, _, o in sorted(group, key=lambda item: (item[0], item[1]))]
            final = attempts[-1]
            final.attempts = [a.status for a in attempts[:-1]]
            final.notes = [f"attempt {n}: {first_line(a.error_message)}" for n, a in enumerate(attempts[:-1], 1)
                           if a.error_message] + final.notes
            final.attachments = [f for a in attempts[:-1] for f in a.attachments] + final.attachments
            final.executed_at = attempts[0].executed_at or final.executed_at
            outcomes.append(final)
        return outcomes, self.errors


def _outcome(result: _Result, path: str, base_of: Callable[[str], str]) -> TestOutcome:
    raw = result.status
    status = _STATUS.get(raw.lower()) if isinstance(raw, str) else None
    if status is None:
        if raw is None:
            raise ReportError(path, "$.status: missing: not an Allure result, though named like one in a "
                                    "results folder")
        raise ReportError(path, f"$.status: unknown Allure status {raw!r}")
    labels: dict[str, list[str]] = {}
    for label in result.labels or ():
        value = label.value
        if isinstance(value, str) and isinstance(label.name, str) and label.name in _USED_LABELS:
            value = value.strip()
            if value:
                found = labels.get(label.name)
                if found is None:
                    labels[label.name] = [value]
                else:
                    found.append(value)
    get = labels.get
    suite_path = _suite_path(get("parentSuite"), get("suite"), get("subSuite"))
    name = result.name.strip() if isinstance(result.name, str) else ""
    if not name:
        name = result.fullName.strip() if isinstance(result.fullName, str) else ""
        if not name:
            raise ReportError(path, "$.name: an Allure result without a name")
    if result.parameters:
        shown = [str(p.value) for p in result.parameters if p.value is not None and p.excluded is not True]
        if shown and "[" not in name and "(" not in name:
            name = f"{name} [{', '.join(shown)}]"
    start, stop = result.start, result.stop
    duration = None
    if isinstance(start, (int, float)) and isinstance(stop, (int, float)) and stop >= start:
        duration = round(stop - start)
    classname = None
    if not suite_path:
        classes = get("testClass")
        classname = classes[0] if classes else None
    frameworks = get("framework")
    services = get("service")
    outcome = TestOutcome(
        name=name,
        status=status,
        suite_path=suite_path,
        classname=classname,
        duration_ms=duration,
        framework=frameworks[0] if frameworks else None,
        tags=tags_of(get("tag")),
        service_properties=tuple(services) if services else (),
        source=path,
    )
    details = result.statusDetails
    if details is not None and status in ("FAILED", "BROKEN"):
        message = strip_ansi(str(details.message or "")).strip()
        trace = strip_ansi(str(details.trace or "")).strip()
        outcome.error_message = first_line(message) or first_line(trace) or None
        outcome.error_stack = cap("\n\n".join(t for t in (message, trace) if t)) or None
    elif details is not None and status == "SKIPPED" and details.message:
        outcome.notes.append(f"skipped: {first_line(str(details.message))}")
    if details is not None and details.flaky is True and status == "PASSED":
        outcome.notes.append("Allure marks this test flaky")
    for attachment in _attachments(result) if result.attachments or result.steps else ():
        if isinstance(attachment.source, str) and attachment.source.strip():
            name = attachment.name if isinstance(attachment.name, str) and attachment.name else attachment.source
            outcome.attachments.append((name, path_inside(base_of(path), attachment.source, "results")))
    return outcome


def _suite_path(*levels: list[str] | None) -> tuple[str, ...]:
    if levels[0] is None and levels[2] is None:
        return tuple(levels[1]) if levels[1] else ()  # the common case: a "suite" label only
    return tuple(value for level in levels if level for value in level)


def _attachments(result: _Result) -> list[_Attachment]:
    found = list(result.attachments or ())
    pending: list[tuple[_Step, int]] = [(step, 1) for step in result.steps or ()]
    while pending:
        step, depth = pending.pop()
        if step.attachments:
            found.extend(step.attachments)
        if step.steps and depth < _MAX_STEP_DEPTH:
            pending.extend((child, depth + 1) for child in step.steps)
    return found
