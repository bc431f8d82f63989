from __future__ import annotations

from litestar import Request, get, patch, post
from litestar.params import JSONBody

from tms.api.auth import requires
from tms.models.projects import ProjectCreate, ProjectEnvelope, ProjectList, ProjectUpdate
from tms.services import projects as project_service
from tms.services.tokens import ApiPrincipal


@get("/projects", **requires("read"), summary="List the tenant's projects")
async def list_projects(request: Request[ApiPrincipal, str, object]) -> ProjectList:
    return ProjectList(data=await project_service.list_projects(request.app.state.db, request.user.tenant_id))


@post("/projects", **requires("write"), summary="Create a project (inactive)")
async def create_project(request: Request[ApiPrincipal, str, object], data: JSONBody[ProjectCreate]) -> ProjectEnvelope:
    project = await project_service.create_project(request.app.state.db, request.user.tenant_id, data)
    return ProjectEnvelope(data=project)


@get("/projects/{project_id:str}", **requires("read"), summary="Get a project")
async def get_project(request: Request[ApiPrincipal, str, object], project_id: str) -> ProjectEnvelope:
    project = await project_service.get_project(request.app.state.db, request.user.tenant_id, project_id)
    return ProjectEnvelope(data=project)


@patch("/projects/{project_id:str}", **requires("write"),
       summary="Rename, describe, set environments, archive or unarchive a project")
async def update_project(
    request: Request[ApiPrincipal, str, object], project_id: str, data: JSONBody[ProjectUpdate]
) -> ProjectEnvelope:
    project = await project_service.update_project(request.app.state.db, request.user.tenant_id, project_id, data)
    return ProjectEnvelope(data=project)
