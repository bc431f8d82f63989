from __future__ import annotations

from litestar import get, patch, post
from litestar.params import JSONBody

from tms.http.api_auth import ApiRequest, requires
from tms.library.projects import service as project_service
from tms.library.projects.models import ProjectCreate, ProjectEnvelope, ProjectList, ProjectUpdate
from tms.state import DatabaseDep


@get("/projects", **requires("read"), summary="List the tenant's projects")
async def list_projects(request: ApiRequest, db: DatabaseDep) -> ProjectList:
    return ProjectList(data=await project_service.list_projects(db, request.user.tenant_id))


@post("/projects", **requires("write"), summary="Create a project (inactive)")
async def create_project(request: ApiRequest, db: DatabaseDep, data: JSONBody[ProjectCreate]) -> ProjectEnvelope:
    project = await project_service.create_project(db, request.user.tenant_id, data)
    return ProjectEnvelope(data=project)


@get("/projects/{project_id:str}", **requires("read"), summary="Get a project")
async def get_project(request: ApiRequest, db: DatabaseDep, project_id: str) -> ProjectEnvelope:
    project = await project_service.get_project(db, request.user.tenant_id, project_id)
    return ProjectEnvelope(data=project)


@patch("/projects/{project_id:str}", **requires("write"),
       summary="Rename, describe, set environments, archive or unarchive a project")
async def update_project(
    request: ApiRequest, db: DatabaseDep, project_id: str, data: JSONBody[ProjectUpdate]
) -> ProjectEnvelope:
    project = await project_service.update_project(db, request.user.tenant_id, project_id, data)
    return ProjectEnvelope(data=project)
