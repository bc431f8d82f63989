"""The report of a run, a plan or a milestone (`format=json`; the other formats render this struct)."""

from __future__ import annotations

from typing import Literal

import msgspec

# "project": a project's latest runs, the report a scheduled mail of kind project carries
ReportKind = Literal["run", "plan", "milestone", "project"]
ReportFormat = Literal["json", "html", "pdf", "csv"]
ExportFormat = Literal["junit", "ctrf", "csv"]
REPORT_FORMATS: tuple[str, ...] = ("json", "html", "pdf", "csv")
EXPORT_FORMATS: tuple[str, ...] = ("junit", "ctrf", "csv")


class Counts(msgspec.Struct):
    """Results by status. ``executed`` = total - unknown (UNKNOWN = not run yet); ``pass_rate`` =
    passed / executed and ``progress`` = executed / total, in percent with one decimal (null on zero)."""

    total: int
    passed: int
    failed: int
    broken: int
    skipped: int
    unknown: int
    executed: int
    pass_rate: float | None
    progress: float | None


class RunLine(msgspec.Struct):
    id: str
    name: str
    environment: str | None
    status: str
    created_at: str
    completed_at: str | None
    counts: Counts


class EnvironmentLine(msgspec.Struct):
    environment: str | None  # null: runs without an environment
    runs: int
    counts: Counts


class SectionLine(msgspec.Struct):
    section_id: str | None  # null: cases outside any section (or deleted since)
    section: str  # the path of names, "Parent / Child"
    counts: Counts


class AssigneeLine(msgspec.Struct):
    assignee_id: str | None  # null: unassigned
    name: str
    counts: Counts


class BugLink(msgspec.Struct):
    key: str
    url: str | None


class Cluster(msgspec.Struct):
    """Failures sharing a fingerprint (docs/failures.md), with the bugs linked to any of them."""

    fingerprint: str
    failures: int
    error_message: str | None
    first_seen_at: str | None
    new: bool  # first seen in this run (run reports only)
    bugs: list[BugLink]


class Failure(msgspec.Struct):
    result_id: str
    run_id: str
    run_name: str
    environment: str | None
    test_case_code: str | None  # null: an unlinked result
    title: str | None
    status: str
    error_message: str | None  # the first 1,000 characters
    fingerprint: str | None
    bug_ticket_key: str | None
    bug_ticket_url: str | None


class TrendPoint(msgspec.Struct):
    run_id: str
    name: str
    created_at: str
    pass_rate: float | None


class Trend(msgspec.Struct):
    """A run against the previous run of the same project and environment."""

    previous_run_id: str | None
    previous_run_name: str | None
    previous: Counts | None
    pass_rate_change: float | None  # percentage points
    new_failures: int  # linked tests failing now and not failing in the previous run
    fixed: int  # linked tests failing in the previous run and passing now
    history: list[TrendPoint]  # up to 10 runs of that project and environment, oldest first


class Report(msgspec.Struct):
    kind: ReportKind
    id: str
    name: str
    project_id: str
    project_name: str | None
    generated_at: str
    status: str | None  # a run's or a milestone's status
    environment: str | None  # a run's
    due_on: str | None  # a milestone's
    totals: Counts
    runs: list[RunLine]  # newest first; a plan's or milestone's first 500
    runs_total: int
    environments: list[EnvironmentLine]
    sections: list[SectionLine]
    assignees: list[AssigneeLine]
    unlinked: Counts  # results naming no case: in no section and assigned to no one
    clusters: list[Cluster]  # the largest 50
    clusters_total: int
    failures: list[Failure]  # the first 200 failed or broken results
    failures_total: int
    trend: Trend | None  # run reports only


class ReportEnvelope(msgspec.Struct):
    data: Report
