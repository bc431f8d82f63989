"""Result items of POST /runs/{id}/results and ingest, and the stored result as listed."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import msgspec

from tms.http.fields import Label, RequestBody
from tms.library.cases.models import Pagination
from tms.runs.statuses import FAILING, ResultStatus

ResultSource = Literal["automated", "manual"]

Ref = Annotated[str, msgspec.Meta(max_length=100)]
Text = Annotated[str, msgspec.Meta(max_length=20_000)]
Stack = Annotated[str, msgspec.Meta(max_length=200_000)]
Short = Annotated[str, msgspec.Meta(max_length=500)]
Url = Annotated[str, msgspec.Meta(max_length=2_000)]
# stored in a SQLite INTEGER (64-bit signed); a larger number was a 500 at the insert
Millis = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]


class ResultIn(msgspec.Struct, forbid_unknown_fields=True):
    """One result item. Not a RequestBody: a bad item is rejected on its own (207), never the batch."""

    status: ResultStatus
    test_case_code: Ref | None = None
    test_case_id: Ref | None = None
    title: Short | None = None
    comment: Text | None = None
    bug_ticket_key: Label | None = None
    bug_ticket_url: Url | None = None
    duration_ms: Millis | None = None
    framework: Label | None = None
    error_message: Text | None = None
    error_stack: Stack | None = None
    executed_at: datetime | None = None
    # statuses of earlier attempts of the same test in this run, oldest first (the reporter's retries):
    # a PASSED result with a FAILED or BROKEN attempt passed only on retry, evidence of a flaky test
    attempts: Annotated[list[ResultStatus], msgspec.Meta(max_length=50)] | None = None

    @property
    def passed_on_retry(self) -> int:
        return int(self.status == "PASSED" and bool(self.attempts)
                   and any(a in FAILING for a in self.attempts or ()))

    def __post_init__(self) -> None:
        # stored in UTC: an offset can push a time at the calendar's edge out of the years 1-9999
        # ("9999-12-31T23:59:59-01:00"); msgspec turns this ValueError into a ValidationError
        if self.executed_at is not None and self.executed_at.tzinfo is not None:
            try:
                self.executed_at.astimezone(UTC)
            except OverflowError:
                raise ValueError("executed_at is out of range: in UTC it must fall within the years "
                                 "0001-9999") from None


class ResultsBody(RequestBody):
    """The fast path: every item well-typed, decoded in one pass."""

    results: list[ResultIn]


class ResultsBodyLoose(RequestBody):
    """The slow path after the fast one failed: items are checked one by one."""

    results: list[Any]


class ItemError(msgspec.Struct):
    index: int
    error: str


class BulkAnswer(msgspec.Struct):
    accepted: int
    rejected: int
    errors: list[ItemError]


class Result(msgspec.Struct):
    id: str
    test_case_id: str | None
    test_case_code: str | None
    title: str | None
    status: str
    comment: str | None
    bug_ticket_key: str | None
    bug_ticket_url: str | None
    duration_ms: int | None
    framework: str | None
    error_message: str | None
    error_stack: str | None
    executed_at: str | None
    created_at: str
    updated_at: str
    attachments: list[dict[str, Any]]
    fingerprint: str | None = None  # FAILED and BROKEN results: tms.failures.fingerprints
    # the case's version when the result was written (null: unlinked, or written before versions existed)
    case_version: int | None = None
    # team work (migration 0016): who should execute it, and the outcome of each step (JSON as stored)
    assignee_id: str | None = None
    step_results: msgspec.Raw | None = None
    # who last set the outcome (issue 24): "manual" through the execution view or PATCH /results/{id},
    # "automated" through ingest, shards or POST /runs/{id}/results
    source: ResultSource = "automated"


class ResultList(msgspec.Struct):
    data: list[Result]
    pagination: Pagination
