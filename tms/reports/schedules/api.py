"""/api/v1/report-schedules: a project's or a milestone's report mailed on a cron schedule (issue 27).

Reading needs the read scope, changing a schedule or sending it now the write scope (API tokens are
made by admins; in the web UI only admins manage schedules).
"""

from __future__ import annotations

from litestar import delete, get, patch, post
from litestar.params import JSONBody

from tms.http.api_auth import ApiRequest, requires
from tms.reports.schedules import service
from tms.reports.schedules.models import (
    MAX_RECIPIENTS,
    ReportScheduleCreate,
    ReportScheduleEnvelope,
    ReportScheduleList,
    ReportScheduleUpdate,
    SendEnvelope,
)
from tms.state import ConfigDep, DatabaseDep

_BODY = (f"`cron`: five fields (minute hour day-of-month month day-of-week) in UTC, e.g. `0 7 * * 1`; "
         f"`recipients`: 1 to {MAX_RECIPIENTS} e-mail addresses; `kind` `milestone` (its report; `target_id` is the "
         "milestone) or `project` (the report of the project's newest 50 runs); `attachment` `pdf` (default) or "
         "`html`: the file attached to the mail, whose body is the HTML report.")


@get("/report-schedules", **requires("read"), summary="A project's report schedules (at most 100)")
async def list_schedules(request: ApiRequest, db: DatabaseDep, project_id: str) -> ReportScheduleList:
    return ReportScheduleList(data=await service.list_schedules(db, request.user.tenant_id, project_id))


@post("/report-schedules", **requires("write"), summary="Mail a milestone's or a project's report on a cron schedule",
      description=_BODY)
async def create_schedule(request: ApiRequest, db: DatabaseDep,
                          data: JSONBody[ReportScheduleCreate]) -> ReportScheduleEnvelope:
    created = await service.create_schedule(db, request.user.tenant_id, data)
    return ReportScheduleEnvelope(data=created)


@get("/report-schedules/{schedule_id:str}", **requires("read"),
     summary="One report schedule, with next_run_at, last_sent_at and last_error")
async def get_schedule(request: ApiRequest, db: DatabaseDep, schedule_id: str) -> ReportScheduleEnvelope:
    return ReportScheduleEnvelope(data=await service.get_schedule(db, request.user.tenant_id, schedule_id))


@patch("/report-schedules/{schedule_id:str}", **requires("write"),
       summary="Change a schedule's cron, recipients, kind and target or attachment", description=_BODY)
async def update_schedule(request: ApiRequest, db: DatabaseDep, schedule_id: str,
                          data: JSONBody[ReportScheduleUpdate]) -> ReportScheduleEnvelope:
    updated = await service.update_schedule(db, request.user.tenant_id, schedule_id, data)
    return ReportScheduleEnvelope(data=updated)


@delete("/report-schedules/{schedule_id:str}", **requires("write"), summary="Remove a report schedule")
async def delete_schedule(request: ApiRequest, db: DatabaseDep, schedule_id: str) -> None:
    await service.delete_schedule(db, request.user.tenant_id, schedule_id)


@post("/report-schedules/{schedule_id:str}/send", **requires("write"), status_code=200,
      summary="Send now: mail the report at once (the schedule's next_run_at stays)",
      description="Answers whether the SMTP server took the mail and, if not, its error (also kept as last_error).")
async def send_schedule(request: ApiRequest, db: DatabaseDep, config: ConfigDep, schedule_id: str) -> SendEnvelope:
    result = await service.send_now(db, config, request.user.tenant_id, schedule_id)
    return SendEnvelope(data=result)


HANDLERS = [list_schedules, create_schedule, get_schedule, update_schedule, delete_schedule, send_schedule]
