"""A run's results as JUnit XML, CTRF JSON or CSV, written page by page (pure: rows in, bytes out).

JUnit and CTRF are written so that `tms ingest` (tms/reporter/) reads them back into an equal run;
docs/reports.md lists what each format keeps. How each field is written, and why:

- the link to a case: JUnit's ``classname`` and CTRF's ``suite`` are ``@service('CODE')``. The reporter
  links through the tag and drops it from the title (a tag alone leaves nothing), and it also keeps
  results with equal titles apart: it folds tests with the same suite path, classname and name into
  one (retries). Unlinked results carry their title alone (two unlinked results sharing a title in
  one run do come back as one, as the reporter reads any such pair);
- status: JUnit ``<failure>`` FAILED, ``<error>`` BROKEN, ``<skipped>`` SKIPPED, nothing PASSED (JUnit has
  no "unknown": UNKNOWN is written as skipped, with the message "status UNKNOWN"); CTRF passed,
  failed, failed + ``rawStatus: "broken"`` (BROKEN), skipped, other (UNKNOWN);
- JUnit: the message is the ``message`` attribute, the stack the element's text (the reader strips
  both); CTRF: the reader takes the first line of ``message`` as the message and message + trace as
  the stack, so a stack whose first line is the message is written as ``message`` alone, and any
  other pair as ``message`` + ``trace``;
- durations: JUnit ``time`` in seconds with three decimals, CTRF ``duration`` in milliseconds;
  ``executed_at``: JUnit ``timestamp``, CTRF ``start`` (epoch milliseconds).

XML: ``& < > "`` are escaped, and so are newlines, carriage returns and tabs inside attributes
(``&#10;``), which a parser would otherwise turn into spaces; characters XML 1.0 cannot hold at all
(control characters, lone surrogates) become U+FFFD. JSON goes through msgspec.
"""

from __future__ import annotations

import calendar
import csv
import io
import re
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import Any

import msgspec

from tms.db import Row
from tms.runs.statuses import FAILING

Pages = AsyncIterator[list[Row]]
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
UNNAMED = "(unnamed test)"  # what the JUnit reader calls a test without a name; CTRF requires one
_JUNIT_FRAMEWORKS = ("pytest", "jest", "vitest", "mocha")  # names the JUnit reader recognises on the root


def xml_text(value: str) -> str:
    value = _INVALID_XML.sub("\ufffd", value)
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#13;")


def xml_attr(value: str) -> str:
    return xml_text(value).replace('"', "&quot;").replace("\n", "&#10;").replace("\t", "&#9;")


def _seconds(ms: int) -> str:
    return f"{ms // 1000}.{ms % 1000:03d}"


def _tag(code: str) -> str:
    return f"@service('{code}')"


def uniform_framework(frameworks: list[str | None]) -> str | None:
    """The framework when every result of the run names the same one (the reporter reads a
    framework per file, not per test)."""
    return frameworks[0] if len(frameworks) == 1 else None


# ---- JUnit XML --------------------------------------------------------------------------------------

async def junit(run: Row, pages: Pages, framework: str | None = None) -> AsyncIterator[bytes]:
    root = framework if framework in _JUNIT_FRAMEWORKS else "tms"
    counts = (f'tests="{int(run["total"])}" failures="{int(run["failed"])}" errors="{int(run["broken"])}" '
              f'skipped="{int(run["skipped"]) + int(run["unknown"])}"')
    yield (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="{xml_attr(root)}" {counts}>\n'
        f'<testsuite {counts}>\n<properties>'
        f'<property name="tms.run_id" value="{xml_attr(run["id"])}"/>'
        f'<property name="tms.run_name" value="{xml_attr(run["name"])}"/>'
        f'<property name="tms.environment" value="{xml_attr(run["environment"] or "")}"/>'
        "</properties>\n"
    ).encode()
    async for rows in pages:
        yield "".join(_testcase(row) for row in rows).encode()
    yield b"</testsuite>\n</testsuites>\n"


def _testcase(row: Row) -> str:
    parts = [f'<testcase name="{xml_attr(row["title"] or UNNAMED)}"']
    if row["test_case_code"]:
        parts.append(f' classname="{xml_attr(_tag(row["test_case_code"]))}"')
    if row["duration_ms"] is not None:
        parts.append(f' time="{_seconds(int(row["duration_ms"]))}"')
    if row["executed_at"]:
        parts.append(f' timestamp="{xml_attr(row["executed_at"])}"')
    status = row["status"]
    if status == "PASSED":
        parts.append("/>\n")
        return "".join(parts)
    parts.append(">")
    if status in FAILING:
        tag = "failure" if status == "FAILED" else "error"
        message = row["error_message"]
        parts.append(f"<{tag}" + (f' message="{xml_attr(message)}"' if message else ""))
        stack = row["error_stack"]
        parts.append(f">{xml_text(stack)}</{tag}>" if stack else "/>")
    elif status == "UNKNOWN":
        parts.append('<skipped message="status UNKNOWN"/>')
    else:
        parts.append("<skipped/>")
    parts.append("</testcase>\n")
    return "".join(parts)


# ---- CTRF JSON --------------------------------------------------------------------------------------

_CTRF_STATUS = {"PASSED": "passed", "FAILED": "failed", "BROKEN": "failed", "SKIPPED": "skipped", "UNKNOWN": "other"}
_encode = msgspec.json.Encoder().encode


async def ctrf(run: Row, pages: Pages, framework: str | None = None) -> AsyncIterator[bytes]:
    summary = {
        "tests": int(run["total"]), "passed": int(run["passed"]),
        "failed": int(run["failed"]) + int(run["broken"]), "pending": 0, "skipped": int(run["skipped"]),
        "other": int(run["unknown"]), "start": _epoch_ms(run["created_at"]) or 0,
        "stop": _epoch_ms(run["completed_at"]) or 0,
    }
    results: dict[str, Any] = {}
    if framework:
        results["tool"] = {"name": framework}  # the reader takes the tool as every test's framework
    results["summary"] = summary
    head = _encode({"reportFormat": "CTRF", "specVersion": "0.0.0", "results": results})
    # the document is streamed: everything up to the tests array, then the tests, then the closing brackets
    yield head[:-2] + b',"tests":[\n'
    first = True
    async for rows in pages:
        chunk = b",\n".join(_encode(_ctrf_test(row)) for row in rows)
        yield chunk if first else b",\n" + chunk
        first = False
    extra = {"tms": {"run_id": run["id"], "run_name": run["name"], "environment": run["environment"]}}
    yield b"\n]},\"extra\":" + _encode(extra) + b"}\n"


def _ctrf_test(row: Row) -> dict[str, Any]:
    status = row["status"]
    test: dict[str, Any] = {"name": row["title"] or UNNAMED, "status": _CTRF_STATUS.get(status, "other")}
    if row["duration_ms"] is not None:
        test["duration"] = int(row["duration_ms"])
    start = _epoch_ms(row["executed_at"])
    if start:
        test["start"] = start
    if row["test_case_code"]:
        test["suite"] = [_tag(row["test_case_code"])]
    if status == "BROKEN":
        test["rawStatus"] = "broken"
    if status in FAILING:
        message, stack = row["error_message"], row["error_stack"]
        if stack and message and _first_line(stack) == message:
            test["message"] = stack
        else:
            if message:
                test["message"] = message
            if stack:
                test["trace"] = stack
    return test


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _epoch_ms(value: str | None) -> int | None:
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return calendar.timegm(moment.utctimetuple()) * 1000 + moment.microsecond // 1000


# ---- CSV (a spreadsheet: the reporter reads no CSV) ---------------------------------------------------

CSV_COLUMNS = ("test_case_code", "title", "status", "duration_ms", "executed_at", "error_message", "error_stack",
               "framework", "comment", "bug_ticket_key", "bug_ticket_url")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_cell(value: Any) -> Any:
    """A text a spreadsheet would run as a formula (=, +, -, @ first) gets a leading apostrophe."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return "" if value is None else value


def csv_lines(rows: list[list[Any]]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows([spreadsheet_cell(v) for v in row] for row in rows)
    return buffer.getvalue().encode()


async def run_csv(run: Row, pages: Pages, framework: str | None = None) -> AsyncIterator[bytes]:
    yield b"\xef\xbb\xbf" + csv_lines([list(CSV_COLUMNS)])  # the BOM: spreadsheets then read UTF-8
    async for rows in pages:
        yield csv_lines([[row[column] for column in CSV_COLUMNS] for row in rows])


Writer = Callable[[Row, Pages, str | None], AsyncIterator[bytes]]
WRITERS: dict[str, Writer] = {"junit": junit, "ctrf": ctrf, "csv": run_csv}
MEDIA_TYPES = {"junit": "application/xml; charset=utf-8", "ctrf": "application/json",
               "csv": "text/csv; charset=utf-8"}
EXTENSIONS = {"junit": "xml", "ctrf": "json", "csv": "csv"}
