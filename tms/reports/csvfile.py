"""A report as one CSV table, for spreadsheets: one row per group (totals, environment, run, section,
assignee, failure cluster) and per listed failure, all under one header; a cell that does not apply
is empty. Counts and statuses are headed and written in the words people read (Blocked,
Untested: tms.runs.statuses), as the HTML and PDF reports say them. Texts a spreadsheet would run as a
formula get a leading apostrophe (export.spreadsheet_cell).
"""

from __future__ import annotations

from typing import Any

from tms.reports.export import csv_lines
from tms.reports.models import Counts, Report
from tms.runs.statuses import LABELS, counted, label

COLUMNS = ("group", "name", "total", *(word.lower() for word in LABELS.values()), "progress_pct",
           "pass_rate_pct", "test_case_code", "status", "run", "environment", "error_message", "fingerprint",
           "bug_ticket_key", "bug_ticket_url")


def _counts(counts: Counts) -> list[Any]:
    return [counts.total, *(n for _, n in counted(counts)), counts.progress, counts.pass_rate]


_NO_COUNTS = [None] * 8
_NO_DETAIL = [None] * 8


def report_csv(report: Report) -> bytes:
    rows: list[list[Any]] = [list(COLUMNS), ["totals", report.name, *_counts(report.totals), *_NO_DETAIL]]
    if report.trend is not None and report.trend.previous is not None:
        rows.append(["previous run", report.trend.previous_run_name, *_counts(report.trend.previous), *_NO_DETAIL])
    rows.extend(["environment", e.environment or "(none)", *_counts(e.counts), *_NO_DETAIL]
                for e in report.environments)
    if report.kind != "run":
        rows.extend(["run", r.name, *_counts(r.counts), None, label(r.status), r.id, r.environment, None, None, None,
                     None] for r in report.runs)
    rows.extend(["section", s.section, *_counts(s.counts), *_NO_DETAIL] for s in report.sections)
    if report.unlinked.total:
        rows.append(["section", "(results naming no case)", *_counts(report.unlinked), *_NO_DETAIL])
    rows.extend(["assignee", a.name, *_counts(a.counts), *_NO_DETAIL] for a in report.assignees)
    for c in report.clusters:
        bugs = c.bugs[0] if c.bugs else None
        rows.append(["cluster", c.error_message, c.failures, *_NO_COUNTS[1:], None, None, None, None,
                     c.error_message, c.fingerprint, ";".join(b.key for b in c.bugs) or None,
                     bugs.url if bugs and len(c.bugs) == 1 else None])
    rows.extend(["failure", f.title, *_NO_COUNTS, f.test_case_code, label(f.status), f.run_name, f.environment,
                 f.error_message, f.fingerprint, f.bug_ticket_key, f.bug_ticket_url] for f in report.failures)
    return b"\xef\xbb\xbf" + csv_lines(rows)
