"""mocha's JSON reporter (`mocha --reporter json`, `--reporter-option output=FILE`): one outcome per
entry of `tests`, and a BROKEN one per failed hook.

mocha writes every test that ended in `tests`, and the same entries again in `passes`, `failures` and
`pending`; an entry carries no status of its own, so a test's status is the list that holds its
entry (matched by all its fields, each entry once: equal entries are interchangeable):

| list       | outcome |
|------------|---------|
| failures   | FAILED  |
| pending    | SKIPPED (`it.skip`, `xit`, an `it` without a body, `this.skip()`) |
| passes     | PASSED  |

A failed hook (`before`, `beforeEach`, ...) is in `failures` only: the tests it stopped are written
nowhere, so it becomes a BROKEN outcome named as mocha names it (`"before all" hook for "lists
orders"`), never lost. Title: mocha writes no suite structure, only the `fullTitle` (the describe
titles and the test's, joined by spaces): the suite path is the `fullTitle` without the test's own
title, one level (`Cart adding items > adds one item`). Retries: `currentRetry` (`this.retries(n)`) is
the number of failed attempts before the written one. Duration in milliseconds; `stats.start` is the
run's start.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec

from tms.reporter.junit import to_utc_iso
from tms.reporter.model import ReportError, TestOutcome, paused_gc, source_file
from tms.reporter.reading import cap, decode_json, first_line, non_negative_ms, read_json_bytes, strip_ansi

_MAX_RETRIES = 100


class _Test(msgspec.Struct):
    title: Any = None
    fullTitle: Any = None
    file: Any = None
    duration: Any = None
    currentRetry: Any = None
    speed: Any = None
    err: Any = None


class _Stats(msgspec.Struct):
    start: Any = None


class _Report(msgspec.Struct):
    tests: list[_Test]
    stats: _Stats | None = None
    pending: list[_Test] = []
    failures: list[_Test] = []
    passes: list[_Test] = []


_DECODER = msgspec.json.Decoder(_Report)
_ENCODE = msgspec.json.Encoder().encode


def _key(test: _Test) -> tuple[Any, ...]:
    err = test.err
    return (test.title, test.fullTitle, test.file, test.duration, test.currentRetry,
            _ENCODE(err) if isinstance(err, (dict, list)) else err)


@paused_gc
def parse_mocha(path: str) -> list[TestOutcome]:
    report = decode_json(path, read_json_bytes(path), _DECODER, "mocha JSON")
    started = to_utc_iso(report.stats.start) if report.stats and isinstance(report.stats.start, str) else None
    failures = Counter(_key(t) for t in report.failures)
    pending = Counter(_key(t) for t in report.pending)
    outcomes: list[TestOutcome] = []
    for index, test in enumerate(report.tests):
        key = _key(test)
        if failures[key] > 0:
            failures[key] -= 1
            status = "FAILED"
        elif pending[key] > 0:
            pending[key] -= 1
            status = "SKIPPED"
        else:
            status = "PASSED"
        outcomes.append(_outcome(test, status, f"$.tests[{index}]", path, started))
    # what is left in `failures` matched no test: failed hooks (their tests never ran)
    for index, test in enumerate(report.failures):
        key = _key(test)
        if failures[key] > 0:
            failures[key] -= 1
            outcomes.append(_outcome(test, "BROKEN", f"$.failures[{index}]", path, started))
    return outcomes


def _outcome(test: _Test, status: str, where: str, path: str, started: str | None) -> TestOutcome:
    title = test.title.strip() if isinstance(test.title, str) else ""
    full = test.fullTitle.strip() if isinstance(test.fullTitle, str) else ""
    if not title and not full:
        raise ReportError(path, f"{where}.title: a test without a title")
    suite: tuple[str, ...] = ()
    name = title or full
    if title and full.endswith(title) and len(full) > len(title):
        parent = full[: -len(title)].strip()
        suite = (parent,) if parent else ()
    elif not title:
        name = full
    outcome = TestOutcome(
        name=name,
        status=status,
        suite_path=suite,
        duration_ms=non_negative_ms(test.duration) if status != "SKIPPED" else None,
        executed_at=started,
        framework="mocha",
        source=path,
        location_file=source_file(test.file),
    )
    err = test.err if isinstance(test.err, dict) else {}
    if status in ("FAILED", "BROKEN"):
        message = strip_ansi(err.get("message") if isinstance(err.get("message"), str) else "")
        stack = strip_ansi(err.get("stack") if isinstance(err.get("stack"), str) else "")
        outcome.error_message = first_line(message) or first_line(stack) or (
            "hook failed" if status == "BROKEN" else "failed")
        outcome.error_stack = cap(stack if message.strip() and message.strip() in stack
                                  else "\n\n".join(t for t in (message.strip(), stack.strip()) if t)) or None
        if status == "BROKEN":
            outcome.notes.append("a hook failed: the tests it stops are not in the report")
    retries = test.currentRetry
    if isinstance(retries, int) and not isinstance(retries, bool) and retries > 0:
        outcome.attempts = ["FAILED"] * min(retries, _MAX_RETRIES)  # mocha retries only a failed attempt
    return outcome
