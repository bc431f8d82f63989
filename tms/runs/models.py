"""Bodies of /api/v1/runs."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, UnsetType

from tms.http.fields import Label, Name, RequestBody
from tms.library.cases.models import Pagination

RunStatus = Literal["PENDING", "IN_PROGRESS", "COMPLETED", "SYNCED"]
RUN_STATUSES: tuple[str, ...] = ("PENDING", "IN_PROGRESS", "COMPLETED", "SYNCED")

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
