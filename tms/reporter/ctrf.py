"""CTRF (Common Test Report Format) JSON, as pytest-json-ctrf, the jest/playwright/mocha/vitest CTRF
reporters and xUnit v3 write it: one outcome per entry of `results.tests`.

| CTRF status        | outcome  |
|--------------------|----------|
| passed             | PASSED   |
| failed             | FAILED   |
| skipped, pending   | SKIPPED  |
| other              | UNKNOWN  |

Retries: `retryAttempts` (each an earlier attempt's status and message) when written, else `retries`
earlier attempts that failed (`flaky: true` with a final pass is a test that passed on retry). Suite
path: `suite` (a list, or a "a > b" string in older reporters). Tags: `tags`; a `service` entry in
`extra` or `parameters` is read like JUnit's service property. Attachments: `attachments[].path`.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

import msgspec

from tms.reporter.model import ReportError, TestOutcome, paused_gc, source_file, source_line
from tms.reporter.reading import (
    cap,
    decode_json,
    first_line,
    ms_to_iso,
    non_negative_ms,
    read_json_bytes,
    resolve_path,
    strip_ansi,
    tags_of,
)

_STATUS = {"passed": "PASSED", "failed": "FAILED", "skipped": "SKIPPED", "pending": "SKIPPED", "other": "UNKNOWN"}


class _Attachment(msgspec.Struct):
    name: Any = None
    contentType: Any = None
    path: Any = None


class _Attempt(msgspec.Struct):
    attempt: Any = None
    status: Any = None
    message: Any = None
    trace: Any = None


class _Test(msgspec.Struct):
    name: Any = None
    status: Any = None
    duration: Any = None
    start: Any = None
    suite: Any = None
    message: Any = None
    trace: Any = None
    rawStatus: Any = None
    tags: Any = None
    retries: Any = None
    flaky: Any = None
    retryAttempts: list[_Attempt] | None = None
    attachments: list[_Attachment] | None = None
    filePath: Any = None
    line: Any = None
    extra: Any = None
    parameters: Any = None
    stdout: Any = None
    stderr: Any = None


class _Tool(msgspec.Struct):
    name: Any = None


class _Results(msgspec.Struct):
    tests: list[_Test]
    tool: _Tool | None = None


class _Report(msgspec.Struct):
    results: _Results
    reportFormat: Any = None


@paused_gc
def parse_ctrf(path: str) -> list[TestOutcome]:
    report = decode_json(path, read_json_bytes(path), _Report, "CTRF")
    if report.reportFormat not in (None, "CTRF"):
        raise ReportError(path, f"not a CTRF report: reportFormat is {report.reportFormat!r}")
    tool = report.results.tool.name if report.results.tool and isinstance(report.results.tool.name, str) else None
    base = os.path.dirname(os.path.abspath(path))
    return [_outcome(test, index, path, base, tool) for index, test in enumerate(report.results.tests)]


def _outcome(test: _Test, index: int, path: str, base: str, tool: str | None) -> TestOutcome:
    name = test.name.strip() if isinstance(test.name, str) and test.name.strip() else None
    if name is None:
        raise ReportError(path, f"$.results.tests[{index}].name: a test without a name")
    status = _STATUS.get(str(test.status).lower()) if isinstance(test.status, str) else None
    if status is None:
        raise ReportError(path, f"$.results.tests[{index}].status: unknown status {test.status!r}")
    suite = _suite(test.suite)
    outcome = TestOutcome(
        name=_short_name(name, suite, test.filePath),
        status=status,
        suite_path=suite,
        duration_ms=non_negative_ms(test.duration),
        executed_at=ms_to_iso(test.start),
        framework=tool.lower() if tool else None,
        tags=tags_of(test.tags if isinstance(test.tags, list) else ()),
        service_properties=_services(test.extra, test.parameters),
        source=path,
        location_file=source_file(test.filePath),
        location_line=source_line(test.line),
    )
    raw_status = str(test.rawStatus or "").lower()
    if status == "FAILED" and any(word in raw_status for word in ("setup", "teardown", "error", "broken")):
        status = outcome.status = "BROKEN"  # pytest-json-ctrf: a fixture failed, not the test's assertion
    if status in ("FAILED", "BROKEN"):
        message = strip_ansi(test.message if isinstance(test.message, str) else "")
        trace = strip_ansi(test.trace if isinstance(test.trace, str) else "")
        outcome.error_message = first_line(message) or first_line(trace) or None
        outcome.error_stack = cap("\n\n".join(t for t in (message.strip(), trace.strip()) if t)) or None
    elif status == "SKIPPED" and isinstance(test.message, str) and test.message.strip():
        outcome.notes.append(f"skipped: {first_line(test.message)}")
    _attempts(test, outcome)
    for attachment in test.attachments or ():
        if isinstance(attachment.path, str) and attachment.path.strip():
            label = attachment.name if isinstance(attachment.name, str) and attachment.name else None
            outcome.attachments.append((label or os.path.basename(attachment.path), _resolve(base, attachment.path)))
    return outcome


def _attempts(test: _Test, outcome: TestOutcome) -> None:
    if test.retryAttempts:
        attempts = [a for a in test.retryAttempts if isinstance(a.status, str)]
        earlier = attempts[:-1] if len(attempts) > (test.retries if isinstance(test.retries, int) else 0) else attempts
        outcome.attempts = [_STATUS.get(a.status.lower(), "UNKNOWN") for a in earlier]
        for number, attempt in enumerate(earlier, start=1):
            if isinstance(attempt.message, str) and attempt.message.strip():
                outcome.notes.append(f"attempt {number}: {first_line(strip_ansi(attempt.message))}")
        return
    retries = test.retries if isinstance(test.retries, int) and not isinstance(test.retries, bool) else 0
    if retries > 0:
        outcome.attempts = ["FAILED"] * min(retries, 100)  # a retry only follows a failed attempt
    elif test.flaky is True and outcome.status == "PASSED":
        outcome.attempts = ["FAILED"]


def _suite(raw: Any) -> tuple[str, ...]:
    if isinstance(raw, list):
        try:
            return _suite_of(tuple(raw))
        except TypeError:
            return _suite_of(tuple(s for s in raw if isinstance(s, str)))
    if isinstance(raw, str) and raw.strip():
        return _suite_of(tuple(raw.split(" > ")))
    return ()


@lru_cache(maxsize=8192)  # one tuple per suite, shared by its tests
def _suite_of(parts: tuple[Any, ...]) -> tuple[str, ...]:
    return tuple(s.strip() for s in parts if isinstance(s, str) and s.strip())


def _short_name(name: str, suite: tuple[str, ...], file_path: Any) -> str:
    """pytest-json-ctrf writes "file.py::Class::test" as the name and the file as the suite: keep the
    part after the suite's file; jest/playwright reporters write the describe blocks into the name."""
    if "::" in name:
        parts = name.split("::")
        while len(parts) > 1 and (parts[0] in suite or parts[0] == file_path):
            parts = parts[1:]
        return " > ".join(parts)
    if suite:
        joined = " ".join(suite) + " "
        if name.startswith(joined):
            return name[len(joined):]
    return name


def _services(*sources: Any) -> tuple[str, ...]:
    """`service` keys of `extra`/`parameters`, and Playwright annotations {type: service, description}
    that the playwright CTRF reporter copies into `extra.annotations`."""
    found = []
    for source in sources:
        if isinstance(source, dict):
            annotations = source.get("annotations")
            for annotation in annotations if isinstance(annotations, list) else ():
                if isinstance(annotation, dict) and str(annotation.get("type")).lower() == "service":
                    value = annotation.get("description")
                    if isinstance(value, str) and value.strip():
                        found.append(value.strip())
            for key, value in source.items():
                if str(key).lower() == "service" and isinstance(value, str | int) and str(value).strip():
                    found.append(str(value).strip())
    return tuple(found)


def _resolve(base: str, raw: str) -> str:
    return resolve_path(base, raw)
