"""Bodies of /api/v1/report-schedules: a report mailed on a cron schedule (issue 27)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, UnsetType

from tms.http.fields import RequestBody

ScheduleKind = Literal["milestone", "project"]
Attachment = Literal["pdf", "html"]
# a documented cap (docs/reports.md): a schedule mails a team's list, not a mailing list
MAX_RECIPIENTS = 50
# five fields, minute hour day-of-month month day-of-week, in UTC; checked by cronsim in the service
Cron = Annotated[str, msgspec.Meta(pattern=r"^[0-9A-Za-z*,/#?\- ]+$", min_length=1, max_length=200)]
# an address as a mail server takes it in To (no blank, separator, angle bracket or control character);
# explicit ranges, not \s: Python's and JSON Schema's (ECMA) \s differ beyond ASCII
_PART = r"[^@,;<>\x00-\x20\x7f-\x9f]+"
Email = Annotated[str, msgspec.Meta(pattern=rf"^{_PART}@{_PART}\.{_PART}$", max_length=254)]
Recipients = Annotated[list[Email], msgspec.Meta(min_length=1, max_length=MAX_RECIPIENTS)]
Id = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]


class ReportSchedule(msgspec.Struct):
    id: str
    project_id: str
    kind: str
    target_id: str | None  # the milestone (kind milestone); null for kind project
    cron: str  # UTC
    recipients: list[str]
    attachment: str  # pdf | html: the report file attached to the mail (the body is the HTML report)
    next_run_at: str
    last_sent_at: str | None
    last_error: str | None  # null after a successful send
    created_at: str
    updated_at: str


class ReportScheduleCreate(RequestBody):
    project_id: Id
    kind: ScheduleKind
    cron: Cron
    recipients: Recipients
    target_id: Id | None = None
    attachment: Attachment = "pdf"


class ReportScheduleUpdate(RequestBody):
    """The project never changes; kind and target_id change together (a milestone needs its id)."""

    kind: ScheduleKind | UnsetType = UNSET
    target_id: Id | UnsetType | None = UNSET
    cron: Cron | UnsetType = UNSET
    recipients: Recipients | UnsetType = UNSET
    attachment: Attachment | UnsetType = UNSET


class ReportScheduleEnvelope(msgspec.Struct):
    data: ReportSchedule


class ReportScheduleList(msgspec.Struct):
    data: list[ReportSchedule]


class SendResult(msgspec.Struct):
    """What ``POST /report-schedules/{id}/send`` did: sent, or the error the SMTP server gave."""

    sent: bool
    recipients: int
    error: str | None


class SendEnvelope(msgspec.Struct):
    data: SendResult
