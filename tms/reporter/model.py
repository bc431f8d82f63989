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
    # where the test is defined, when the report says so (JUnit `file`/`line`, CTRF `filePath`/`line`,
    # Playwright's spec location, mocha/jest/RSpec/dart): sent as the result's `file` and `line`
    location_file: str | None = None
    location_line: int | None = None


class ReportError(Exception):
    """A report that cannot be read: names the file, the line when known, and the reason."""

    def __init__(self, path: str, reason: str, line: int | None = None, *, not_a_report: bool = False) -> None:
        self.not_a_report = not_a_report  # valid XML/JSON of another kind: skipped when found in a directory
        self.path = path
        self.reason = reason
        self.line = line
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {reason}")


def source_line(value: object) -> int | None:
    """A report's line number (an int, or digits in a string) when it is a plausible one."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 10_000_000:
        return value
    return None


def source_file(value: object) -> str | None:
    """A report's source file path, as written (at most 1,000 characters)."""
    if isinstance(value, str) and value.strip():
        return value.strip()[:1000]
    return None


RetryRule = Callable[[TestOutcome, TestOutcome], bool]


@paused_gc
def fold_retries(outcomes: list[TestOutcome], is_retry: RetryRule | None = None) -> list[TestOutcome]:
    """One outcome per test attempt group: a repeated record of the same test (suite path, classname
    and name) becomes one outcome with the earlier one, whose status is the last attempt's and whose
    `attempts` keeps the earlier ones, when `is_retry(earlier, later)` says the format made it a retry
    (every repeat when no rule is given); any other repeat stays a test of its own. Order is first
    appearance. Parsers call it with their format's rule (docs/reporter.md, "Repeated tests")."""
    folded: list[TestOutcome] = []
    seen: dict[tuple[tuple[str, ...], str | None, str], int] = {}
    for outcome in outcomes:
        key = (outcome.suite_path, outcome.classname, outcome.name)
        index = seen.get(key)
        if index is None or (is_retry is not None and not is_retry(folded[index], outcome)):
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


def after_failure(earlier: TestOutcome, later: TestOutcome) -> bool:
    """A retry follows a failed attempt (pytest-rerunfailures, TestNG's RetryAnalyzer, ...)."""
    return earlier.status in ("FAILED", "BROKEN")


@paused_gc
def title_apart(outcomes: list[TestOutcome]) -> list[TestOutcome]:
    """Tests that are not retries of one another but share suite path, classname and name (rows of a
    parametrized test that print no parameters, a report passed twice) each keep a result of their
    own: the second is named "name [2]", the third "name [3]", in report order. Never merged."""
    count: dict[tuple[tuple[str, ...], str | None, str], int] = {}
    repeated = False
    for outcome in outcomes:
        key = (outcome.suite_path, outcome.classname, outcome.name)
        number = count.get(key, 0) + 1
        count[key] = number
        if number > 1:
            repeated = True
    if not repeated:
        return outcomes
    taken = set(count)  # a renamed test must not take the name of another one ("x [2]" written as such)
    seen: dict[tuple[tuple[str, ...], str | None, str], int] = {}
    for outcome in outcomes:
        key = (outcome.suite_path, outcome.classname, outcome.name)
        number = seen.get(key, 0) + 1
        seen[key] = number
        if number == 1:
            continue
        name = f"{outcome.name} [{number}]"
        while (outcome.suite_path, outcome.classname, name) in taken:
            number += 1
            name = f"{outcome.name} [{number}]"
        seen[key] = number
        taken.add((outcome.suite_path, outcome.classname, name))
        outcome.notes.append(f"repeated test: {number} in this run by its name, not a retry")
        outcome.name = name
    return outcomes
