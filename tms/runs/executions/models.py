"""One result as a tester executes it: GET|PATCH /api/v1/results/{id}, bulk assignment, step results."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import UNSET, UnsetType

from tms.http.fields import Label, RequestBody
from tms.runs.results.models import Result, Text, Url
from tms.runs.statuses import ResultStatus

# An index is checked against the case's checklist (its size computed, never expanded); this bound only
# keeps it an int32. A case stored before EXPANDED_STEPS_LIMIT can have far more than 2,000 steps.
StepIndex = Annotated[int, msgspec.Meta(ge=1, le=2_147_483_647)]
# step_results one PATCH may carry (each replaces the stored list): validation is linear in this
STEP_RESULTS_MAX = 10_000
Id = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]


class StepResult(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """One step's outcome: ``index`` is the 1-based position of the step in the case's checklist
    (Background steps first, an Outline's steps once per Examples row)."""

    index: StepIndex
    status: ResultStatus
    comment: Annotated[str, msgspec.Meta(max_length=2_000)] | None = None


class ResultPatch(RequestBody):
    status: ResultStatus | UnsetType = UNSET
    comment: Text | UnsetType | None = UNSET
    bug_ticket_key: Label | UnsetType | None = UNSET
    bug_ticket_url: Url | UnsetType | None = UNSET
    assignee_id: Id | UnsetType | None = UNSET
    step_results: Annotated[list[StepResult], msgspec.Meta(max_length=STEP_RESULTS_MAX)] | UnsetType | None = UNSET
    # not in the contract's list: the execution view's timer (an addition, as the contract allows)
    duration_ms: Annotated[int, msgspec.Meta(ge=0, le=2147483647)] | UnsetType | None = UNSET


class ResultEnvelope(msgspec.Struct):
    data: Result


class AssignBody(RequestBody):
    """POST /runs/{id}/assign: results of the run (ids) to one user, or to nobody with null."""

    result_ids: Annotated[list[Id], msgspec.Meta(min_length=1, max_length=50_000)]
    assignee_id: Id | None


class AssignAnswer(msgspec.Struct):
    assigned: int


class AssignEnvelope(msgspec.Struct):
    data: AssignAnswer
