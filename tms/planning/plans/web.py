"""Test plans: the list with progress, the create form (cases by code, tag and section; environments;
milestone), and one plan with a progress bar per run."""

from __future__ import annotations

import re
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
from tms.planning.milestones.web import progress
from tms.planning.plans import service as plan_service
from tms.planning.plans.models import PlanCreate, PlanUpdate
from tms.runs import service as run_service
from tms.runs.web import bar_segments
from tms.state import DatabaseDep
from tms.team.signin.session import page_guard

PAGE_SIZE = 50
_SPLIT = re.compile(r"[\s,;]+")


def _words(text: str) -> list[str]:
    return [word for word in _SPLIT.split(text) if word]


def _tree(rows: list[Any]) -> list[tuple[int, Any]]:
    """(depth, section) in tree order, parents before children."""
    children: dict[str | None, list[Any]] = {}
    for row in rows:
        children.setdefault(row["parent_id"], []).append(row)
    out: list[tuple[int, Any]] = []

    def walk(parent: str | None, depth: int) -> None:
        for row in children.get(parent, []):
            out.append((depth, row))
            walk(row["id"], depth + 1)

    walk(None, 0)
    return out


@get("/plans")
async def plans_page(request: AnyRequest, db: DatabaseDep, project_id: str | None = None, offset: int = 0) -> Template:
    tenant = tenant_of(request)
    offset = max(0, offset)
    plans, pagination = await plan_service.list_plans(db, tenant, project_id=project_id or None, limit=PAGE_SIZE,
                                                      offset=offset)
    all_projects = await project_service.list_projects(db, tenant)
    query = {"project_id": project_id or ""}
    return render(
        request, "plans/list.html", active_nav="plans", plans=plans,
        projects=[p for p in all_projects if not p.archived], project_names={p.id: p.name for p in all_projects},
        query=query, progress={plan.id: progress(plan.counts) for plan in plans},
        pager=page_numbers(pagination.total, PAGE_SIZE, offset),
        pager_query=urlencode({k: v for k, v in query.items() if v}), filtered=any(query.values()),
    )


async def _new_page(db: Database, request: AnyRequest, project_id: str | None, form: dict[str, str],
                    chosen: dict[str, list[str]], errors: dict[str, str], status_code: int = 200,
                    preview: dict[str, int] | None = None) -> Template:
    tenant = tenant_of(request)
    projects = await project_service.list_open_projects(db, tenant)
    if not project_id:
        active = next((p for p in projects if p.active), None)
        project_id = active.id if active else (projects[0].id if len(projects) == 1 else None)
    project = next((p for p in projects if p.id == project_id), None)
    context: dict[str, Any] = {"projects": projects, "project": project, "form": form, "chosen": chosen,
                               "errors": errors, "milestones": [], "tags": [], "sections": None,
                               "preview": preview}
    if project is not None:
        milestones, _ = await milestone_service.list_milestones(db, tenant, project_id=project.id, status="OPEN",
                                                                limit=500)
        context["milestones"] = milestones
        context["tags"] = await plan_service.project_tags(db, tenant, project.id)
        context["sections"] = _tree(await plan_service.project_sections(db, tenant, project.id))
    return render(request, "plans/new.html", status_code=status_code, active_nav="plans", **context)


@get("/plans/new")
async def new_plan_page(request: AnyRequest, db: DatabaseDep, project_id: str | None = None,
                        milestone_id: str | None = None) -> Template:
    return await _new_page(db, request, project_id, {"milestone_id": milestone_id or ""}, {}, {})


@post("/plans/new", status_code=303)
async def create_plan(request: AnyRequest, db: DatabaseDep) -> Template | Redirect:
    form, multi = await form_of(request)
    project_id = form.get("project_id", "")
    environments = multi.get("environments", []) + [e.strip() for e in form.get("other_environments", "").split(",")]
    previewing = bool(form.get("preview"))
    body, errors = convert(PlanCreate, {
        "project_id": project_id,
        # a preview needs no name yet: it counts the cases the choices pick (issue 24)
        "name": form.get("name", "").strip() or ("preview" if previewing else ""),
        "description": form.get("description", "").strip() or None,
        "milestone_id": form.get("milestone_id") or None,
        "case_ids": _words(form.get("case_codes", "")),
        "tags": [t.strip() for t in form.get("tags", "").split(",") if t.strip()],
        "section_ids": multi.get("section_ids", []),
        "environments": [e for e in environments if e],
    })
    chosen = {"environments": multi.get("environments", []), "section_ids": multi.get("section_ids", [])}
    if body is not None and previewing:
        try:
            cases = await plan_service.preview_cases(db, tenant_of(request), body)
        except DomainError as exc:
            errors = field_errors(exc, "case_ids")
        else:
            runs = max(1, len(set(body.environments)))
            return await _new_page(db, request, project_id or None, form, chosen, {},
                                   preview={"cases": cases, "runs": runs, "results": cases * runs})
    if body is not None and not previewing:
        try:
            plan = await plan_service.create_plan(db, tenant_of(request), body)
        except DomainError as exc:
            errors = field_errors(exc, "name")
        else:
            runs, cases = len(plan.run_ids), plan.case_count
            return done(request, f"/plans/{plan.id}", f"Plan “{plan.name}” started: {runs} "
                                                      f"{'run' if runs == 1 else 'runs'} of {cases} "
                                                      f"{'case' if cases == 1 else 'cases'}.")
    if "case_ids" in errors:  # the API's message names its field; the form's field is the codes box
        message = errors.pop("case_ids").removeprefix("case_ids: ")
        errors["case_codes"] = message[:1].upper() + message[1:]
    return await _new_page(db, request, project_id or None, form, chosen, errors, status_code=400)


async def _plan_or_404(db: Database, request: AnyRequest, plan_id: str) -> Any:
    try:
        return await plan_service.get_plan(db, tenant_of(request), plan_id)
    except NotFound as exc:
        raise not_found("plan") from exc


async def _plan_page(db: Database, request: AnyRequest, plan: Any, form: dict[str, str] | None = None,
                     errors: dict[str, str] | None = None, status_code: int = 200) -> Template:
    tenant = tenant_of(request)
    runs, _ = await run_service.list_runs(db, tenant, plan_id=plan.id, limit=500)
    milestones, _ = await milestone_service.list_milestones(db, tenant, project_id=plan.project_id, limit=500)
    milestone = next((m for m in milestones if m.id == plan.milestone_id), None)
    try:
        project = await project_service.get_project(db, tenant, plan.project_id)
    except NotFound:
        project = None
    return render(
        request, "plans/detail.html", status_code=status_code, active_nav="plans", plan=plan, project=project,
        runs=runs, run_progress={run.id: progress(run.counts) for run in runs}, progress=progress(plan.counts),
        bars={run.id: bar_segments(run.counts) for run in runs}, milestones=milestones, milestone=milestone,
        form=form or {"name": plan.name, "description": plan.description or "",
                      "milestone_id": plan.milestone_id or ""},
        errors=errors or {},
    )


@get("/plans/{plan_id:str}")
async def plan_page(request: AnyRequest, db: DatabaseDep, plan_id: str) -> Template:
    return await _plan_page(db, request, await _plan_or_404(db, request, plan_id))


@post("/plans/{plan_id:str}/edit", status_code=303)
async def edit_plan(request: AnyRequest, db: DatabaseDep, plan_id: str) -> Template | Redirect:
    plan = await _plan_or_404(db, request, plan_id)
    form, _ = await form_of(request)
    body, errors = convert(PlanUpdate, {
        "name": form.get("name", "").strip(),
        "description": form.get("description", "").strip() or None,
        "milestone_id": form.get("milestone_id") or None,
    })
    if body is not None:
        try:
            await plan_service.update_plan(db, tenant_of(request), plan.id, body)
        except DomainError as exc:
            errors = field_errors(exc, "name")
        else:
            return done(request, f"/plans/{plan.id}", "Plan saved.")
    return await _plan_page(db, request, plan, form, errors, status_code=400)


@post("/plans/{plan_id:str}/delete", status_code=303)
async def delete_plan(request: AnyRequest, db: DatabaseDep, plan_id: str) -> Redirect:
    plan = await _plan_or_404(db, request, plan_id)
    await plan_service.delete_plan(db, tenant_of(request), plan.id)
    return done(request, f"/plans?project_id={plan.project_id}",
                f"Plan “{plan.name}” deleted; its {len(plan.run_ids)} runs and their results are kept.")


def router() -> Router:
    return Router(path="/", route_handlers=[plans_page, new_plan_page, create_plan, plan_page, edit_plan, delete_plan],
                  guards=[page_guard], include_in_schema=False)
