"""Projects: list, create, and mark active (web only: the spec keeps activation out of the API)."""

from __future__ import annotations

from litestar import Router, get, post
from litestar.response import Redirect, Template

from tms.models.projects import ProjectCreate
from tms.services import projects as project_service
from tms.services.errors import DomainError, NotFound
from tms.web.common import AnyRequest, convert, db_of, done, field_errors, form_of, not_found, render, tenant_of
from tms.web.session import page_guard


async def _page(request: AnyRequest, form: dict[str, str] | None = None, errors: dict[str, str] | None = None,
                status_code: int = 200) -> Template:
    projects = await project_service.list_projects(db_of(request), tenant_of(request))
    return render(request, "projects/list.html", status_code=status_code, active_nav="projects",
                  projects=projects, form=form or {}, errors=errors or {},
                  base_url=str(request.app.state.config.base_url))


@get("/")
async def projects_page(request: AnyRequest) -> Template:
    return await _page(request)


@post("/", status_code=303)
async def create_project(request: AnyRequest) -> Template | Redirect:
    form, _ = await form_of(request)
    environments = [e.strip() for e in form.get("environments", "").split(",") if e.strip()]
    body, errors = convert(ProjectCreate, {
        "name": form.get("name", "").strip(),
        "description": form.get("description", "").strip() or None,
        "environments": environments,
    })
    if body is not None:
        try:
            project = await project_service.create_project(db_of(request), tenant_of(request), body)
        except DomainError as exc:
            errors = field_errors(exc, "name")
        else:
            return done(request, "/projects", f"Project “{project.name}” created.")
    return await _page(request, form, errors, status_code=400)


@post("/{project_id:str}/activate", status_code=303)
async def activate_project(request: AnyRequest, project_id: str) -> Redirect:
    try:
        await project_service.mark_active(db_of(request), tenant_of(request), project_id)
        project = await project_service.get_project(db_of(request), tenant_of(request), project_id)
    except NotFound as exc:
        raise not_found("project") from exc
    return done(request, "/projects", f"“{project.name}” is now the active project.")


def router() -> Router:
    return Router(path="/projects", route_handlers=[projects_page, create_project, activate_project],
                  guards=[page_guard], include_in_schema=False)
