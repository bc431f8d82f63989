"""Bodies of /api/v1/known-issues: a bug that explains failures, by fingerprint or by pattern."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, UnsetType

from tms.http.fields import Label, LongText, RequestBody
from tms.library.cases.models import Pagination

Fingerprint = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{16}$")]
# bounded so that compiling and matching stay cheap (tms.failures.known_issues.patterns checks the rest)
Pattern = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]
Url = Annotated[str, msgspec.Meta(max_length=2_000)]
KnownIssueStatus = Literal["OPEN", "CLOSED"]


class KnownIssueCreate(RequestBody):
    project_id: str
    bug_ticket_key: Label
    fingerprint: Fingerprint | None = None
    pattern: Pattern | None = None
    bug_ticket_url: Url | None = None
    note: LongText | None = None


class KnownIssueUpdate(RequestBody):
    fingerprint: Fingerprint | UnsetType | None = UNSET
    pattern: Pattern | UnsetType | None = UNSET
    bug_ticket_key: Label | UnsetType = UNSET
    bug_ticket_url: Url | UnsetType | None = UNSET
    note: LongText | UnsetType | None = UNSET
    status: KnownIssueStatus | UnsetType = UNSET


class KnownIssue(msgspec.Struct):
    id: str
    project_id: str
    fingerprint: str | None
    pattern: str | None
    bug_ticket_key: str
    bug_ticket_url: str | None
    note: str | None
    status: str
    closed_at: str | None
    created_at: str
    updated_at: str


class KnownIssueEnvelope(msgspec.Struct):
    data: KnownIssue


class KnownIssueList(msgspec.Struct):
    data: list[KnownIssue]
    pagination: Pagination
