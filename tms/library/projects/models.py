from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import UNSET, UnsetType

from tms.http.fields import Label, LongText, Name, RequestBody


class Project(msgspec.Struct):
    id: str
    name: str
    description: str | None
    active: bool
    environments: list[str]
    test_cases_count: int
    created_at: str
    updated_at: str
    # archived: hidden from the UI's lists, refuses new runs and ingests (409); archived_at says since when
    archived: bool = False
    archived_at: str | None = None
    # issue 26: a case of this project reaches READY only by a review's approval (not the author's own)
    require_review: bool = False


class ProjectCreate(RequestBody):
    name: Name
    description: LongText | None = None
    environments: Annotated[list[Label], msgspec.Meta(max_length=50)] = msgspec.field(default_factory=list)


Environments = Annotated[list[Label], msgspec.Meta(max_length=50)]


class ProjectUpdate(RequestBody):
    name: Name | UnsetType = UNSET
    description: LongText | UnsetType | None = UNSET
    environments: Environments | UnsetType = UNSET
    archived: bool | UnsetType = UNSET
    require_review: bool | UnsetType = UNSET  # admins only


class ProjectEnvelope(msgspec.Struct):
    data: Project


class ProjectList(msgspec.Struct):
    data: list[Project]
