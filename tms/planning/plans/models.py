"""Bodies of /api/v1/plans: a selection of cases started as one run per environment."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import UNSET, UnsetType

from tms.http.fields import Label, LongText, Name, RequestBody
from tms.library.cases.models import Pagination
from tms.runs.models import CaseRef, RunCounts

Ref = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]


class PlanCreate(RequestBody):
    project_id: str
    name: Name
    description: LongText | None = None
    milestone_id: str | None = None
    # the union of: these cases (cuids or codes), every case in these sections and their subsections,
    # and every case carrying any of these tags
    case_ids: Annotated[list[CaseRef], msgspec.Meta(max_length=50_000)] = msgspec.field(default_factory=list)
    section_ids: Annotated[list[Ref], msgspec.Meta(max_length=2_000)] = msgspec.field(default_factory=list)
    tags: Annotated[list[Label], msgspec.Meta(max_length=100)] = msgspec.field(default_factory=list)
    # one run per environment; none = one run without an environment
    environments: Annotated[list[Label], msgspec.Meta(max_length=20)] = msgspec.field(default_factory=list)


class PlanUpdate(RequestBody):
    name: Name | UnsetType = UNSET
    description: LongText | UnsetType | None = UNSET
    milestone_id: str | UnsetType | None = UNSET


class PlanSelection(msgspec.Struct):
    """How the cases were chosen, as the plan was created."""

    case_ids: list[str]
    section_ids: list[str]
    tags: list[str]
    environments: list[str]


class Plan(msgspec.Struct):
    id: str
    project_id: str
    milestone_id: str | None
    name: str
    description: str | None
    run_ids: list[str]
    # the sums of its runs' summaries
    counts: RunCounts
    case_count: int
    selection: PlanSelection
    created_at: str
    updated_at: str


class PlanEnvelope(msgspec.Struct):
    data: Plan


class PlanList(msgspec.Struct):
    data: list[Plan]
    pagination: Pagination
