"""Playwright's JSON reporter (`--reporter=json`): one outcome per test and project, with every retry.

The report nests suites (file, then `describe` blocks) holding specs; a spec has one test per project
(chromium, firefox, ...), and a test one result per attempt. Outcome per test:

| test `status`  | outcome                                                             |
|----------------|---------------------------------------------------------------------|
| expected       | PASSED (a `test.fail()` that failed as expected is a pass), SKIPPED if skipped |
| unexpected     | the last attempt's: failed/timedOut FAILED, interrupted BROKEN, passed FAILED |
| flaky          | PASSED, earlier attempts FAILED: a flaky test                       |
| skipped        | SKIPPED                                                             |

Suite path: the project (when named), the file, then the describe blocks. Tags: the spec's `tags`
(Playwright >= 1.42) and `@tags` in the title; an annotation `{type: "service", description: CODE}`
links like JUnit's service property. Attachments: every attempt's `attachments[].path` (screenshots,
videos, traces); inline bodies have no file and are left out.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from tms.reporter.junit import to_utc_iso
from tms.reporter.model import TestOutcome, paused_gc, source_file, source_line
from tms.reporter.reading import (
    cap,
    decode_json,
    first_line,
    non_negative_ms,
    read_json_bytes,
    resolve_path,
    strip_ansi,
    tags_of,
)

_RESULT = {"passed": "PASSED", "failed": "FAILED", "timedOut": "FAILED", "interrupted": "BROKEN",
           "skipped": "SKIPPED"}


class _Error(msgspec.Struct):
    message: Any = None
    stack: Any = None
    value: Any = None


class _Attachment(msgspec.Struct):
    name: Any = None
    contentType: Any = None
    path: Any = None


class _Result(msgspec.Struct):
    status: Any = None
    duration: Any = None
    startTime: Any = None
    retry: Any = None
    error: _Error | None = None
    errors: list[_Error] | None = None
    attachments: list[_Attachment] | None = None


class _Annotation(msgspec.Struct):
    type: Any = None
    description: Any = None


class _Test(msgspec.Struct):
    projectName: Any = None
    expectedStatus: Any = None
    status: Any = None
    annotations: list[_Annotation] | None = None
    results: list[_Result] = []


class _Spec(msgspec.Struct):
    title: Any = None
    tags: Any = None
    tests: list[_Test] = []
    file: Any = None
    line: Any = None


class _Suite(msgspec.Struct):
    title: Any = None
    file: Any = None
    specs: list[_Spec] = []
    suites: list[_Suite] = []


class _Report(msgspec.Struct):
    suites: list[_Suite]
    config: Any = None


@paused_gc
def parse_playwright(path: str) -> list[TestOutcome]:
    report = decode_json(path, read_json_bytes(path), _Report, "Playwright JSON")
    base = os.path.dirname(os.path.abspath(path))
    outcomes: list[TestOutcome] = []
    # an explicit stack, not recursion: describe blocks nest as deep as the report says
    pending: list[tuple[_Suite, tuple[str, ...]]] = [(suite, ()) for suite in reversed(report.suites)]
    while pending:
        suite, above = pending.pop()
        title = suite.title.strip() if isinstance(suite.title, str) else ""
        here = (*above, title) if title else above
        for spec in suite.specs:
            for test in spec.tests:
                outcomes.append(_outcome(spec, test, here, path, base))
        pending.extend((child, here) for child in reversed(suite.suites))
    return outcomes


def _outcome(spec: _Spec, test: _Test, suite_path: tuple[str, ...], path: str, base: str) -> TestOutcome:
    project = test.projectName.strip() if isinstance(test.projectName, str) else ""
    results = test.results
    statuses = [_RESULT.get(r.status, "UNKNOWN") if isinstance(r.status, str) else "UNKNOWN" for r in results]
    expected_failure = test.expectedStatus == "failed"
    final = statuses[-1] if statuses else "SKIPPED"
    if test.status == "skipped" or (not results):
        status = "SKIPPED"
    elif test.status == "expected":
        status = "SKIPPED" if final == "SKIPPED" else "PASSED"
    elif test.status == "flaky":
        status = "PASSED"
    elif expected_failure and final == "PASSED":
        status = "FAILED"  # test.fail() that passed: Playwright counts it unexpected
    else:
        status = final if final != "PASSED" else "FAILED"
    last = results[-1] if results else None
    annotations = test.annotations
    services = tuple(str(a.description).strip() for a in annotations
                     if str(a.type).lower() == "service" and a.description and str(a.description).strip()
                     ) if annotations else ()
    outcome = TestOutcome(
        name=spec.title.strip() if isinstance(spec.title, str) and spec.title.strip() else "(unnamed test)",
        status=status,
        suite_path=(project, *suite_path) if project else suite_path,
        duration_ms=non_negative_ms(last.duration) if last else None,
        executed_at=to_utc_iso(results[0].startTime) if results and isinstance(results[0].startTime, str) else None,
        framework="playwright",
        tags=tags_of(spec.tags if isinstance(spec.tags, list) else ()),
        service_properties=services,
        source=path,
        location_file=source_file(spec.file),
        location_line=source_line(spec.line),
    )
    if len(results) > 1:
        outcome.attempts = [s if s != "PASSED" or test.status != "flaky" else "FAILED" for s in statuses[:-1]]
        for number, result in enumerate(results[:-1], start=1):
            message = _error_text(result)[0]
            if message:
                outcome.notes.append(f"attempt {number}: {first_line(message)}")
    if status in ("FAILED", "BROKEN") and last is not None:
        message, stack = _error_text(last)
        outcome.error_message = first_line(message) or (
            "passed, but the test is marked test.fail()" if expected_failure else f"{last.status}") or None
        outcome.error_stack = cap(stack or message) or None
    for annotation in annotations or ():
        if annotation.type in ("skip", "fixme") and status == "SKIPPED" and annotation.description:
            outcome.notes.append(f"skipped: {first_line(str(annotation.description))}")
    for result in results:
        if not result.attachments:
            continue
        for attachment in result.attachments:
            if isinstance(attachment.path, str) and attachment.path.strip():
                name = attachment.name if isinstance(attachment.name, str) and attachment.name else "attachment"
                retried = len(results) > 1 and isinstance(result.retry, int)
                retry = f" (attempt {result.retry + 1})" if retried else ""
                outcome.attachments.append((f"{name}{retry}", resolve_path(base, attachment.path)))
    return outcome


def _error_text(result: _Result) -> tuple[str, str]:
    errors = [e for e in ([result.error] if result.error else []) + list(result.errors or []) if e is not None]
    messages: list[str] = []
    stacks: list[str] = []
    for error in errors:
        message = strip_ansi(str(error.message or error.value or "")).strip()
        stack = strip_ansi(str(error.stack or "")).strip()
        if message and message not in messages:
            messages.append(message)
        if stack and stack not in stacks:
            stacks.append(stack)
    return "\n".join(messages), "\n\n".join(stacks) or "\n".join(messages)
