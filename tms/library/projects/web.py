"""Projects: list, create, mark active (web only: the spec keeps activation out of the API), edit,
archive or unarchive, and delete (web only, after typing the project's name)."""

from __future__ import annotations

from typing import Any

from litestar import Router, get, post
from litestar.response import Redirect, Template

from tms.config import Config
from tms.db import Database
from tms.errors import DomainError, NotFound
from tms.http.pages import AnyRequest, convert, done, field_errors, form_of, not_found, render, tenant_of
from tms.library.fields import service as field_service
from tms.library.fields.models import FIELD_TYPES
from tms.library.projects import deletion
from tms.library.projects import service as project_service
from tms.library.projects.models import ProjectCreate, ProjectUpdate
from tms.state import ConfigDep, DatabaseDep, app_state
from tms.team.signin.session import needs_role, page_guard


async def _page(db: Database, config: Config, request: AnyRequest, form: dict[str, str] | None = None,
                errors: dict[str, str] | None = None, status_code: int = 200, show_archived: bool = False) -> Template:
    projects = await project_service.list_projects(db, tenant_of(request))
    archived_count = sum(1 for p in projects if p.archived)
    if not show_archived:
        projects = [p for p in projects if not p.archived]
    return render(request, "projects/list.html", status_code=status_code, active_nav="projects",
                  projects=projects, form=form or {}, errors=errors or {}, show_archived=show_archived,
                  archived_count=archived_count, base_url=str(config.base_url))


@get("/")
async def projects_page(request: AnyRequest, db: DatabaseDep, config: ConfigDep,
                        archived: bool = False) -> Template:
    """Archived projects are hidden unless ?archived=true asks for them."""
    return await _page(db, config, request, show_archived=archived)


@post("/", status_code=303)
async def create_project(request: AnyRequest, db: DatabaseDep, config: ConfigDep) -> Template | Redirect:
    form, _ = await form_of(request)
    environments = [e.strip() for e in form.get("environments", "").split(",") if e.strip()]
    body, errors = convert(ProjectCreate, {
        "name": form.get("name", "").strip(),
        "description": form.get("description", "").strip() or None,
        "environments": environments,
    })
    if body is not None:
        try:
            tenant = tenant_of(request)
            project = await project_service.create_project(db, tenant, body)
        except DomainError as exc:
            errors = field_errors(exc, "name")
        else:
            # the first project made here is the dashboard's context at once (issue 24); marking a
            # project active is the web interface's alone (SPEC: the API creates projects inactive)
            if await project_service.get_active_project(db, tenant, only_if_marked=True) is None:
                await project_service.mark_active(db, tenant, project.id)
                return done(request, "/projects", f"Project “{project.name}” created; it is the active project.")
            return done(request, "/projects", f"Project “{project.name}” created.")
    return await _page(db, config, request, form, errors, status_code=400)


@post("/{project_id:str}/activate", status_code=303)
async def activate_project(request: AnyRequest, db: DatabaseDep, project_id: str) -> Redirect:
    try:
        await project_service.mark_active(db, tenant_of(request), project_id)
        project = await project_service.get_project(db, tenant_of(request), project_id)
    except NotFound as exc:
        raise not_found("project") from exc
    return done(request, "/projects", f"“{project.name}” is now the active project.")


async def _project_or_404(db: Database, request: AnyRequest, project_id: str) -> Any:
    try:
        return await project_service.get_project(db, tenant_of(request), project_id)
    except NotFound as exc:
        raise not_found("project") from exc


def _edit_form(project: Any) -> dict[str, str]:
    return {"name": project.name, "description": project.description or "",
            "environments": ", ".join(project.environments)}


async def _edit_page(db: Database, request: AnyRequest, project: Any, form: dict[str, str] | None = None,
                     errors: dict[str, str] | None = None, status_code: int = 200) -> Template:
    return await settings_page(db, request, project, form=form, errors=errors, status_code=status_code)


async def settings_page(db: Database, request: AnyRequest, project: Any, *, form: dict[str, str] | None = None,
                        errors: dict[str, str] | None = None, status_code: int = 200,
                        field_form: dict[str, Any] | None = None, field_errors: dict[str, str] | None = None,
                        ) -> Template:
    """The project's settings: details, custom fields (tms.library.fields.web posts them), archive, delete."""
    fields = await field_service.list_fields(db, tenant_of(request), project.id)
    return render(request, "projects/edit.html", status_code=status_code, active_nav="projects", project=project,
                  form=form or _edit_form(project), errors=errors or {}, fields=fields, field_types=FIELD_TYPES,
                  field_form=field_form or {"type": "text"}, field_errors=field_errors or {})


@get("/{project_id:str}/edit")
async def edit_page(request: AnyRequest, db: DatabaseDep, project_id: str) -> Template:
    return await _edit_page(db, request, await _project_or_404(db, request, project_id))


@post("/{project_id:str}/edit", status_code=303)
async def edit_project(request: AnyRequest, db: DatabaseDep, project_id: str) -> Template | Redirect:
    project = await _project_or_404(db, request, project_id)
    form, _ = await form_of(request)
    body, errors = convert(ProjectUpdate, {
        "name": form.get("name", "").strip(),
        "description": form.get("description", "").strip() or None,
        "environments": [e.strip() for e in form.get("environments", "").split(",") if e.strip()],
    })
    if body is not None:
        try:
            updated = await project_service.update_project(db, tenant_of(request), project.id, body)
        except DomainError as exc:
            errors = field_errors(exc, "name")
        else:
            return done(request, f"/projects/{updated.id}/edit", f"Project “{updated.name}” saved.")
    return await _edit_page(db, request, project, form, errors, status_code=400)


async def _set_archived(db: Database, request: AnyRequest, project_id: str, archived: bool) -> Redirect:
    project = await _project_or_404(db, request, project_id)
    updated = await project_service.update_project(db, tenant_of(request), project.id,
                                                   ProjectUpdate(archived=archived))
    if archived:
        return done(request, "/projects", f"“{updated.name}” is archived: hidden from the lists, and it takes no "
                                          "new runs or ingests until it is unarchived.")
    return done(request, f"/projects/{updated.id}/edit", f"“{updated.name}” is no longer archived.")


@post("/{project_id:str}/archive", status_code=303)
async def archive_project(request: AnyRequest, db: DatabaseDep, project_id: str) -> Redirect:
    return await _set_archived(db, request, project_id, True)


@post("/{project_id:str}/unarchive", status_code=303)
async def unarchive_project(request: AnyRequest, db: DatabaseDep, project_id: str) -> Redirect:
    return await _set_archived(db, request, project_id, False)


@post("/{project_id:str}/review", status_code=303, **needs_role("admin"))
async def set_require_review(request: AnyRequest, db: DatabaseDep, project_id: str) -> Redirect:
    """Admins only: whether cases of the project reach READY only by a review's approval (issue 26)."""
    project = await _project_or_404(db, request, project_id)
    form, _ = await form_of(request)
    wanted = form.get("require_review") == "true"
    await project_service.update_project(db, tenant_of(request), project.id,
                                         ProjectUpdate(require_review=wanted))
    state = "now requires review before a case is READY" if wanted else "no longer requires review"
    return done(request, f"/projects/{project.id}/edit#review", f"“{project.name}” {state}.")


@post("/{project_id:str}/delete", status_code=303, **needs_role("admin"))
async def delete_project(request: AnyRequest, db: DatabaseDep, project_id: str) -> Template | Redirect:
    """Deletes only when the typed name matches exactly: the whole library and every result go."""
    project = await _project_or_404(db, request, project_id)
    form, _ = await form_of(request)
    if form.get("confirm_name", "") != project.name:
        errors = {"confirm_name": f"Type the project's name, “{project.name}”, exactly to delete it."}
        return await _edit_page(db, request, project, {**_edit_form(project), **form}, errors, status_code=400)
    counts = await deletion.delete_project(db, tenant_of(request), project.id, app_state(request).attachment_store)
    return done(request, "/projects", f"Project “{project.name}” deleted with {counts['cases']} cases, "
                                      f"{counts['runs']} runs and {counts['attachments']} attachments.")


def router() -> Router:
    return Router(path="/projects", route_handlers=[projects_page, create_project, activate_project, edit_page,
                                                    edit_project, archive_project, unarchive_project,
                                                    set_require_review, delete_project],
                  guards=[page_guard], include_in_schema=False)
