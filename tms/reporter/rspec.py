"""RSpec's json formatter (`rspec --format json --out FILE`): one outcome per entry of `examples`, and
a BROKEN one when errors occurred outside of examples (a spec file that could not load).

| status   | outcome |
|----------|---------|
| passed   | PASSED  |
| failed   | FAILED  |
| pending  | SKIPPED (`skip`, `xit`, `pending`: the `pending_message` is kept in the comment) |
| other    | UNKNOWN |

RSpec counts every failed example as a failure, whatever the exception: so does the reader (the
exception's class opens its message: `RSpec::Expectations::ExpectationNotMetError: expected ...`).

Title: RSpec writes no group structure, only the `full_description` (the group descriptions and the
example's, joined by spaces): the suite path is the `full_description` without the example's own
`description`, one level (`Cart when empty > has a total of 0`). RSpec writes no retries
(rspec-retry prints them and keeps the last attempt): a repeat is a test of its own. `run_time` is in
seconds. `messages` ("An error occurred while loading ./spec/x_spec.rb") go to the BROKEN outcome of
`summary.errors_outside_of_examples_count`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tms.reporter.model import ReportError, TestOutcome, paused_gc, source_file, source_line
from tms.reporter.reading import cap, decode_json, first_line, read_json_bytes, strip_ansi

_STATUS = {"passed": "PASSED", "failed": "FAILED", "pending": "SKIPPED"}
_MAX_FRAMES = 200


class _Exception(msgspec.Struct):
    message: Any = None
    backtrace: Any = None
    # `class` is a Python keyword: renamed on decoding
    kind: Any = msgspec.field(default=None, name="class")


class _Example(msgspec.Struct):
    id: Any = None
    description: Any = None
    full_description: Any = None
    status: Any = None
    file_path: Any = None
    line_number: Any = None
    run_time: Any = None
    pending_message: Any = None
    exception: _Exception | None = None


class _Summary(msgspec.Struct):
    errors_outside_of_examples_count: Any = None


class _Report(msgspec.Struct):
    examples: list[_Example]
    version: Any = None
    messages: Any = None
    summary: _Summary | None = None


_DECODER = msgspec.json.Decoder(_Report)


@paused_gc
def parse_rspec(path: str) -> list[TestOutcome]:
    report = decode_json(path, read_json_bytes(path), _DECODER, "RSpec JSON")
    outcomes = [_outcome(example, index, path) for index, example in enumerate(report.examples)]
    errors = report.summary.errors_outside_of_examples_count if report.summary else None
    if isinstance(errors, int) and not isinstance(errors, bool) and errors > 0:
        messages = [strip_ansi(m).strip() for m in report.messages or () if isinstance(m, str)] \
            if isinstance(report.messages, list) else []
        loading = [m for m in messages if m.startswith("An error occurred")] or messages
        outcome = TestOutcome(name="(errors outside of examples)", status="BROKEN", framework="rspec", source=path)
        outcome.error_message = (first_line(loading[0]) if loading else "") or (
            f"{errors} error(s) occurred outside of examples")
        outcome.error_stack = cap("\n\n".join(loading)) or None
        outcome.notes.append(f"{errors} error(s) outside of examples: a spec file that could not load "
                             "or a hook outside any example failed")
        outcomes.append(outcome)
    return outcomes


def _outcome(example: _Example, index: int, path: str) -> TestOutcome:
    description = example.description.strip() if isinstance(example.description, str) else ""
    full = example.full_description.strip() if isinstance(example.full_description, str) else ""
    if not description and not full:
        raise ReportError(path, f"$.examples[{index}].description: an example without a description")
    status = _STATUS.get(example.status.lower(), "UNKNOWN") if isinstance(example.status, str) else None
    if status is None:
        raise ReportError(path, f"$.examples[{index}].status: missing or not a string: {example.status!r}")
    suite: tuple[str, ...] = ()
    name = description or full
    if description and full.endswith(description) and len(full) > len(description):
        parent = full[: -len(description)].strip()
        suite = (parent,) if parent else ()
    run_time = example.run_time
    duration = (round(run_time * 1000) if isinstance(run_time, (int, float)) and not isinstance(run_time, bool)
                and 0 <= run_time < 1e12 else None)
    outcome = TestOutcome(name=name, status=status, suite_path=suite, duration_ms=duration, framework="rspec",
                          source=path, location_file=source_file(example.file_path),
                          location_line=source_line(example.line_number))
    error = example.exception
    if status == "FAILED" and error is not None:
        kind = error.kind if isinstance(error.kind, str) else ""
        message = strip_ansi(error.message if isinstance(error.message, str) else "").strip()
        frames = [f for f in error.backtrace if isinstance(f, str)][:_MAX_FRAMES] \
            if isinstance(error.backtrace, list) else []
        headline = first_line(message)
        outcome.error_message = (f"{kind}: {headline}" if kind and headline else headline or kind) or "failed"
        body = f"{kind}:\n{message}" if kind and message else message or kind
        outcome.error_stack = cap("\n\n".join(t for t in (body, "\n".join(frames)) if t)) or None
    elif status == "FAILED":
        outcome.error_message = "failed"
    elif status == "SKIPPED" and isinstance(example.pending_message, str) and example.pending_message.strip():
        outcome.notes.append(f"pending: {first_line(example.pending_message)}")
    elif status == "UNKNOWN":
        outcome.notes.append(f"status: {example.status}")
    return outcome
