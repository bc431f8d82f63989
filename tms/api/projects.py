from __future__ import annotations

from litestar import Request, get, post
from litestar.params import JSONBody

from tms.api.auth import requires
from tms.models.projects import ProjectCreate, ProjectEnvelope, ProjectList
from tms.services import projects as project_service
from tms.services.tokens import ApiPrincipal


@get("/projects", **requires("read"), summary="List the tenant's projects")
async def list_projects(request: Request[ApiPrincipal, str, object]) -> ProjectList:
    return ProjectList(data=await project_service.list_projects(request.app.state.db, request.user.tenant_id))


@post("/projects", **requires("write"), summary="Create a project (inactive)")
async def create_project(request: Request[ApiPrincipal, str, object], data: JSONBody[ProjectCreate]) -> ProjectEnvelope:
    project = await project_service.create_project(request.app.state.db, request.user.tenant_id, data)
    return ProjectEnvelope(data=project)
