"""`dart test --reporter json` (`--file-reporter json:FILE`; `flutter test --machine` writes the same
protocol): a stream of events, one JSON object per line, read line by line (linear in the file, memory
holds the tests, not the stream).

Each `testStart` opens a test, its `testDone` gives the result:

| testDone                               | outcome |
|----------------------------------------|---------|
| skipped: true                          | SKIPPED (the skip message is kept) |
| result "success"                       | PASSED  |
| result "failure" (a TestFailure)       | FAILED  |
| result "error" (any other error)       | BROKEN  |
| no testDone (the run was cut short)    | BROKEN  |

Hidden tests (loading a file, `setUpAll`, `tearDownAll`) are left out while they pass; one that fails
is an outcome (`loading test/cart_test.dart`, `(setUpAll)`), and so is any test that reports an error
after its `testDone` (the protocol says it failed). Errors and prints of a test are its stack.

Title: the suite's file path, the groups (each group's name is written with its parents' names before
it, which are taken off) and the test's own name: `test/cart_test.dart > Cart > adding items > adds 1
item`. The platform (vm, chrome) comes first when the stream ran on several. Retries: a test with
`retry: n` runs again in the same test: the runner prints `Retry: <name>` between attempts, so each
such message ends a failed attempt. Lines that are not JSON (build output) are skipped; a line that
starts as JSON and is cut short is an error naming the line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from tms.reporter.model import ReportError, TestOutcome, paused_gc, source_file, source_line
from tms.reporter.reading import cap, first_line, json_lines

_MAX_OUTPUT = 64_000  # per test kept while reading: a chatty test cannot grow the memory unbounded


class _Suite(msgspec.Struct):
    id: Any = None
    platform: Any = None
    path: Any = None


class _Group(msgspec.Struct):
    id: Any = None
    name: Any = None
    parentID: Any = None


class _Test(msgspec.Struct):
    id: Any = None
    name: Any = None
    suiteID: Any = None
    groupIDs: Any = None
    line: Any = None
    url: Any = None
    root_line: Any = None
    root_url: Any = None


class _Event(msgspec.Struct):
    type: Any = None
    time: Any = None
    protocolVersion: Any = None
    suite: _Suite | None = None
    group: _Group | None = None
    test: _Test | None = None
    testID: Any = None
    messageType: Any = None
    message: Any = None
    error: Any = None
    stackTrace: Any = None
    isFailure: Any = None
    result: Any = None
    hidden: Any = None
    skipped: Any = None


@dataclass(slots=True)
class _Running:
    name: str
    suite: tuple[str, ...]
    platform: str
    started: Any
    errors: list[str] = field(default_factory=list)
    failure: bool = True  # every error of the current attempt was a TestFailure
    output: list[str] = field(default_factory=list)
    size: int = 0
    attempts: list[str] = field(default_factory=list)
    attempt_notes: list[str] = field(default_factory=list)
    full: str = ""  # the name as the runner writes it (groups included)
    location: tuple[str | None, int | None] = (None, None)
    skip: str | None = None
    outcome: TestOutcome | None = None  # once done


_DECODER = msgspec.json.Decoder(_Event)


@paused_gc
def parse_dart(path: str) -> list[TestOutcome]:
    suites: dict[Any, tuple[str, str]] = {}  # id -> (path, platform)
    groups: dict[Any, tuple[str, str]] = {}  # id -> (full name, own name)
    tests: dict[Any, _Running] = {}  # started, not done
    hidden: dict[Any, _Running] = {}  # passed hidden tests: shown if an error comes after their testDone
    done: dict[Any, _Running] = {}  # shown tests, for an error that comes after their testDone
    shown: list[_Running] = []
    seen_start = False
    for number, event in json_lines(path, _DECODER, "dart test --reporter json event"):
        kind = event.type
        if not seen_start:
            if kind != "start" or not isinstance(event.protocolVersion, str):
                raise ReportError(path, "not a dart test --reporter json stream: no start event first",
                                  number, not_a_report=True)
            seen_start = True
            continue
        if kind == "testStart" and event.test is not None:
            tests[event.test.id] = _start(event, suites, groups)
        elif kind == "print":
            running = tests.get(event.testID)
            if running is not None and isinstance(event.message, str):
                _print(running, event)
        elif kind == "error":
            running = tests.get(event.testID)
            if running is not None:
                running.errors.append(_error_text(event))
                running.failure = running.failure and event.isFailure is True
                continue
            running = done.get(event.testID)
            if running is None:
                running = hidden.pop(event.testID, None)
                if running is None:
                    continue
                done[event.testID] = running
                shown.append(running)  # a hidden test (setUpAll, loading) is shown once it fails
            _late_error(running, event)
        elif kind == "testDone":
            running = tests.pop(event.testID, None)
            if running is not None:
                _done(running, event, path)
                if event.hidden is True and running.outcome is not None and running.outcome.status == "PASSED":
                    hidden[event.testID] = running
                else:
                    done[event.testID] = running
                    shown.append(running)
        elif kind == "suite" and event.suite is not None:
            suite_path = event.suite.path if isinstance(event.suite.path, str) else ""
            platform = event.suite.platform if isinstance(event.suite.platform, str) else ""
            suites[event.suite.id] = (suite_path.replace("\\", "/").strip(), platform)
        elif kind == "group" and event.group is not None:
            _group(event.group, groups)
    if not seen_start:
        raise ReportError(path, "not a dart test --reporter json stream: no event line", 1, not_a_report=True)
    for running in tests.values():
        outcome = running.outcome = _finish(running, "BROKEN", path)
        outcome.notes.append("no result: the stream ends before the test finished (crash or timeout)")
        if outcome.error_message in (None, "error"):
            outcome.error_message = "the test never finished"
        shown.append(running)
    several = len({platform for _, platform in suites.values()}) > 1  # the same tests on several platforms
    outcomes: list[TestOutcome] = []
    for running in shown:
        final = running.outcome
        assert final is not None
        if several and running.platform:
            final.suite_path = (running.platform, *final.suite_path)
        outcomes.append(final)
    return outcomes


def _start(event: _Event, suites: dict[Any, tuple[str, str]], groups: dict[Any, tuple[str, str]]) -> _Running:
    test = event.test
    assert test is not None
    suite_path, platform = suites.get(test.suiteID, ("", ""))
    names = [groups[g] for g in test.groupIDs if g in groups] if isinstance(test.groupIDs, list) else []
    levels = [own for _, own in names if own]
    full = test.name if isinstance(test.name, str) else ""
    innermost = next((f for f, _ in reversed(names) if f), "")
    if innermost and full == innermost and levels:
        # a skipped group is written as one test named as the group: the group is the test
        name, levels = levels[-1], levels[:-1]
    else:
        name = full[len(innermost) + 1:] if innermost and full.startswith(innermost + " ") else full
    suite = (suite_path, *levels) if suite_path else tuple(levels)
    # the test's own file when it was declared elsewhere (`root_url`, a shared helper's test)
    url, line = (test.root_url, test.root_line) if test.root_url else (test.url, test.line)
    return _Running(name.strip() or full.strip() or "(unnamed test)", suite, platform, event.time, full=full,
                    location=(source_file(url) or (suite_path or None), source_line(line)))


def _group(group: _Group, groups: dict[Any, tuple[str, str]]) -> None:
    full = group.name.strip() if isinstance(group.name, str) else ""
    parent = groups.get(group.parentID, ("", ""))[0] if group.parentID is not None else ""
    own = full[len(parent) + 1:] if parent and full.startswith(parent + " ") else full
    groups[group.id] = (full, own.strip())


def _keep(running: _Running, text: str) -> None:
    if running.size < _MAX_OUTPUT:
        running.output.append(text)
        running.size += len(text)


def _print(running: _Running, event: _Event) -> None:
    message = event.message
    assert isinstance(message, str)
    if event.messageType == "skip":
        running.skip = message.removeprefix("Skip: ").strip() or running.skip
        return
    if message.startswith("Retry: ") and (message == f"Retry: {running.full}" or running.errors):
        # the runner prints this between attempts: the attempt before it failed
        running.attempts.append("FAILED" if running.failure else "BROKEN")
        first = first_line(running.errors[0]) if running.errors else ""
        if first:
            running.attempt_notes.append(f"attempt {len(running.attempts)}: {first}")
        running.errors, running.failure = [], True
        return
    _keep(running, message + "\n")


def _error_text(event: _Event) -> str:
    error = event.error if isinstance(event.error, str) else ""
    stack = event.stackTrace if isinstance(event.stackTrace, str) else ""
    return "\n".join(t for t in (error.rstrip(), stack.rstrip()) if t)


def _late_error(running: _Running, event: _Event) -> None:
    """An error after the test's testDone: the protocol says the test failed after all."""
    outcome = running.outcome
    assert outcome is not None
    text = _error_text(event)
    if outcome.status in ("PASSED", "SKIPPED", "UNKNOWN"):
        outcome.status = "FAILED" if event.isFailure is True else "BROKEN"
        outcome.error_message = first_line(text) or "failed after it had completed"
        outcome.notes.append("failed after it had completed")
    outcome.error_stack = cap("\n\n".join(t for t in (outcome.error_stack, text) if t)) or None


def _done(running: _Running, event: _Event, path: str) -> None:
    if event.skipped is True:
        status = "SKIPPED"
    elif event.result == "success":
        status = "PASSED"
    elif event.result == "failure":
        status = "FAILED"
    elif event.result == "error":
        status = "BROKEN"
    else:
        status = "UNKNOWN"
    outcome = running.outcome = _finish(running, status, path)
    if isinstance(event.time, int) and isinstance(running.started, int) and event.time >= running.started:
        outcome.duration_ms = event.time - running.started
    if status == "UNKNOWN":
        outcome.notes.append(f"result: {event.result!r}")


def _finish(running: _Running, status: str, path: str) -> TestOutcome:
    outcome = TestOutcome(name=running.name, status=status, suite_path=running.suite, framework="dart", source=path,
                          location_file=running.location[0], location_line=running.location[1])
    outcome.attempts = list(running.attempts)
    outcome.notes.extend(running.attempt_notes)
    if status in ("FAILED", "BROKEN"):
        outcome.error_message = first_line(running.errors[0]) if running.errors else None
        parts = [*running.errors, *(["--- output ---\n" + "".join(running.output)] if running.output else [])]
        outcome.error_stack = cap("\n\n".join(p.strip() for p in parts if p.strip())) or None
        if not outcome.error_message:
            outcome.error_message = "failed" if status == "FAILED" else "error"
    elif status == "SKIPPED" and running.skip:
        outcome.notes.append(f"skipped: {first_line(running.skip)}")
    return outcome


def looks_like_dart(head: bytes) -> bool:
    """The first line that starts with "{" is the start event of a dart test JSON stream."""
    for raw in head.splitlines():
        line = raw.strip().removeprefix(b"\xef\xbb\xbf")
        if line.startswith(b"{"):
            return b'"protocolVersion"' in line and b'"start"' in line
    return False
