"""A project's report schedules page (Reports → Schedules): add, change, remove, "Send now".

Admins manage schedules (the router is ``needs_role("admin")``: a schedule mails the project's results
to outside addresses); every write goes through tms.reports.schedules.service, so the rules are the API's.
"""

from __future__ import annotations

from typing import Any

from litestar import Router, get, post
from litestar.response import Redirect, Template

from tms.config import Config
from tms.db import Database
from tms.errors import DomainError, NotFound
from tms.http.pages import AnyRequest, convert, done, form_of, not_found, render, tenant_of
from tms.library.projects import service as project_service
from tms.planning.milestones import service as milestone_service
from tms.reports.schedules import service
from tms.reports.schedules.models import (
    MAX_RECIPIENTS,
    ReportSchedule,
    ReportScheduleCreate,
    ReportScheduleUpdate,
)
from tms.state import ConfigDep, DatabaseDep
from tms.team.signin.session import needs_role, page_guard


def _addresses(text: str) -> list[str]:
    return [part.strip() for part in text.replace(";", ",").replace("\n", ",").split(",") if part.strip()]


def _worded(errors: dict[str, str]) -> dict[str, str]:
    """The model's refusals of a list or a pattern, said for a form (msgspec words them for API clients)."""
    worded = dict(errors)
    if "recipients" in worded:
        worded["recipients"] = (f"Give 1 to {MAX_RECIPIENTS} e-mail addresses, each like name@example.com, "
                                "separated by commas or lines.")
    if "regex" in worded.get("cron", ""):
        worded["cron"] = "Five fields of digits, *, ranges, steps or names, e.g. 0 7 * * 1 (UTC)."
    return worded


def _body(form: dict[str, str]) -> dict[str, Any]:
    kind = form.get("kind", "project")
    return {"kind": kind, "target_id": (form.get("target_id") or None) if kind == "milestone" else None,
            "cron": form.get("cron", "").strip(), "recipients": _addresses(form.get("recipients", "")),
            "attachment": form.get("attachment") or "pdf"}


def _form_of(schedule: ReportSchedule) -> dict[str, str]:
    return {"kind": schedule.kind, "target_id": schedule.target_id or "", "cron": schedule.cron,
            "recipients": ", ".join(schedule.recipients), "attachment": schedule.attachment}


async def _project(db: Database, request: AnyRequest, project_id: str) -> Any:
    try:
        return await project_service.get_project(db, tenant_of(request), project_id)
    except NotFound:
        raise not_found("project") from None


async def _schedule(db: Database, request: AnyRequest, schedule_id: str) -> ReportSchedule:
    try:
        return await service.get_schedule(db, tenant_of(request), schedule_id)
    except NotFound:
        raise not_found("report schedule") from None


async def _page(db: Database, config: Config, request: AnyRequest, project: Any, *, status_code: int = 200,
                form: dict[str, str] | None = None, errors: dict[str, str] | None = None, editing: str | None = None,
                edit_form: dict[str, str] | None = None, edit_errors: dict[str, str] | None = None) -> Template:
    tenant_id = tenant_of(request)
    schedules = await service.list_schedules(db, tenant_id, project.id)
    milestones, _ = await milestone_service.list_milestones(db, tenant_id, project_id=project.id, limit=500)
    # each schedule's edit form shows it as stored, the one that failed as typed
    forms = {s.id: (edit_form if s.id == editing and edit_form else _form_of(s)) for s in schedules}
    return render(request, "reports/schedules.html", status_code=status_code, active_nav="projects",
                  project=project, schedules=schedules, milestones=milestones,
                  milestone_names={m.id: m.name for m in milestones}, max_recipients=MAX_RECIPIENTS,
                  form=form or {"kind": "project", "cron": "0 7 * * 1", "attachment": "pdf"}, errors=errors or {},
                  editing=editing, forms=forms, edit_errors=edit_errors or {},
                  smtp=bool(config.get("smtp.host")))


def _back(project_id: str) -> str:
    return f"/projects/{project_id}/report-schedules"


@get("/projects/{project_id:str}/report-schedules")
async def schedules_page(request: AnyRequest, db: DatabaseDep, config: ConfigDep, project_id: str) -> Template:
    return await _page(db, config, request, await _project(db, request, project_id))


@post("/projects/{project_id:str}/report-schedules", status_code=303)
async def create_schedule(request: AnyRequest, db: DatabaseDep, config: ConfigDep,
                          project_id: str) -> Template | Redirect:
    project = await _project(db, request, project_id)
    form, _ = await form_of(request)
    body, errors = convert(ReportScheduleCreate, {"project_id": project.id, **_body(form)})
    errors = _worded(errors)
    if body is not None:
        try:
            await service.create_schedule(db, tenant_of(request), body)
        except DomainError as exc:
            errors = {exc.field or "cron": exc.detail}
        else:
            return done(request, _back(project.id), "Report schedule added.")
    return await _page(db, config, request, project, status_code=400, form=form, errors=errors)


@post("/report-schedules/{schedule_id:str}/edit", status_code=303)
async def update_schedule(request: AnyRequest, db: DatabaseDep, config: ConfigDep,
                          schedule_id: str) -> Template | Redirect:
    schedule = await _schedule(db, request, schedule_id)
    form, _ = await form_of(request)
    body, errors = convert(ReportScheduleUpdate, _body(form))
    errors = _worded(errors)
    if body is not None:
        try:
            await service.update_schedule(db, tenant_of(request), schedule.id, body)
        except DomainError as exc:
            errors = {exc.field or "cron": exc.detail}
        else:
            return done(request, _back(schedule.project_id), "Report schedule saved.")
    project = await _project(db, request, schedule.project_id)
    return await _page(db, config, request, project, status_code=400, editing=schedule.id, edit_form=form,
                       edit_errors=errors)


@post("/report-schedules/{schedule_id:str}/delete", status_code=303)
async def delete_schedule(request: AnyRequest, db: DatabaseDep, schedule_id: str) -> Redirect:
    schedule = await _schedule(db, request, schedule_id)
    await service.delete_schedule(db, tenant_of(request), schedule.id)
    return done(request, _back(schedule.project_id), "Report schedule removed.")


@post("/report-schedules/{schedule_id:str}/send", status_code=303)
async def send_schedule(request: AnyRequest, db: DatabaseDep, config: ConfigDep, schedule_id: str) -> Redirect:
    schedule = await _schedule(db, request, schedule_id)
    result = await service.send_now(db, config, tenant_of(request), schedule.id)
    if result.sent:
        return done(request, _back(schedule.project_id), f"Report mailed to {result.recipients} "
                    f"recipient{'' if result.recipients == 1 else 's'}.")
    return done(request, _back(schedule.project_id), f"The report was not sent: {result.error}", "error")


def router() -> Router:
    return Router(path="/", route_handlers=[schedules_page, create_schedule, update_schedule, delete_schedule,
                                            send_schedule],
                  guards=[page_guard], include_in_schema=False, **needs_role("admin"))

