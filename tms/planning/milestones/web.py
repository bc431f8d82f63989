"""Milestones: the list with due dates and progress, one milestone with its runs, create/edit/complete/delete."""

from __future__ import annotations

import datetime
from typing import Any
from urllib.parse import urlencode

from litestar import Router, get, post
from litestar.response import Redirect, Template

from tms.db import Database
from tms.errors import DomainError, NotFound
from tms.http.pages import (
    AnyRequest,
    convert,
    done,
    field_errors,
    form_of,
    not_found,
    page_numbers,
    render,
    tenant_of,
)
from tms.library.projects import service as project_service
from tms.planning.milestones import service as milestone_service
from tms.planning.milestones.models import MILESTONE_STATUSES, MilestoneCreate, MilestoneUpdate
from tms.planning.plans import service as plan_service
from tms.runs import service as run_service
from tms.runs.web import bar_segments
from tms.state import DatabaseDep
from tms.team.signin.session import page_guard

PAGE_SIZE = 50


def progress(counts: Any) -> dict[str, Any]:
    """What a progress bar says in words: executed of total, and the pass rate of what was executed."""
    executed = counts.total - counts.unknown
    return {
        "segments": bar_segments(counts),
        "executed": executed,
        "executed_pct": round(100 * executed / counts.total) if counts.total else 0,
        "pass_rate": round(100 * counts.passed / executed) if executed else None,
    }


def _due(milestone: Any, today: str) -> str:
    """overdue | today | upcoming | none: how the due date reads on the list."""
    if not milestone.due_on:
        return "none"
    if milestone.status == "OPEN" and milestone.due_on < today:
        return "overdue"
    return "today" if milestone.due_on == today else "upcoming"


def _form_body(form: dict[str, str]) -> dict[str, Any]:
    return {
        "name": form.get("name", "").strip(),
        "description": form.get("description", "").strip() or None,
        "due_on": form.get("due_on", "").strip() or None,
    }


def _date_message(errors: dict[str, str]) -> dict[str, str]:
    if "due_on" in errors:
        errors["due_on"] = "A date as YYYY-MM-DD, e.g. 2026-12-31."
    return errors


async def _list_page(db: Database, request: AnyRequest, *, project_id: str | None, status: str | None, offset: int,
                     form: dict[str, str] | None = None, errors: dict[str, str] | None = None,
                     status_code: int = 200) -> Template:
    tenant = tenant_of(request)
    milestones, pagination = await milestone_service.list_milestones(
        db, tenant, project_id=project_id, status=status, limit=PAGE_SIZE, offset=offset)
    all_projects = await project_service.list_projects(db, tenant)
    projects = [p for p in all_projects if not p.archived]
    active = next((p for p in projects if p.active), None)
    today = datetime.date.today().isoformat()
    query = {"project_id": project_id or "", "status": status or ""}
    default_project = project_id or (active.id if active else projects[0].id if len(projects) == 1 else "")
    return render(
        request, "milestones/list.html", status_code=status_code, active_nav="milestones", milestones=milestones,
        projects=projects, project_names={p.id: p.name for p in all_projects}, statuses=MILESTONE_STATUSES,
        query=query, progress={m.id: progress(m.counts) for m in milestones},
        due={m.id: _due(m, today) for m in milestones},
        pager=page_numbers(pagination.total, PAGE_SIZE, offset),
        pager_query=urlencode({k: v for k, v in query.items() if v}), filtered=any(query.values()),
        form=form or {"project_id": default_project}, errors=errors or {},
    )


@get("/milestones")
async def milestones_page(request: AnyRequest, db: DatabaseDep, project_id: str | None = None,
                          status: str | None = None, offset: int = 0) -> Template:
    status = status if status in MILESTONE_STATUSES else None
    return await _list_page(db, request, project_id=project_id or None, status=status, offset=max(0, offset))


@post("/milestones", status_code=303)
async def create_milestone(request: AnyRequest, db: DatabaseDep) -> Template | Redirect:
    form, _ = await form_of(request)
    body, errors = convert(MilestoneCreate, {"project_id": form.get("project_id", ""), **_form_body(form)})
    if body is not None:
        if not body.project_id:
            errors = {"project_id": "Choose a project."}
        else:
            try:
                milestone = await milestone_service.create_milestone(db, tenant_of(request), body)
            except DomainError as exc:
                errors = field_errors(exc, "name")
            else:
                return done(request, f"/milestones/{milestone.id}", f"Milestone “{milestone.name}” created.")
    return await _list_page(db, request, project_id=None, status=None, offset=0, form=form,
                            errors=_date_message(errors), status_code=400)


async def _milestone_or_404(db: Database, request: AnyRequest, milestone_id: str) -> Any:
    try:
        return await milestone_service.get_milestone(db, tenant_of(request), milestone_id)
    except NotFound as exc:
        raise not_found("milestone") from exc


async def _detail_page(db: Database, request: AnyRequest, milestone: Any, *, offset: int = 0,
                       form: dict[str, str] | None = None, errors: dict[str, str] | None = None,
                       status_code: int = 200) -> Template:
    tenant = tenant_of(request)
    runs, pagination = await run_service.list_runs(db, tenant, milestone_id=milestone.id, limit=PAGE_SIZE,
                                                   offset=offset)
    plans, _ = await plan_service.list_plans(db, tenant, milestone_id=milestone.id, limit=100)
    try:
        project = await project_service.get_project(db, tenant, milestone.project_id)
    except NotFound:
        project = None
    today = datetime.date.today().isoformat()
    return render(
        request, "milestones/detail.html", status_code=status_code, active_nav="milestones", milestone=milestone,
        project=project, runs=runs, plans=plans, plan_progress={plan.id: progress(plan.counts) for plan in plans},
        bars={run.id: bar_segments(run.counts) for run in runs},
        progress=progress(milestone.counts), due=_due(milestone, today),
        pager=page_numbers(pagination.total, PAGE_SIZE, offset), pager_query="",
        form=form or {"name": milestone.name, "description": milestone.description or "",
                      "due_on": milestone.due_on or ""},
        errors=errors or {},
    )


@get("/milestones/{milestone_id:str}")
async def milestone_page(request: AnyRequest, db: DatabaseDep, milestone_id: str, offset: int = 0) -> Template:
    return await _detail_page(db, request, await _milestone_or_404(db, request, milestone_id), offset=max(0, offset))


@post("/milestones/{milestone_id:str}/edit", status_code=303)
async def edit_milestone(request: AnyRequest, db: DatabaseDep, milestone_id: str) -> Template | Redirect:
    milestone = await _milestone_or_404(db, request, milestone_id)
    form, _ = await form_of(request)
    body, errors = convert(MilestoneUpdate, _form_body(form))
    if body is not None:
        try:
            await milestone_service.update_milestone(db, tenant_of(request), milestone.id, body)
        except DomainError as exc:
            errors = field_errors(exc, "name")
        else:
            return done(request, f"/milestones/{milestone.id}", "Milestone saved.")
    return await _detail_page(db, request, milestone, form=form, errors=_date_message(errors), status_code=400)


@post("/milestones/{milestone_id:str}/status", status_code=303)
async def set_status(request: AnyRequest, db: DatabaseDep, milestone_id: str) -> Redirect:
    milestone = await _milestone_or_404(db, request, milestone_id)
    form, _ = await form_of(request)
    status = form.get("status", "")
    if status not in MILESTONE_STATUSES:
        return done(request, f"/milestones/{milestone.id}", "Unknown status.", "error")
    await milestone_service.update_milestone(db, tenant_of(request), milestone.id,
                                             MilestoneUpdate(status=status))  # type: ignore[arg-type]
    word = "completed" if status == "COMPLETED" else "reopened"
    return done(request, f"/milestones/{milestone.id}", f"Milestone “{milestone.name}” {word}.")


@post("/milestones/{milestone_id:str}/delete", status_code=303)
async def delete_milestone(request: AnyRequest, db: DatabaseDep, milestone_id: str) -> Redirect:
    milestone = await _milestone_or_404(db, request, milestone_id)
    await milestone_service.delete_milestone(db, tenant_of(request), milestone.id)
    return done(request, f"/milestones?project_id={milestone.project_id}",
                f"Milestone “{milestone.name}” deleted; its {milestone.runs_count} runs are kept.")


def router() -> Router:
    return Router(path="/", route_handlers=[milestones_page, create_milestone, milestone_page, edit_milestone,
                                            set_status, delete_milestone],
                  guards=[page_guard], include_in_schema=False)
