"""Bodies of /api/v1/runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from tms.http.fields import Label, Name, RequestBody
from tms.library.cases.models import Pagination
from tms.runs.statuses import ResultStatus

RunStatus = Literal["PENDING", "IN_PROGRESS", "COMPLETED", "SYNCED"]
RUN_STATUSES: tuple[str, ...] = ("PENDING", "IN_PROGRESS", "COMPLETED", "SYNCED")

RunKind = Literal["automated", "manual", "mixed"]

CaseRef = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]


class RunCreate(RequestBody):
    name: Name
    project_id: str
    environment: Label | None = None
    # cuids or codes; each pre-populates the run with one UNKNOWN result
    test_case_ids: Annotated[list[CaseRef], msgspec.Meta(max_length=50_000)] = msgspec.field(default_factory=list)
    milestone_id: str | None = None


class RunUpdate(RequestBody):
    name: Name | UnsetType = UNSET
    environment: Label | UnsetType | None = UNSET
    status: RunStatus | UnsetType = UNSET
    milestone_id: str | UnsetType | None = UNSET
    # what the team concluded, usually written when completing the run (an addition to the contract)
    summary: Annotated[str, msgspec.Meta(max_length=20000)] | UnsetType | None = UNSET


# the most cases one rerun carries (as many as POST /runs pre-populates)
RERUN_MAX_CASES = 50_000


class RunRerun(RequestBody):
    """POST /runs/{id}/rerun: a new run of the cases whose result had one of ``statuses``."""

    statuses: Annotated[list[ResultStatus], msgspec.Meta(min_length=1, max_length=5)]
    name: Name | None = None  # default: the run's name + " (rerun)"


class RunCounts(msgspec.Struct):
    """The run's results by status, linked and unlinked together (not in the spec: for dashboards/UI)."""

    total: int
    passed: int
    failed: int
    broken: int
    skipped: int
    unknown: int


class Run(msgspec.Struct):
    id: str
    name: str
    project_id: str
    environment: str | None
    status: str
    created_at: str
    updated_at: str
    completed_at: str | None
    counts: RunCounts
    milestone_id: str | None = None
    plan_id: str | None = None  # read-only: set when a test plan created the run
    summary: str | None = None
    # issue 24: "automated" (no result written by hand), "manual" (every one), "mixed"
    kind: RunKind = "automated"


class RunEnvelope(msgspec.Struct):
    data: Run


class RunList(msgspec.Struct):
    data: list[Run]
    pagination: Pagination


class RunCasesBody(RequestBody):
    """POST/DELETE /runs/{id}/cases: cuids or codes of the cases to add or remove."""

    case_ids: Annotated[list[CaseRef], msgspec.Meta(min_length=1, max_length=50_000)]


class RunCasesChange(msgspec.Struct):
    added: int | None
    removed: int | None
    run: Run


class RunCasesEnvelope(msgspec.Struct):
    data: RunCasesChange


class ResultFailedEvent(msgspec.Struct, kw_only=True, gc=False):  # gc: no cycles, only texts
    """``data`` of test_run_result.failed: the contract's fields (made by ``tms.runs.writes``), and, added
    by issues 26 and 24, the result's custom field values and the test's source location."""

    run_id: str
    run_name: str
    project_id: str
    result_id: str
    test_case_id: str | None
    test_case_code: str | None
    title: str | None
    error_message: str | None
    bug_ticket_key: str | None
    # the values as stored (a JSON object, checked when written), sent verbatim: no decode per event, and
    # no dict per event for the GC to track through an ingest's thousands of failures
    custom_fields: msgspec.Raw = msgspec.Raw(b"{}")
    file: str | None = None
    line: int | None = None


class RunCompletedEvent(msgspec.Struct, kw_only=True):
    """``data`` of test_run.completed; the counts include unlinked results."""

    run_id: str
    run_name: str
    project_id: str
    environment: str | None
    total: int
    passed: int
    failed: int
    broken: int
    skipped: int

    @staticmethod
    def of(run: Mapping[str, Any]) -> RunCompletedEvent:
        """From a run row (``tms.runs.store.COLUMNS``): the one place this event's data is made."""
        return RunCompletedEvent(
            run_id=run["id"], run_name=run["name"], project_id=run["project_id"], environment=run["environment"],
            total=run["results_total"], passed=run["results_passed"], failed=run["results_failed"],
            broken=run["results_broken"], skipped=run["results_skipped"])
