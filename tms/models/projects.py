from __future__ import annotations

from typing import Annotated

import msgspec

from tms.models import Label, LongText, Name, RequestBody


class Project(msgspec.Struct):
    id: str
    name: str
    description: str | None
    active: bool
    environments: list[str]
    test_cases_count: int
    created_at: str
    updated_at: str


class ProjectCreate(RequestBody):
    name: Name
    description: LongText | None = None
    environments: Annotated[list[Label], msgspec.Meta(max_length=50)] = msgspec.field(default_factory=list)


class ProjectEnvelope(msgspec.Struct):
    data: Project


class ProjectList(msgspec.Struct):
    data: list[Project]
