"""Scheduled mail reports (issue 27): a project's or a milestone's report mailed on a cron schedule.

A schedule's ``cron`` has five fields (minute hour day-of-month month day-of-week) read in UTC by
cronsim; ``next_run_at`` is the next time it matches. Every replica runs ``run_due`` every
``reports.schedule_poll_seconds``: it reads the due schedules and claims each with a compare-and-set
UPDATE (``store.claim``) that moves next_run_at on, so one replica alone mails a given occurrence.
A schedule overdue by several occurrences (the service was down) is mailed once and moves to the next
occurrence after now. The mail is the HTML report as its body, with the PDF (or HTML) file attached,
rendered and sent in worker threads (``tms.reports.service.render``, ``tms.notifications.mail.deliver``).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

import msgspec
from cronsim import CronSim, CronSimError

from tms.config import Config
from tms.db import Database, Row
from tms.errors import Conflict, InvalidInput, NotFound
from tms.ids import iso, new_id, now_iso, utc_now
from tms.library.projects import service as project_service
from tms.notifications import mail
from tms.planning.milestones import service as milestone_service
from tms.reports import service as report_service
from tms.reports.models import ReportKind
from tms.reports.schedules import store
from tms.reports.schedules.models import (
    ReportSchedule,
    ReportScheduleCreate,
    ReportScheduleUpdate,
    SendResult,
)
from tms.team.audit import service as audit

log = logging.getLogger(__name__)

MAX_PER_PROJECT = 100  # schedules a project may hold (the list endpoint answers them all)
DUE_BATCH = 50  # schedules one poll claims at most; the rest wait for the next poll
_recipients = msgspec.json.Decoder(list[str])
_encode = msgspec.json.Encoder().encode


def schedule_from_row(row: Row) -> ReportSchedule:
    return ReportSchedule(
        id=row["id"], project_id=row["project_id"], kind=row["kind"], target_id=row["target_id"], cron=row["cron"],
        recipients=_recipients.decode(row["recipients"]), attachment=row["attachment"],
        next_run_at=row["next_run_at"], last_sent_at=row["last_sent_at"], last_error=row["last_error"],
        created_at=row["created_at"], updated_at=row["updated_at"],
    )


# ---- cron --------------------------------------------------------------------------------------------

def next_after(cron: str, after: datetime) -> datetime:
    """The first time strictly after ``after`` that ``cron`` matches (a whole minute, UTC)."""
    return next(CronSim(cron, after))


def check_cron(cron: str) -> str:
    """The expression with its blanks tidied, or a 400 naming ``cron`` (a bad field, a date that never
    comes such as 30 February, or the ``@daily`` kind of shorthand, which cronsim does not read)."""
    text = " ".join(cron.split())
    try:
        next_after(text, utc_now())
    except (CronSimError, StopIteration, ValueError) as exc:
        raise InvalidInput(f"cron is not a valid five-field cron expression ({exc or 'never matches'}): use "
                           "minute hour day-of-month month day-of-week, in UTC, e.g. `0 7 * * 1`",
                           field="cron") from None
    return text


def _clean_recipients(addresses: list[str]) -> list[str]:
    seen: dict[str, str] = {}
    for address in addresses:
        seen.setdefault(address.strip().lower(), address.strip())
    return list(seen.values())


# ---- CRUD --------------------------------------------------------------------------------------------

async def list_schedules(db: Database, tenant_id: str, project_id: str) -> list[ReportSchedule]:
    await _project_or_404(db, tenant_id, project_id)
    return [schedule_from_row(row) for row in await store.list_for_project(db, tenant_id, project_id)]


async def get_schedule(db: Database, tenant_id: str, schedule_id: str) -> ReportSchedule:
    row = await store.get(db, tenant_id, schedule_id)
    if row is None:
        raise NotFound(f"report schedule {schedule_id} not found")
    return schedule_from_row(row)


async def _project_or_404(db: Database, tenant_id: str, project_id: str) -> None:
    try:
        await project_service.get_project(db, tenant_id, project_id)
    except NotFound:
        raise NotFound(f"project {project_id} not found", field="project_id") from None


async def _check_target(db: Database, tenant_id: str, project_id: str, kind: str, target_id: str | None) -> str | None:
    if kind == "project":
        if target_id not in (None, project_id):
            raise InvalidInput("target_id is for kind milestone (a project report is the project's)", field="target_id")
        return None
    if target_id is None:
        raise InvalidInput("target_id (the milestone) is required for kind milestone", field="target_id")
    try:
        await milestone_service.require_milestone(db, tenant_id, target_id, project_id)
    except NotFound:
        raise NotFound(f"milestone {target_id} not found", field="target_id") from None
    except InvalidInput as exc:
        raise InvalidInput(exc.detail, field="target_id") from None
    return target_id


async def create_schedule(db: Database, tenant_id: str, body: ReportScheduleCreate) -> ReportSchedule:
    cron = check_cron(body.cron)
    await _project_or_404(db, tenant_id, body.project_id)
    target_id = await _check_target(db, tenant_id, body.project_id, body.kind, body.target_id)
    now = now_iso()
    row: dict[str, Any] = {
        "id": new_id(), "tenant_id": tenant_id, "project_id": body.project_id, "kind": body.kind,
        "target_id": target_id, "cron": cron, "recipients": _encode(_clean_recipients(body.recipients)).decode(),
        "attachment": body.attachment, "next_run_at": iso(next_after(cron, utc_now())), "last_sent_at": None,
        "last_error": None, "created_at": now, "updated_at": now,
    }
    async with db.transaction() as tx:
        if await store.count_for_project(tx, tenant_id, body.project_id) >= MAX_PER_PROJECT:
            raise Conflict(f"a project holds at most {MAX_PER_PROJECT} report schedules", field="project_id")
        await store.insert(tx, row)
        await audit.record(tx, tenant_id, "report_schedule.created", "report_schedule", row["id"],
                           {"project_id": body.project_id, "kind": body.kind, "cron": cron,
                            "recipients": len(body.recipients)})
        stored = await store.get(tx, tenant_id, row["id"])
    assert stored is not None
    return schedule_from_row(stored)


async def update_schedule(db: Database, tenant_id: str, schedule_id: str, body: ReportScheduleUpdate) -> ReportSchedule:
    old = await get_schedule(db, tenant_id, schedule_id)
    changes: dict[str, Any] = {}
    if body.cron is not msgspec.UNSET:
        changes["cron"] = check_cron(body.cron)
        changes["next_run_at"] = iso(next_after(changes["cron"], utc_now()))
    if body.recipients is not msgspec.UNSET:
        changes["recipients"] = _encode(_clean_recipients(body.recipients)).decode()
    if body.attachment is not msgspec.UNSET:
        changes["attachment"] = body.attachment
    kind = old.kind if body.kind is msgspec.UNSET else body.kind
    target = old.target_id if body.target_id is msgspec.UNSET else body.target_id
    if kind == "project" and body.target_id is msgspec.UNSET:
        target = None  # turning a milestone schedule into a project one drops the milestone
    if body.kind is not msgspec.UNSET or body.target_id is not msgspec.UNSET:
        changes["kind"] = kind
        changes["target_id"] = await _check_target(db, tenant_id, old.project_id, kind, target)
    if not changes:
        return old
    changes["updated_at"] = now_iso()
    async with db.transaction() as tx:
        if await store.get(tx, tenant_id, schedule_id) is None:
            raise NotFound(f"report schedule {schedule_id} not found")
        await store.update(tx, tenant_id, schedule_id, changes)
        await audit.record(tx, tenant_id, "report_schedule.updated", "report_schedule", schedule_id,
                           {key: value for key, value in changes.items() if key in ("cron", "kind", "target_id",
                                                                                  "attachment")})
        stored = await store.get(tx, tenant_id, schedule_id)
    assert stored is not None
    return schedule_from_row(stored)


async def delete_schedule(db: Database, tenant_id: str, schedule_id: str) -> None:
    async with db.transaction() as tx:
        if not await store.delete(tx, tenant_id, schedule_id):
            raise NotFound(f"report schedule {schedule_id} not found")
        await audit.record(tx, tenant_id, "report_schedule.deleted", "report_schedule", schedule_id, {})


# ---- sending -----------------------------------------------------------------------------------------

async def send_now(db: Database, config: Config, tenant_id: str, schedule_id: str) -> SendResult:
    """"Send now": mails the report at once (next_run_at unchanged) and records the attempt."""
    row = await store.get(db, tenant_id, schedule_id)
    if row is None:
        raise NotFound(f"report schedule {schedule_id} not found")
    error = await _send(db, config, row)
    return SendResult(sent=error is None, recipients=len(_recipients.decode(row["recipients"])), error=error)


async def claim_due(db: Database, now: datetime | None = None, limit: int = DUE_BATCH) -> list[Row]:
    """The due schedules this process claimed: each moved on to its next occurrence after ``now`` by an
    UPDATE that only changes the row if its next_run_at is still the value read, so of several
    replicas polling at once exactly one claims each occurrence."""
    moment = now or utc_now()
    stamp = iso(moment)
    claimed: list[Row] = []
    for row in await store.due(db, stamp, limit):
        try:
            following = iso(next_after(row["cron"], moment))
        except (CronSimError, StopIteration, ValueError):
            following = iso(moment + timedelta(days=365))  # stored before a cronsim upgrade refused it
        async with db.transaction() as tx:
            if await store.claim(tx, row["id"], row["next_run_at"], stamp, following):
                claimed.append(row)
    return claimed


async def run_due(db: Database, config: Config) -> int:
    """One poll of the scheduler: claims the due schedules and mails each; the number mailed."""
    sent = 0
    for row in await claim_due(db):
        if await _send(db, config, row) is None:
            sent += 1
    return sent


async def _send(db: Database, config: Config, row: Row) -> str | None:
    """Renders and mails one schedule's report; records last_sent_at or last_error. None when sent."""
    tenant_id = row["tenant_id"]
    try:
        kind: ReportKind = "milestone" if row["kind"] == "milestone" else "project"
        report = await report_service.build(db, tenant_id, kind, row["target_id"] or row["project_id"])
        body = await report_service.render(report, "html")
        attached = body if row["attachment"] == "html" else await report_service.render(report, "pdf")
        totals = report.totals
        subject = f"{report.kind.capitalize()} report: {report.name}"
        if report.project_name and report.kind != "project":
            subject += f" ({report.project_name})"
        text = (f"{subject}\n\n{totals.total} results: {totals.passed} passed, {totals.failed} failed, "
                f"{totals.broken} blocked, {totals.skipped} skipped, {totals.unknown} untested"
                f"{'' if totals.pass_rate is None else f'; pass rate {totals.pass_rate} %'}.\n"
                f"The full report is attached ({attached.filename}).\n\n"
                f"{config.base_url}/projects/{row['project_id']}/report-schedules\n")
        error = await mail.deliver(config, _recipients.decode(row["recipients"]), subject, text,
                                        html=body.body.decode(),
                                        attachments=((attached.filename, attached.media_type.split(";")[0],
                                                      attached.body),))
    except NotFound as exc:
        error = exc.detail
    except Exception as exc:  # a report that cannot be rendered is recorded, not retried in a loop
        log.exception("report schedule %s failed", row["id"])
        error = f"{type(exc).__name__}: {exc}"[:1000]
    async with db.transaction() as tx:
        await store.record_attempt(tx, tenant_id, row["id"], now_iso() if error is None else None, error)
    return error
