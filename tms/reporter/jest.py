"""`jest --json` (`--outputFile=FILE`) and Vitest's json reporter (`vitest run --reporter=json
--outputFile=FILE`), which writes the same shape: one outcome per entry of a file's
`assertionResults`, and a BROKEN one per test file that failed outside its tests.

| status                               | outcome |
|--------------------------------------|---------|
| passed                               | PASSED  |
| failed                               | FAILED  |
| pending, skipped, disabled, todo     | SKIPPED (a note says "todo") |
| other                                | UNKNOWN |

A test file whose `status` is "failed" with no failed test in it (it could not load: a syntax error,
a missing module, an error in `beforeAll`/`afterAll`) becomes one BROKEN outcome named
`(test file failed)` under that file, with jest's `message`: never a green run with a test file missing.

Title: the test file (relative to the working directory when it is inside it, else to the folder
all the report's test files share), the `describe` titles (`ancestorTitles`), the test's title:
`src/cart.test.js > Cart > adding items > adds 1 items`. `test.each` rows are told apart by their
formatted titles; rows whose titles are equal are tests of their own ("name [2]").

Retries: jest (circus) writes `invocations` (`jest.retryTimes(n)`: each earlier invocation failed)
and, with `logErrorsBeforeRetry`, each earlier failure in `retryReasons`. Vitest writes no count: a
passed test that carries failure messages passed on retry, one failed attempt per message. The
framework is "jest", or "vitest" for a report without jest's own keys. Durations in milliseconds;
a file's `startTime` is its tests' start. Vitest 4's `tags` are tags.
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
    strip_ansi,
    tags_of,
)

_STATUS = {"passed": "PASSED", "failed": "FAILED", "pending": "SKIPPED", "skipped": "SKIPPED",
           "disabled": "SKIPPED", "todo": "SKIPPED", "focused": "PASSED"}
_MAX_RETRIES = 100


class _Assertion(msgspec.Struct):
    title: Any = None
    ancestorTitles: Any = None
    fullName: Any = None
    status: Any = None
    duration: Any = None
    failureMessages: Any = None
    invocations: Any = None
    retryReasons: Any = None
    tags: Any = None
    location: Any = None


class _File(msgspec.Struct):
    assertionResults: list[_Assertion] = []
    name: Any = None
    status: Any = None
    message: Any = None
    startTime: Any = None


class _Report(msgspec.Struct):
    testResults: list[_File]
    openHandles: Any = msgspec.UNSET  # jest writes these; Vitest does not
    numRuntimeErrorTestSuites: Any = msgspec.UNSET
    wasInterrupted: Any = msgspec.UNSET


_DECODER = msgspec.json.Decoder(_Report)


@paused_gc
def parse_jest(path: str) -> list[TestOutcome]:
    report = decode_json(path, read_json_bytes(path), _DECODER, "jest/Vitest JSON")
    is_jest = any(v is not msgspec.UNSET for v in (report.openHandles, report.numRuntimeErrorTestSuites,
                                                     report.wasInterrupted))
    framework = "jest" if is_jest else "vitest"
    files = [f.name for f in report.testResults if isinstance(f.name, str) and f.name.strip()]
    shown = _file_names(files)
    outcomes: list[TestOutcome] = []
    for index, test_file in enumerate(report.testResults):
        name = test_file.name if isinstance(test_file.name, str) and test_file.name.strip() else None
        file_suite = (shown[name],) if name is not None else ()
        started = ms_to_iso(test_file.startTime)
        failed = False
        for number, assertion in enumerate(test_file.assertionResults):
            outcome = _outcome(assertion, file_suite, started, framework, path,
                               f"$.testResults[{index}].assertionResults[{number}]")
            outcome.location_file = source_file(name)
            failed = failed or outcome.status == "FAILED"
            outcomes.append(outcome)
        if test_file.status == "failed" and not failed:
            message = strip_ansi(test_file.message if isinstance(test_file.message, str) else "").strip()
            outcome = TestOutcome(name="(test file failed)", status="BROKEN", suite_path=file_suite,
                                  executed_at=started, framework=framework, source=path,
                                  location_file=source_file(name))
            outcome.error_message = _message_line(message) or "the test file failed outside its tests"
            outcome.error_stack = cap(message) or None
            outcome.notes.append("the test file failed outside its tests (it could not load, or a hook failed)")
            outcomes.append(outcome)
    return outcomes


def _outcome(assertion: _Assertion, file_suite: tuple[str, ...], started: str | None, framework: str,
             path: str, where: str) -> TestOutcome:
    title = assertion.title.strip() if isinstance(assertion.title, str) else ""
    if not title:
        title = assertion.fullName.strip() if isinstance(assertion.fullName, str) else ""
    if not title:
        raise ReportError(path, f"{where}.title: a test without a title")
    raw_status = assertion.status if isinstance(assertion.status, str) else ""
    status = _STATUS.get(raw_status.lower(), "UNKNOWN")
    outcome = TestOutcome(
        name=title,
        status=status,
        suite_path=(*file_suite, *_ancestors(assertion.ancestorTitles)),
        duration_ms=non_negative_ms(assertion.duration),
        executed_at=started,
        framework=framework,
        tags=tags_of(assertion.tags if isinstance(assertion.tags, list) else ()),
        source=path,
        # `--testLocationInResults` (jest), `includeTaskLocation` (Vitest): {"line": 12, "column": 5}
        location_line=source_line(assertion.location.get("line")) if isinstance(assertion.location, dict) else None,
    )
    messages = [strip_ansi(m) for m in assertion.failureMessages or () if isinstance(m, str)] \
        if isinstance(assertion.failureMessages, list) else []
    if status == "FAILED":
        outcome.error_message = next((_message_line(m) for m in messages if _message_line(m)), None) or "failed"
        outcome.error_stack = cap("\n\n".join(m.strip() for m in messages if m.strip())) or None
    elif raw_status == "todo":
        outcome.notes.append("todo: not written yet")
    elif status == "UNKNOWN":
        outcome.notes.append(f"status: {raw_status or 'none'}")
    invocations = assertion.invocations
    if isinstance(invocations, int) and not isinstance(invocations, bool) and invocations > 1:
        outcome.attempts = ["FAILED"] * min(invocations - 1, _MAX_RETRIES)  # jest retries a failed test only
        reasons = [strip_ansi(r) for r in assertion.retryReasons if isinstance(r, str)] \
            if isinstance(assertion.retryReasons, list) else []
        for number, reason in enumerate(reasons[:_MAX_RETRIES], start=1):
            if _message_line(reason):
                outcome.notes.append(f"attempt {number}: {_message_line(reason)}")
    elif invocations is None and status == "PASSED" and messages:
        # Vitest: a passed test keeps the errors of the attempts that failed before it passed
        outcome.attempts = ["FAILED"] * min(len(messages), _MAX_RETRIES)
        for number, message in enumerate(messages[:_MAX_RETRIES], start=1):
            outcome.notes.append(f"attempt {number}: {_message_line(message)}")
    return outcome


def _message_line(text: str) -> str:
    """The first line that says what failed: jest's file messages start with "● Test suite failed to
    run", and its stack lines with "at"."""
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("● "):
            return line[:1000]
    return first_line(text)


@lru_cache(maxsize=8192)
def _ancestors_of(titles: tuple[Any, ...]) -> tuple[str, ...]:
    return tuple(t.strip() for t in titles if isinstance(t, str) and t.strip())


def _ancestors(raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list):
        return ()
    try:
        return _ancestors_of(tuple(raw))
    except TypeError:
        return _ancestors_of(tuple(t for t in raw if isinstance(t, str)))


def _file_names(files: list[str]) -> dict[str, str]:
    """Each test file as the title shows it: relative to the working directory when inside it (a CI
    job ingests where it tested), else to the folder every test file of the report shares."""
    if not files:
        return {}
    cwd = os.getcwd()
    normal = {f: f.replace("\\", "/") for f in files}
    inside = {f: os.path.relpath(f, cwd).replace("\\", "/") for f in files
              if os.path.isabs(f) and os.path.normpath(f).startswith(cwd.rstrip(os.sep) + os.sep)}
    rest = [normal[f] for f in files if f not in inside]
    common = ""
    if rest:
        folders = [n.split("/")[:-1] for n in rest]
        shared = folders[0]
        for folder in folders[1:]:
            length = 0
            while length < min(len(shared), len(folder)) and shared[length] == folder[length]:
                length += 1
            shared = shared[:length]
        common = "/".join(shared) + "/" if shared else ""
    return {f: inside.get(f) or normal[f][len(common):] or normal[f] for f in files}
