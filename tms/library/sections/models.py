"""Bodies of /api/v1/sections: a folder tree of cases per project."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import UNSET, UnsetType

from tms.http.fields import LongText, Name, RequestBody

Position = Annotated[int, msgspec.Meta(ge=0, le=1_000_000)]


class Section(msgspec.Struct):
    id: str
    project_id: str
    parent_id: str | None
    name: str
    description: str | None
    position: int
    # cases filed directly in the section; subtree_case_count adds those of every subsection
    case_count: int
    subtree_case_count: int
    depth: int
    created_at: str
    updated_at: str


class SectionCreate(RequestBody):
    project_id: str
    name: Name
    parent_id: str | None = None
    description: LongText | None = None
    position: Position | None = None


class SectionUpdate(RequestBody):
    name: Name | UnsetType = UNSET
    description: LongText | UnsetType | None = UNSET
    parent_id: str | UnsetType | None = UNSET
    position: Position | UnsetType = UNSET


class SectionEnvelope(msgspec.Struct):
    data: Section


class SectionList(msgspec.Struct):
    data: list[Section]
