"""`go test -json` (and `gotestsum --jsonfile`): a stream of events, one JSON object per line, read
line by line.

Each test (`Package` + `Test`) ends with a `pass`, `fail` or `skip` action: PASSED, FAILED, SKIPPED.
A subtest "TestCart/adds_3" has the suite path (package, "TestCart") and the name "adds_3"; a "/"
inside a subtest's own name (`t.Run("1 / 2 = 1")`, named "TestDiv/1_/_2_=_1" by go) stays in it: the
parent is the test that started before it (`_Levels`). A
test that started but never ended (the binary crashed or timed out) is BROKEN with its output. A
package that failed with no failing test (a build error, a panic in TestMain) is one BROKEN outcome
named after the package. The error message is the first "file_test.go:12: ..." line of the test's
output, the stack its whole output. A test run twice (`-count=2`, gotestsum `--rerun-fails`) folds
into one outcome with attempts. Lines that are not JSON (build output mixed into the stream) are
skipped; a line that starts as JSON but is cut short is an error naming the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import msgspec

from tms.reporter.junit import to_utc_iso
from tms.reporter.model import ReportError, TestOutcome, fold_retries, paused_gc
from tms.reporter.reading import cap, first_line, json_lines

_FINAL = {"pass": "PASSED", "fail": "FAILED", "skip": "SKIPPED"}
_MAX_OUTPUT = 64_000  # per test kept while reading: a chatty test cannot grow the memory unbounded
_LOCATION = re.compile(r"^\s*[\w./-]+\.go:\d+: ")
_NOISE = re.compile(r"^(=== (RUN|PAUSE|CONT|NAME)|--- (PASS|FAIL|SKIP)|PASS$|FAIL$|ok\s|FAIL\s)")


class _Event(msgspec.Struct):
    Action: str = ""
    Package: str = ""
    Test: str = ""
    Time: str | None = None
    Elapsed: float | None = None
    Output: str | None = None


@dataclass(slots=True)
class _Running:
    started: str | None
    output: list[str] = field(default_factory=list)
    size: int = 0


@paused_gc
def parse_gotest(path: str) -> list[TestOutcome]:
    decoder = msgspec.json.Decoder(_Event)
    outcomes: list[TestOutcome] = []
    running: dict[tuple[str, str], _Running] = {}
    package_output: dict[str, list[str]] = {}
    package_failed_tests: set[str] = set()
    failed_children: dict[tuple[str, str], list[str]] = {}
    levels = _Levels()
    seen_event = False
    for number, event in json_lines(path, decoder, "go test -json event"):
        if not event.Action:
            raise ReportError(path, "not a go test -json event: no Action", number, not_a_report=not seen_event)
        seen_event = True
        if not event.Test:
            if event.Action == "output" and event.Output:
                package_output.setdefault(event.Package, []).append(event.Output)
            elif event.Action == "fail" and event.Package not in package_failed_tests:
                outcomes.append(_package_failure(event, package_output.get(event.Package, []), path))
            continue
        key = (event.Package, event.Test)
        if event.Action == "run":
            levels.of(key)  # a subtest's parent has started before it: that settles its levels
            running[key] = _Running(event.Time)
        elif event.Action == "output" and event.Output:
            state = running.setdefault(key, _Running(event.Time))
            if state.size < _MAX_OUTPUT:
                state.output.append(event.Output)
                state.size += len(event.Output)
        elif event.Action in _FINAL:
            finished: _Running | None = running.pop(key, None)
            state = finished or _Running(event.Time)
            outcome = _outcome(event, _FINAL[event.Action], state, path, levels.of(key))
            if outcome.status == "FAILED":
                package_failed_tests.add(event.Package)
                parent = levels.parent.get(key)
                if parent is not None:  # a failing subtest fails its parent: the parent says which
                    failed_children.setdefault((event.Package, parent), []).append(outcome.name)
                children = failed_children.pop(key, None)
                if children and not outcome.error_message:
                    outcome.error_message = first_line("subtest failed: " + ", ".join(children))
            outcomes.append(outcome)
    if not seen_event:
        raise ReportError(path, "not a go test -json stream: no event line", 1, not_a_report=True)
    for (package, test), state in running.items():
        outcome = _outcome(_Event(Action="", Package=package, Test=test), "BROKEN", state, path,
                           levels.of((package, test)))
        outcome.notes.append("no result: the stream ends before the test finished (crash or timeout)")
        if not outcome.error_message:
            outcome.error_message = "the test never finished"
        outcomes.append(outcome)
    # go runs a test again only when told to (`-count`, gotestsum `--rerun-fails`): every repeat of a
    # test in the stream is an attempt of it
    return fold_retries(outcomes)


class _Levels:
    """A test's name split into its levels the way go nested it. go names a subtest "<parent>/<name>",
    spaces replaced by underscores, but keeps a "/" written inside `t.Run("1 / 2")`: so the parent is
    the longest test already started whose name, followed by "/", begins this one (a parent's `run`
    event always comes before its subtests'). Without one (a stream cut at its start), every "/"
    separates levels."""

    def __init__(self) -> None:
        self.known: dict[tuple[str, str], tuple[str, ...]] = {}
        self.parent: dict[tuple[str, str], str] = {}

    def of(self, key: tuple[str, str]) -> tuple[str, ...]:
        found = self.known.get(key)
        if found is not None:
            return found
        package, test = key
        position = len(test)
        levels: tuple[str, ...] | None = None
        while True:
            position = test.rfind("/", 0, position)
            if position <= 0:
                break
            above = self.known.get((package, test[:position]))
            if above is not None:
                levels = (*above, test[position + 1:])
                self.parent[key] = test[:position]
                break
        if levels is None:
            levels = tuple(test.split("/")) if "/" in test else (test,)
            if len(levels) > 1:
                self.parent[key] = test.rsplit("/", 1)[0]
        self.known[key] = levels
        return levels


def _outcome(event: _Event, status: str, state: _Running, path: str, parts: tuple[str, ...]) -> TestOutcome:
    output = "".join(state.output)
    outcome = TestOutcome(
        name=parts[-1],
        status=status,
        suite_path=(event.Package, *parts[:-1]) if event.Package else tuple(parts[:-1]),
        duration_ms=round(event.Elapsed * 1000) if event.Elapsed is not None and event.Elapsed >= 0 else None,
        executed_at=to_utc_iso(state.started or event.Time),
        framework="go",
        source=path,
    )
    if status in ("FAILED", "BROKEN"):
        lines = [line for line in output.splitlines() if line.strip() and not _NOISE.match(line.strip())]
        message = next((line for line in lines if _LOCATION.match(line)), lines[0] if lines else "")
        outcome.error_message = first_line(message) or None
        outcome.error_stack = cap(output.strip()) or None
    elif status == "SKIPPED":
        reason = next((line for line in output.splitlines() if _LOCATION.match(line)), "")
        if reason:
            outcome.notes.append(f"skipped: {first_line(reason)}")
    return outcome


def _package_failure(event: _Event, output: list[str], path: str) -> TestOutcome:
    text = "".join(output).strip()
    lines = [line for line in text.splitlines() if line.strip() and not _NOISE.match(line.strip())]
    return TestOutcome(
        name=f"(package {event.Package or '?'})",
        status="BROKEN",
        suite_path=(event.Package,) if event.Package else (),
        duration_ms=round(event.Elapsed * 1000) if event.Elapsed is not None and event.Elapsed >= 0 else None,
        executed_at=to_utc_iso(event.Time),
        framework="go",
        error_message=first_line(lines[0]) if lines else "the package failed outside any test",
        error_stack=cap(text) or None,
        source=path,
    )


def looks_like_gotest(head: bytes) -> bool:
    """The first line that starts with "{" is a go test event."""
    text = head.lstrip()
    if text.startswith(b"{"):  # the common case (any JSON object): its first line is the one
        end = text.find(b"\n")
        end = text.find(b"\r", 0, end) if end >= 0 else text.find(b"\r")
        if end < 0:
            end = text.find(b"\n")
        return _is_event(text[:end] if end >= 0 else text)
    for raw in head.splitlines():
        line = raw.strip()
        if line.startswith(b"{"):
            return _is_event(line)
    return False


class _Probe(msgspec.Struct):
    """The keys that make a JSON object a go test event (any other key is skipped, not built)."""

    Action: Any = msgspec.UNSET
    Package: Any = msgspec.UNSET
    Test: Any = msgspec.UNSET


_PROBE = msgspec.json.Decoder(_Probe)


def _is_event(line: bytes) -> bool:
    try:
        probe = _PROBE.decode(line.strip())
    except msgspec.DecodeError:  # malformed, or not an object (a ValidationError is a DecodeError)
        return False
    return probe.Action is not msgspec.UNSET and (probe.Package is not msgspec.UNSET
                                                   or probe.Test is not msgspec.UNSET)
