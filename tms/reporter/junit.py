"""JUnit XML in all its dialects, parsed as a stream.

Covered: a `<testsuites>` or a bare `<testsuite>` root, testsuites nested to any depth up to the XML
limit MAX_XML_DEPTH (flattened into a suite path), `<failure>`/`<error>`/`<skipped>` with their message
and body, `<system-out>` and `<system-err>` on cases and on suites, a case's `status` attribute where
no child element says otherwise
(`status="disabled"`, `"skipped"`, `"notrun"` -> SKIPPED; `"failed"` -> FAILED; `"error"` -> BROKEN),
`<properties>`, `time` in seconds with or without decimals (and with a thousands separator, as some
Surefire locales write it), timestamps with or without a zone, Surefire's
`rerunFailure`/`rerunError`/`flakyFailure`/`flakyError` retry records, and Jenkins'
`[[ATTACHMENT|path]]` lines in a case's `<system-out>`/`<system-err>` (files uploaded to its result).

The file is read with ``iterparse`` from defusedxml, so an entity bomb or an external entity is
refused instead of expanded, and each finished `<testcase>` is dropped from the tree at once: memory
grows with the results kept, not with the size of the XML.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any
from xml.etree.ElementTree import ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import iterparse

from tms.reporter.model import (
    MAX_XML_DEPTH,
    ReportError,
    TestOutcome,
    fold_retries,
    paused_gc,
    source_file,
    source_line,
    too_deep,
)
from tms.reporter.reading import MAX_OUTPUT_CHARS as MAX_OUTPUT_CHARS  # also the cap of cucumber.py
from tms.reporter.reading import resolve_path

_RETRY_TAGS = {
    "rerunFailure": "FAILED",
    "rerunError": "BROKEN",
    "flakyFailure": "FAILED",
    "flakyError": "BROKEN",
}
_XSI_SCHEMA = "{http://www.w3.org/2001/XMLSchema-instance}noNamespaceSchemaLocation"


@dataclass(slots=True)
class _Suite:
    name: str
    path: tuple[str, ...]  # names of the open suites down to this one: one tuple shared by its cases
    timestamp: str | None
    framework: str | None
    node: bool = False  # node's test runner: classname is always the word "test"
    declared: str | None = None  # its `tests` attribute
    first: int = 0  # index of its first test case among the file's outcomes
    cases: int = 0  # test cases in it, nested suites' included
    names: set[str] | None = None  # its go tests' names (one package: its classname), to see one run again
    outcomes: list[TestOutcome] = field(default_factory=list)  # only the non-passing ones


@paused_gc
def parse_junit(path: str, progress: Callable[[int], None] | None = None) -> list[TestOutcome]:
    """Every `<testcase>` of the file as a TestOutcome, in document order.

    Raises ReportError naming the file, the line and the reason when the XML is malformed, is not a
    JUnit report, or declares entities (the billion-laughs family).
    """
    outcomes: list[TestOutcome] = []
    stack: list[Any] = []
    suites: list[_Suite] = []
    root_framework: str | None = None
    reruns: set[int] = set()  # the cases of a suite holding rerun attempts
    go = False  # a go test (go-junit-report, gotestsum) written twice in its package: a rerun
    try:
        for event, elem in iterparse(path, events=("start", "end")):
            tag = _local(elem.tag)
            if event == "start":
                if len(stack) >= MAX_XML_DEPTH:
                    raise too_deep(path)  # before suite paths of that length make the parse quadratic
                if not stack:
                    if tag not in ("testsuites", "testsuite"):
                        hint = " (Robot Framework: write one with --xunit FILE)" if tag == "robot" else ""
                        raise ReportError(path, f"not a JUnit XML report: root element <{tag}>{hint}", 1,
                                          not_a_report=True)
                    root_framework = _framework_from_root(elem)
                if tag == "testsuite":
                    outer = suites[-1].framework if suites else root_framework
                    name = (elem.get("name") or "").strip()
                    above = suites[-1].path if suites else ()
                    suites.append(_Suite(
                        name=name,
                        path=(*above, name) if name else above,
                        timestamp=elem.get("timestamp") or (suites[-1].timestamp if suites else None),
                        framework=_framework_from_suite(elem) or outer,
                        node=elem.get("disabled") is not None and elem.get("hostname") is not None,
                        declared=elem.get("tests"),
                        first=len(outcomes),
                    ))
                stack.append(elem)
                continue

            stack.pop()
            parent = stack[-1] if stack else None
            if tag == "testcase":
                suite = suites[-1] if suites else None
                outcome = _testcase(elem, suites, suite.framework if suite else root_framework, path)
                outcomes.append(outcome)
                if suite is not None:
                    suite.cases += 1
                    if suite.framework == "go" and not go:
                        # go tests run again (`-count`, gotestsum `--rerun-fails`) repeat in their package
                        if suite.names is None:
                            suite.names = set()
                        go = outcome.name in suite.names
                        suite.names.add(outcome.name)
                    if outcome.status != "PASSED":
                        suite.outcomes.append(outcome)
                if progress is not None and len(outcomes) % 1000 == 0:
                    progress(len(outcomes))
                _drop(elem, parent)
            elif tag == "properties" and parent is not None and _local(parent.tag) == "testsuite":
                # suite properties come before the cases: they say which tool wrote the file
                framework = _framework_from_properties(elem)
                if framework and suites:
                    suites[-1].framework = framework
            elif tag == "testsuite":
                suite = suites.pop()
                if suites:
                    suites[-1].cases += suite.cases
                if suite.declared is not None and suite.cases > _count(suite.declared):
                    # more cases than the suite counts: pytest-rerunfailures writes each rerun attempt
                    # as one more <testcase> of the same name, left out of `tests`
                    reruns.update(id(o) for o in outcomes[suite.first:])
                _attach_suite_output(elem, suite)
                _drop(elem, parent)
    except ReportError:
        raise
    except DefusedXmlException as exc:
        raise ReportError(path, f"refused: {type(exc).__name__}: the report declares XML entities or "
                                "external references, which a test report never needs (possible XML bomb)") from exc
    except ParseError as exc:
        line = exc.position[0] if getattr(exc, "position", None) else None
        raise ReportError(path, f"malformed XML: {exc}", line) from exc
    except OSError as exc:
        raise ReportError(path, f"cannot read: {exc.strerror or exc}") from exc
    if reruns or go:
        return fold_retries(outcomes, lambda earlier, later: _is_retry(earlier, later, reruns))
    return outcomes


def _is_retry(earlier: TestOutcome, later: TestOutcome, reruns: set[int]) -> bool:
    """Where JUnit XML says a repeated <testcase> is another attempt of the same test: go-junit-report
    and gotestsum (a go test runs again only under `-count` or `--rerun-fails`), and the cases of a
    suite whose `tests` count leaves out its reruns (pytest-rerunfailures, which writes a failed attempt
    as an empty <testcase>: it failed, since only a failure is rerun). Elsewhere a repeat is a test of
    its own (a parametrized row that prints no parameters)."""
    if earlier.framework == "go" and later.framework == "go":
        return True
    if id(earlier) in reruns and id(later) in reruns:
        if earlier.status == "PASSED":
            earlier.status = "FAILED"
            earlier.notes.append("rerun: pytest-rerunfailures wrote this failed attempt without its failure")
        return True
    return False


def _count(value: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        return 1 << 62  # no count: nothing to compare with

def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1] if "}" in tag else tag


def _drop(elem: Any, parent: Any) -> None:
    elem.clear()
    if parent is not None:
        parent.remove(elem)


def _testcase(elem: Any, suites: list[_Suite], framework: str | None, path: str) -> TestOutcome:
    suite = suites[-1] if suites else None
    classname = (elem.get("classname") or "").strip() or None
    if suite is not None and suite.node and classname in ("test", "suite"):
        classname, framework = None, framework or "node"
    outcome = TestOutcome(
        name=(elem.get("name") or "").strip() or "(unnamed test)",
        classname=classname,
        suite_path=suite.path if suite is not None else (),
        status="PASSED",
        duration_ms=parse_seconds(elem.get("time")),
        framework=framework,
        executed_at=to_utc_iso(elem.get("timestamp") or (suite.timestamp if suite is not None else None)),
        source=path,
        location_file=source_file(elem.get("file")),
        location_line=source_line(elem.get("line")),
    )
    declared = elem.get("status") or elem.get("result")
    if not len(elem):
        if declared is not None:
            _declared(outcome, declared, elem.get("result"))
        return outcome  # the common case: a passed test with nothing inside

    status = "PASSED"
    messages: list[str] = []
    bodies: list[str] = []
    attempt_notes: list[str] = []
    services: list[str] = []
    out: list[str] = []
    for child in elem:
        tag = _local(child.tag)
        if tag in ("failure", "error"):
            this = "FAILED" if tag == "failure" else "BROKEN"
            # a case with both a failure and an error failed an assertion first: FAILED wins
            status = this if status in ("PASSED", "SKIPPED") else status
            messages.append(_message(child))
            bodies.append(_text(child))
        elif tag == "skipped":
            if status == "PASSED":
                status = "SKIPPED"
            reason = (child.get("message") or "").strip()
            if reason.lower() in _GENERIC:
                reason = _first_line(_text(child)) or reason
            if reason:
                outcome.notes.append(f"skipped: {_first_line(reason)}")
        elif tag in _RETRY_TAGS:
            message = _message(child)
            stack_trace = child.find("stackTrace")
            detail = message or (_first_line(_text(stack_trace)) if stack_trace is not None else "")
            attempt_notes.append(detail)
        elif tag == "properties":
            for prop in child:
                if _local(prop.tag) == "property" and (prop.get("name") or "").strip().lower() == "service":
                    value = prop.get("value")
                    services.append(value if value is not None else _text(prop))
        elif tag in ("system-out", "system-err"):
            text = _text(child)
            if text.strip():
                out.append(f"--- {tag} ---\n{text.rstrip()}")
                if "[[ATTACHMENT|" in text:
                    _attachments(text, path, outcome)

    outcome.status = status
    if status == "PASSED" and declared is not None:
        _declared(outcome, declared, elem.get("result"))
        status = outcome.status
    outcome.service_properties = tuple(s.strip() for s in services if s and s.strip())
    if status in ("FAILED", "BROKEN"):
        outcome.error_message = _join_messages(messages) or None
        stack = "\n\n".join(b.strip() for b in bodies if b.strip())
        if out:
            stack = "\n\n".join([stack, *out]) if stack else "\n\n".join(out)
        outcome.error_stack = _cap(stack) or None
    if attempt_notes:
        _record_surefire_attempts(elem, outcome, attempt_notes)
    return outcome


# a `status` (or `result`) attribute where no <failure>, <error> or <skipped> says otherwise: Ant's
# and Google Test's `status="notrun"`/`result="suppressed"`, xunit-style `status="disabled"`,
# `status="skipped"`, `status="failed"`; values naming a pass or a run say nothing more
_DECLARED = {
    "disabled": "SKIPPED", "skipped": "SKIPPED", "skip": "SKIPPED", "notrun": "SKIPPED", "not run": "SKIPPED",
    "not_run": "SKIPPED", "ignored": "SKIPPED", "pending": "SKIPPED", "suppressed": "SKIPPED",
    "failed": "FAILED", "failure": "FAILED", "fail": "FAILED",
    "error": "BROKEN", "errored": "BROKEN", "broken": "BROKEN",
}


def _declared(outcome: TestOutcome, status: str, result: str | None) -> None:
    found = _DECLARED.get(status.strip().lower())
    if found is None and result:
        found = _DECLARED.get(result.strip().lower())
    if found is None:
        return
    outcome.status = found
    note = f'status="{status.strip()}"' + (f' result="{result.strip()}"' if result and result != status else "")
    if found == "SKIPPED":
        outcome.notes.append(f"skipped: {note}")
    else:
        outcome.error_message = outcome.error_message or f"{note} (the report gives no failure message)"


_ATTACHMENT = re.compile(r"\[\[ATTACHMENT\|([^\]\r\n]+)\]\]")


def _attachments(text: str, path: str, outcome: TestOutcome) -> None:
    """Jenkins' JUnit attachments convention: `[[ATTACHMENT|/path/to/file]]` in a case's output."""
    base = os.path.dirname(os.path.abspath(path))
    for match in _ATTACHMENT.finditer(text):
        raw = match.group(1).strip()
        if raw:
            outcome.attachments.append((os.path.basename(raw.replace("\\", "/")), resolve_path(base, raw)))


def _record_surefire_attempts(elem: Any, outcome: TestOutcome, details: list[str]) -> None:
    """Surefire writes one test's reruns inside its <testcase>: rerun* = failed again, flaky* = failed
    before a pass. Turn them into the attempts list, oldest first, the final outcome being `status`."""
    reruns = [_RETRY_TAGS[_local(c.tag)] for c in elem if _local(c.tag) in ("rerunFailure", "rerunError")]
    flaky = [_RETRY_TAGS[_local(c.tag)] for c in elem if _local(c.tag) in ("flakyFailure", "flakyError")]
    if flaky and outcome.status == "PASSED":
        outcome.attempts = flaky
    elif reruns:
        # the first run is the <failure>/<error> itself; the final rerun's status is the outcome's
        outcome.attempts = [outcome.status, *reruns[:-1]]
    first = 2 if reruns and not (flaky and outcome.status == "PASSED") else 1
    for number, detail in enumerate(details, start=first):
        if detail:
            outcome.notes.append(f"attempt {number}: {_first_line(detail)}")


def _attach_suite_output(elem: Any, suite: _Suite) -> None:
    """Suite-level system-out/err (JUnit 4, Gradle) belongs to no one case: give it to the failures."""
    if not suite.outcomes:
        return
    parts = []
    for tag in ("system-out", "system-err"):
        child = elem.find(tag)
        if child is not None and _text(child).strip():
            parts.append(f"--- suite {tag} ---\n{_text(child).rstrip()}")
    if not parts:
        return
    for outcome in suite.outcomes:
        if outcome.status in ("FAILED", "BROKEN"):
            outcome.error_stack = _cap("\n\n".join([outcome.error_stack or "", *parts]).strip())


_GENERIC = {"", "failed", "skipped", "error"}  # go-junit-report's message says nothing; its body does


def _message(elem: Any) -> str:
    message = (elem.get("message") or "").strip()
    if message.lower() in _GENERIC:
        message = _first_line(_text(elem)) or message
    kind = (elem.get("type") or "").strip()
    if kind and message and kind not in message:
        return f"{kind}: {message}"
    return message or kind


def _join_messages(messages: list[str]) -> str:
    unique = list(dict.fromkeys(m for m in messages if m))
    return _cap("\n".join(unique), 4000)


def _text(elem: Any) -> str:
    return "".join(elem.itertext()) if elem is not None else ""


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:1000]
    return ""


def _cap(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 40] + f"\n… [{len(text) - limit + 40} characters cut]"


_THOUSANDS = re.compile(r"^\d{1,3}(,\d{3})+(\.\d*)?$")


def parse_seconds(value: str | None) -> int | None:
    """JUnit `time` (seconds: "1", "0.25", "1,234.5", "0,25") as whole milliseconds."""
    if value is None:
        return None
    try:  # the common case: a plain number
        seconds = float(value)
        if 0 <= seconds < float("inf"):
            return round(seconds * 1000)
        return None
    except ValueError:
        pass
    text = value.strip()
    if not text:
        return None
    if _THOUSANDS.match(text):
        text = text.replace(",", "")
    elif "," in text and "." not in text:
        text = text.replace(",", ".")  # a decimal comma from a non-English locale
    try:
        seconds = float(text)
    except ValueError:
        return None
    if seconds != seconds or seconds < 0 or seconds == float("inf"):
        return None
    return round(seconds * 1000)


@lru_cache(maxsize=4096)  # every case of a suite carries the suite's timestamp
def to_utc_iso(value: str | None) -> str | None:
    """An ISO 8601 timestamp as UTC with milliseconds and Z. A timestamp without a zone is read as the
    local time of this machine: reports are written and ingested by the same CI job."""
    if not value or not value.strip():
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _framework_from_root(elem: Any) -> str | None:
    name = (elem.get("name") or "").strip().lower()
    return _framework_from_name(name)


def _framework_from_name(name: str) -> str | None:
    if name.startswith("pytest"):
        return "pytest"
    if name.startswith("jest"):
        return "jest"
    if name.startswith("vitest"):
        return "vitest"
    if name.startswith("mocha"):
        return "mocha"
    return None


def _framework_from_suite(elem: Any) -> str | None:
    if "surefire" in (elem.get(_XSI_SCHEMA) or ""):
        return "surefire"
    return _framework_from_name((elem.get("name") or "").strip().lower())


def _framework_from_properties(elem: Any) -> str | None:
    names = {(p.get("name") or "") for p in elem if _local(p.tag) == "property"}
    if "go.version" in names:
        return "go"  # go-junit-report and gotestsum
    if any(n.startswith("surefire.") for n in names):
        return "surefire"
    return None
