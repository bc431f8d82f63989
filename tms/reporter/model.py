"""What the parsers produce: one `TestOutcome` per executed test, before mapping to ingest items.

Parsers know report formats; `mapping` knows the service's rules (tags, statuses, titles). This
small struct is the only thing they share.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")


def paused_gc(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run `function` with Python's cycle collector paused (as it was when the call returns).

    A parser allocates a few objects per test and keeps them all: 50,000 tests are a million live
    objects, and the collector, started every 700 allocations, walks them again and again (full
    collections included) while finding nothing, since parsed reports hold no reference cycles. It
    cost a third of the parse and half of the mapping (bench/parsers.py). Freed objects are still
    freed at once by reference counting; only cycles wait until the collector runs again.
    """

    @functools.wraps(function)
    def paused(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        if not gc.isenabled():
            return function(*args, **kwargs)
        gc.disable()
        try:
            return function(*args, **kwargs)
        finally:
            gc.enable()

    return paused


# the deepest XML element nesting any parser reads (docs/reporter.md): a test report nests suites, a
# test and its keywords a few dozen levels at most; a deeper file is refused before it costs
# quadratic time (JUnit's suite paths) or Python's recursion limit
MAX_XML_DEPTH = 1000


def too_deep(path: str) -> ReportError:
    return ReportError(path, f"refused: XML elements nested deeper than {MAX_XML_DEPTH} levels, the reporter's "
                             "limit (a test report never nests that deep: possible nesting bomb)")


class RefusedPath(str):
    """An attachment path the reporter will not read (outside the folder it must stay in), with the
    reason: the upload skips it and names it in the summary."""

    reason: str

    def __new__(cls, path: str, reason: str) -> RefusedPath:
        made = super().__new__(cls, path)
        made.reason = reason
        return made


# the service's result statuses, worst first: used to combine several tests that map to one case
STATUSES = ("FAILED", "BROKEN", "UNKNOWN", "PASSED", "SKIPPED")


@dataclass(slots=True)
class TestOutcome:
    """One test as a report describes it (after retries of the same test are folded together)."""

    __test__ = False  # not a pytest test class, despite its name

    name: str
    status: str  # one of STATUSES
    suite_path: tuple[str, ...] = ()
    classname: str | None = None
    duration_ms: int | None = None
    error_message: str | None = None
    error_stack: str | None = None
    executed_at: str | None = None  # ISO 8601 UTC with Z
    framework: str | None = None  # only when the report itself says which
    tags: tuple[str, ...] = ()  # Cucumber tags, each with its leading "@"
    service_properties: tuple[str, ...] = ()  # values of <property name="service">
    notes: list[str] = field(default_factory=list)  # go into the result's comment
    attempts: list[str] = field(default_factory=list)  # statuses of earlier attempts, oldest first
    source: str = ""  # file the test came from (for messages)
    # files the report references for this test, (name, path on disk): uploaded after the ingest
    attachments: list[tuple[str, str]] = field(default_factory=list)


class ReportError(Exception):
    """A report that cannot be read: names the file, the line when known, and the reason."""

    def __init__(self, path: str, reason: str, line: int | None = None, *, not_a_report: bool = False) -> None:
        self.not_a_report = not_a_report  # valid XML/JSON of another kind: skipped when found in a directory
        self.path = path
        self.reason = reason
        self.line = line
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {reason}")


@paused_gc
def fold_retries(outcomes: list[TestOutcome]) -> list[TestOutcome]:
    """One outcome per test: repeated records of the same test (a retried test written once per
    attempt, or a rerun report passed after the first one) become one outcome whose status is the
    last attempt's, with the earlier attempts kept in `attempts`. Order is first appearance."""
    folded: list[TestOutcome] = []
    seen: dict[tuple[tuple[str, ...], str | None, str], int] = {}
    for outcome in outcomes:
        key = (outcome.suite_path, outcome.classname, outcome.name)
        index = seen.get(key)
        if index is None:
            seen[key] = len(folded)
            folded.append(outcome)
            continue
        earlier = folded[index]
        history = [*earlier.attempts, earlier.status]
        notes = list(earlier.notes)
        if earlier.error_message:
            notes.append(f"attempt {len(history)}: {earlier.error_message.splitlines()[0]}")
        outcome.attempts = [*history, *outcome.attempts]
        outcome.notes = [*notes, *outcome.notes]
        # duration stays the final attempt's: comparable with the same test's duration in other runs
        outcome.executed_at = earlier.executed_at or outcome.executed_at
        # a screenshot or trace of a failed attempt is the most useful one: keep every attempt's files
        outcome.attachments = [*earlier.attachments, *outcome.attachments]
        folded[index] = outcome
    return folded
