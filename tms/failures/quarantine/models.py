"""Bodies of /api/v1/quarantine: tests set aside from quality gates, with a reason and an optional end."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec

from tms.http.fields import RequestBody
from tms.library.cases.models import Pagination

Ref = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
Title = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]
Reason = Annotated[str, msgspec.Meta(min_length=1, max_length=2_000)]


class QuarantineCreate(RequestBody):
    project_id: str
    reason: Reason
    test_case_code: Ref | None = None
    title: Title | None = None
    expires_at: datetime | None = None


class QuarantineEntry(msgspec.Struct):
    id: str
    project_id: str
    test_case_code: str | None
    title: str | None
    reason: str
    expires_at: str | None
    # false once expires_at has passed: the entry stays listed but no longer applies
    active: bool
    # true when no library case has this code (or no case or recent result this title): allowed, flagged
    unknown_test: bool
    created_at: str
    updated_at: str


class QuarantineEnvelope(msgspec.Struct):
    data: QuarantineEntry


class QuarantineList(msgspec.Struct):
    data: list[QuarantineEntry]
    pagination: Pagination


