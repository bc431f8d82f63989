"""Bodies of /api/v1/milestones: a dated goal of a project whose progress is the sum of its runs."""

from __future__ import annotations

import datetime
from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

from tms.http.fields import LongText, Name, RequestBody
from tms.library.cases.models import Pagination
from tms.runs.models import RunCounts

MilestoneStatus = Literal["OPEN", "COMPLETED"]
MILESTONE_STATUSES: tuple[str, ...] = ("OPEN", "COMPLETED")


class MilestoneCreate(RequestBody):
    project_id: str
    name: Name
    description: LongText | None = None
    due_on: datetime.date | None = None  # YYYY-MM-DD


class MilestoneUpdate(RequestBody):
    name: Name | UnsetType = UNSET
    description: LongText | UnsetType | None = UNSET
    due_on: datetime.date | UnsetType | None = UNSET
    status: MilestoneStatus | UnsetType = UNSET


class Milestone(msgspec.Struct):
    id: str
    project_id: str
    name: str
    description: str | None
    due_on: str | None
    status: str
    # the sums of its runs' summaries (linked and unlinked results, as each run's counts)
    counts: RunCounts
    runs_count: int
    completed_at: str | None
    created_at: str
    updated_at: str


class MilestoneEnvelope(msgspec.Struct):
    data: Milestone


class MilestoneList(msgspec.Struct):
    data: list[Milestone]
    pagination: Pagination
