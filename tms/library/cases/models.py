"""Bodies of /api/v1/cases: the enumerations and defaults decided in the contract."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from tms.http.fields import Label, Name, RequestBody

CaseStatus = Literal["DRAFT", "READY", "DEPRECATED"]
Priority = Literal["LOW", "MEDIUM", "HIGH", "CRITICAL"]
Layer = Literal["UI", "API", "INTEGRATION", "UNIT"]
AutomationStatus = Literal["MANUAL", "IN_PROGRESS", "AUTOMATED", "FLAKY", "ARCHIVED"]
TicketSource = Literal["JIRA", "GITHUB", "GITLAB", "LINEAR", "OTHER"]

CASE_STATUSES: tuple[str, ...] = ("DRAFT", "READY", "DEPRECATED")
CODE_PATTERN = r"^[A-Z][A-Z0-9]*-[0-9]+$"

Code = Annotated[str, msgspec.Meta(pattern=CODE_PATTERN, max_length=64)]
# Feature files can be long; 200k characters is far beyond any real one and bounds parser time.
BddContent = Annotated[str, msgspec.Meta(min_length=1, max_length=200_000)]
Tags = Annotated[list[Label], msgspec.Meta(max_length=100)]
# {key: value} of the project's custom fields (tms.library.fields checks each value against its field)
CustomFieldValues = Annotated[dict[str, Any], msgspec.Meta(max_length=200)]


class Ticket(msgspec.Struct, forbid_unknown_fields=True):
    key: Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
    source: TicketSource


Tickets = Annotated[list[Ticket], msgspec.Meta(max_length=100)]


class CaseCreate(RequestBody):
    title: Name
    bdd_content: BddContent
    project_id: str | None = None
    code: Code | None = None
    status: CaseStatus = "DRAFT"
    priority: Priority = "MEDIUM"
    layer: Layer | None = None
    is_e2e: bool = False
    automation_status: AutomationStatus = "MANUAL"
    tags: Tags = msgspec.field(default_factory=list)
    tickets: Tickets = msgspec.field(default_factory=list)
    section_id: str | None = None
    custom_fields: CustomFieldValues = msgspec.field(default_factory=dict)


class CaseUpdate(RequestBody):
    """Only the fields present change; ``null`` is allowed where the field itself is nullable."""

    title: Name | UnsetType = UNSET
    bdd_content: BddContent | UnsetType = UNSET
    project_id: str | UnsetType | None = UNSET
    code: Code | UnsetType = UNSET
    status: CaseStatus | UnsetType = UNSET
    priority: Priority | UnsetType = UNSET
    layer: Layer | UnsetType | None = UNSET
    is_e2e: bool | UnsetType = UNSET
    automation_status: AutomationStatus | UnsetType = UNSET
    tags: Tags | UnsetType = UNSET
    tickets: Tickets | UnsetType = UNSET
    section_id: str | UnsetType | None = UNSET
    # the keys given change (null or "" removes a value); the others keep theirs
    custom_fields: CustomFieldValues | UnsetType = UNSET
    # true puts the case in the retest queue (firing retest.required), false takes it out
    needs_retest: bool | UnsetType = UNSET


REVIEW_STATES: tuple[str, ...] = ("NONE", "REQUESTED", "APPROVED", "CHANGES_REQUESTED")
ReviewComment = Annotated[str, msgspec.Meta(min_length=1, max_length=5_000)]
UserId = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]


class Review(msgspec.Struct):
    """A case's review (issue 26): who was asked, and the reviewer's last comment (a rejection's reason)."""

    state: str = "NONE"  # NONE | REQUESTED | APPROVED | CHANGES_REQUESTED
    reviewer_id: str | None = None
    updated_at: str | None = None
    comment: str | None = None
    author_id: str | None = None  # who wrote the version under review


class ReviewRequest(RequestBody):
    reviewer_id: UserId


class ReviewReject(RequestBody):
    comment: ReviewComment


class Case(msgspec.Struct):
    id: str
    code: str
    title: str
    bdd_content: str
    project_id: str | None
    status: str
    priority: str
    layer: str | None
    is_e2e: bool
    automation_status: str
    tags: list[str]
    tickets: list[Ticket]
    created_at: str
    updated_at: str
    needs_retest: bool = False
    retest_reason: str | None = None
    retest_bug_key: str | None = None
    retest_flagged_at: str | None = None
    section_id: str | None = None
    version: int = 1
    custom_fields: dict[str, Any] = msgspec.field(default_factory=dict)
    review: Review = msgspec.field(default_factory=Review)


class Pagination(msgspec.Struct):
    total: int
    limit: int
    offset: int


class CaseEnvelope(msgspec.Struct):
    data: Case


class CaseList(msgspec.Struct):
    data: list[Case]
    pagination: Pagination


class Actor(msgspec.Struct):
    type: str  # user | token | system
    id: str | None
    name: str


class SharedStepUsed(msgspec.Struct):
    """A shared step a case version's text used (``* shared: <name>``, or nested in another), as it was
    when the version was recorded."""

    name: str
    version: int
    steps: str


_shared_steps_decoder = msgspec.json.Decoder(list[SharedStepUsed])


def decode_shared_steps(stored: str | None) -> list[SharedStepUsed]:
    """case_versions.shared_steps as read back (NULL: none recorded)."""
    return _shared_steps_decoder.decode(stored) if stored else []


class CaseVersion(msgspec.Struct):
    version: int
    code: str
    title: str
    bdd_content: str
    status: str
    priority: str
    layer: str | None
    is_e2e: bool
    automation_status: str
    tags: list[str]
    tickets: list[Ticket]
    section_id: str | None
    project_id: str | None
    changed_by: Actor
    created_at: str
    custom_fields: dict[str, Any] = msgspec.field(default_factory=dict)
    # the shared steps its text used, as they were then (none recorded for versions before migration 0044)
    shared_steps: list[SharedStepUsed] = msgspec.field(default_factory=list)


class CaseVersionList(msgspec.Struct):
    data: list[CaseVersion]
    pagination: Pagination
