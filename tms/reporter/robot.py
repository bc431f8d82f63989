"""Robot Framework's own `output.xml` (RF 3.x to 7.x): one outcome per `<test>`, suites nested.

| status        | outcome |
|---------------|---------|
| PASS          | PASSED  |
| FAIL          | FAILED; BROKEN when the test's setup failed |
| SKIP, NOT RUN | SKIPPED |

Suite path: the nested suite names. Tags: `<tag>` (`[Tags]  service('X')` or `@service('X')` links).
Error: the test's status message; the stack names the failing keyword chain. Duration: RF 7's
`elapsed` (seconds), or `endtime - starttime` of older versions. Retries: the RetryFailed listener
writes only the last attempt and says "[RETRY] PASS on 2. retry." in its message: that many failed
attempts came first; a test written twice under one name folds like any repeated test. Keyword bodies are dropped
as soon as they end, so the memory held is one test's, not the log's.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from tms.reporter.junit import to_utc_iso
from tms.reporter.model import ReportError, TestOutcome, paused_gc
from tms.reporter.reading import START, cap, first_line, local, seconds_to_ms, xml_errors, xml_stream

_STATUS = {"PASS": "PASSED", "FAIL": "FAILED", "SKIP": "SKIPPED", "NOT RUN": "SKIPPED", "NOT_RUN": "SKIPPED"}
# the RetryFailed listener rewrites a retried test's message: "[RETRY] PASS on 1. retry."
_RETRIED = re.compile(r"\[RETRY\] (PASS|FAIL|SKIP) on (\d+)\. retry\.")
# delivered whole: a test with its keywords; the statistics and errors sections are not read
_UNITS = frozenset({"test", "statistics", "errors"})
_KEYWORDS = {"kw", "for", "iter", "if", "branch", "try", "while", "group", "return", "break", "continue",
             "variable", "error", "setup", "teardown"}


@paused_gc
def parse_robot(path: str) -> list[TestOutcome]:
    # only the suites around the tests are evented (a test's parent is the innermost one); keyword log
    # lines are emptied as they end, inside a test still being read as well (`prune`)
    path_of: list[tuple[str, ...]] = []
    outcomes: list[TestOutcome] = []
    with xml_errors(path, "Robot Framework"):
        for event, tag, elem in xml_stream(path, _UNITS, prune="msg"):
            if event == START:
                if not path_of:
                    if tag != "robot":
                        raise ReportError(path, f"not a Robot Framework output.xml: root element <{tag}>", 1,
                                          not_a_report=True)
                    path_of.append(())
                elif tag == "suite":
                    name = (elem.get("name") or "").strip()
                    path_of.append((*path_of[-1], name) if name else path_of[-1])
            elif tag == "test":
                outcomes.append(_outcome(elem, path_of[-1], path))
            elif tag == "suite":
                path_of.pop()
    return outcomes


def _outcome(elem: Any, suite_path: tuple[str, ...], path: str) -> TestOutcome:
    status_elem = None
    tags: list[str] = []
    for child in elem:
        tag = local(child.tag)
        if tag == "status":
            status_elem = child
        elif tag == "tag":
            value = (child.text or "" if not len(child) else "".join(child.itertext())).strip()
            if value:
                tags.append(value if value.startswith("@") else f"@{value}")
        elif tag == "tags":  # RF 3
            for item in child:
                value = "".join(item.itertext()).strip()
                if value:
                    tags.append(value if value.startswith("@") else f"@{value}")
    raw = (status_elem.get("status") or "").strip().upper() if status_elem is not None else ""
    status = _STATUS.get(raw, "UNKNOWN")
    message = ""
    if status_elem is not None:
        message = (status_elem.text or "" if not len(status_elem) else "".join(status_elem.itertext())).strip()
    retried = _RETRIED.search(message)
    if retried:
        message = _RETRIED.sub("", message).strip()
    outcome = TestOutcome(
        name=(elem.get("name") or "").strip() or "(unnamed test)",
        status=status,
        suite_path=suite_path,
        duration_ms=_duration(status_elem),
        executed_at=_start(status_elem),
        framework="robot",
        tags=tuple(dict.fromkeys(tags)),
        source=path,
    )
    if retried:
        outcome.attempts = ["FAILED"] * min(int(retried.group(2)), 100)  # a retry follows a failure
    if status == "FAILED" and message.startswith(("Setup failed:", "Parent suite setup failed:")):
        outcome.status = status = "BROKEN"  # the test never ran its body
    if status in ("FAILED", "BROKEN"):
        lines = [line.strip() for line in message.splitlines() if line.strip()]
        headline = " ".join(lines[:2]) if lines and lines[0].endswith(":") else (lines[0] if lines else "")
        outcome.error_message = headline[:1000] or "FAIL"
        chain = _failing_chain(elem)
        stack = message
        if chain:
            stack = f"{message}\n\nfailing keywords:\n" + "\n".join(f"  {'  ' * i}{k}" for i, k in enumerate(chain))
        outcome.error_stack = cap(stack) or None
    elif status == "SKIPPED" and message:
        outcome.notes.append(f"skipped: {first_line(message)}")
    return outcome


def _failing_chain(elem: Any) -> list[str]:
    """Names of the FAILed keywords from the test down to the innermost one."""
    chain: list[str] = []
    node = elem
    for _ in range(100):
        nxt = None
        for child in node:
            if local(child.tag) in _KEYWORDS:
                status = next((c for c in child if local(c.tag) == "status"), None)
                if status is not None and status.get("status") == "FAIL":
                    nxt = child
        if nxt is None:
            break
        name = nxt.get("name") or local(nxt.tag).upper()
        library = nxt.get("owner") or nxt.get("library")
        chain.append(f"{library}.{name}" if library else name)
        node = nxt
    return chain


def _duration(status: Any) -> int | None:
    if status is None:
        return None
    elapsed = status.get("elapsed")
    if elapsed is not None:
        return seconds_to_ms(elapsed)
    start, end = _old_time(status.get("starttime")), _old_time(status.get("endtime"))
    if start and end and end >= start:
        return round((end - start).total_seconds() * 1000)
    return None


def _start(status: Any) -> str | None:
    if status is None:
        return None
    if status.get("start"):
        return to_utc_iso(status.get("start"))
    moment = _old_time(status.get("starttime"))
    return to_utc_iso(moment.isoformat()) if moment else None


def _old_time(value: str | None) -> datetime | None:
    """RF < 7 writes "20240501 10:00:00.123"."""
    if not value or value == "N/A":
        return None
    try:
        return datetime.strptime(value, "%Y%m%d %H:%M:%S.%f")
    except ValueError:
        return None
