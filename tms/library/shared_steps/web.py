"""Shared steps' pages: a project's list (with the form to add one), one shared step's page (edit,
"used by", delete), and the confirm step of a save that makes new versions of the cases using it.

Testers write, viewers read (page_guard's default); every write goes through
tms.library.shared_steps.service, so the rules are the API's.
"""

from __future__ import annotations

from typing import Any

from litestar import Router, get, post
from litestar.response import Redirect, Template

from tms.db import Database
from tms.errors import DomainError, NotFound
from tms.http.pages import AnyRequest, convert, done, field_errors, form_of, not_found, render, tenant_of, user_of
from tms.library.projects import service as project_service
from tms.library.shared_steps import service as shared_service
from tms.library.shared_steps.models import SharedStep, SharedStepCreate, SharedStepUpdate
from tms.state import DatabaseDep
from tms.team.signin.session import page_guard


async def _project_or_404(db: Database, request: AnyRequest, project_id: str) -> Any:
    try:
        return await project_service.get_project(db, tenant_of(request), project_id)
    except NotFound as exc:
        raise not_found("project") from exc


async def _step_or_404(db: Database, request: AnyRequest, step_id: str) -> SharedStep:
    try:
        return await shared_service.get_step(db, tenant_of(request), step_id)
    except NotFound as exc:
        raise not_found("shared step") from exc


def _steps_text(form: dict[str, str]) -> str:
    # a browser sends CRLF line ends: stored as the API would take them
    return form.get("steps", "").replace("\r\n", "\n")


async def _list_page(db: Database, request: AnyRequest, project: Any, *, status_code: int = 200,
                     form: dict[str, str] | None = None, errors: dict[str, str] | None = None) -> Template:
    steps, _ = await shared_service.list_steps(db, tenant_of(request), project.id, limit=500)
    return render(request, "shared_steps/list.html", status_code=status_code, active_nav="cases", project=project,
                  steps=steps, form=form or {}, errors=errors or {}, can_write=user_of(request).has_role("tester"))


@get("/projects/{project_id:str}/shared-steps")
async def list_page(request: AnyRequest, db: DatabaseDep, project_id: str) -> Template:
    return await _list_page(db, request, await _project_or_404(db, request, project_id))


@post("/projects/{project_id:str}/shared-steps", status_code=303)
async def create_step(request: AnyRequest, db: DatabaseDep, project_id: str) -> Template | Redirect:
    project = await _project_or_404(db, request, project_id)
    form, _ = await form_of(request)
    body, errors = convert(SharedStepCreate, {"project_id": project.id, "name": form.get("name", "").strip(),
                                              "steps": _steps_text(form)})
    if body is not None:
        try:
            step = await shared_service.create_step(db, tenant_of(request), body)
        except DomainError as exc:
            errors = field_errors(exc, "steps")
        else:
            return done(request, f"/shared-steps/{step.id}", f"Shared step “{step.name}” added.")
    return await _list_page(db, request, project, status_code=400, form=form, errors=errors)


async def _step_page(db: Database, request: AnyRequest, step: SharedStep, *, status_code: int = 200,
                     form: dict[str, str] | None = None, errors: dict[str, str] | None = None,
                     confirm: bool = False) -> Template:
    project = await _project_or_404(db, request, step.project_id)
    return render(request, "shared_steps/edit.html", status_code=status_code, active_nav="cases", project=project,
                  step=step, form=form or {"name": step.name, "steps": step.steps}, errors=errors or {},
                  confirm=confirm, can_write=user_of(request).has_role("tester"))


@get("/shared-steps/{step_id:str}")
async def step_page(request: AnyRequest, db: DatabaseDep, step_id: str) -> Template:
    return await _step_page(db, request, await _step_or_404(db, request, step_id))


@post("/shared-steps/{step_id:str}", status_code=303)
async def save_step(request: AnyRequest, db: DatabaseDep, step_id: str) -> Template | Redirect:
    """Saves a change; when cases use the shared step, the first post shows them (each gets a new
    version) and asks to confirm, keeping the input; the confirmed post saves."""
    step = await _step_or_404(db, request, step_id)
    form, _ = await form_of(request)
    body, errors = convert(SharedStepUpdate, {"name": form.get("name", "").strip(), "steps": _steps_text(form)})
    if body is not None:
        changed = body.name != step.name or body.steps != step.steps
        if changed and step.used_by_total and form.get("confirmed") != "yes":
            return await _step_page(db, request, step, form=form, confirm=True)
        try:
            saved = await shared_service.update_step(db, tenant_of(request), step.id, body)
        except DomainError as exc:
            errors = field_errors(exc, "steps")
        else:
            versions = f" {saved.used_by_total} case(s) got a new version." if changed and saved.used_by_total else ""
            return done(request, f"/shared-steps/{saved.id}", f"Shared step “{saved.name}” saved.{versions}")
    return await _step_page(db, request, step, status_code=400, form=form, errors=errors)


@post("/shared-steps/{step_id:str}/delete", status_code=303)
async def delete_step(request: AnyRequest, db: DatabaseDep, step_id: str) -> Template | Redirect:
    step = await _step_or_404(db, request, step_id)
    try:
        await shared_service.delete_step(db, tenant_of(request), step.id)
    except DomainError as exc:
        return await _step_page(db, request, step, status_code=409, errors={"delete": exc.detail})
    return done(request, f"/projects/{step.project_id}/shared-steps", f"Shared step “{step.name}” deleted.")


def router() -> Router:
    return Router(path="/", route_handlers=[list_page, create_step, step_page, save_step, delete_step],
                  guards=[page_guard], include_in_schema=False)
