"""/api/v1/shared-steps: a project's named lists of Gherkin steps (`* shared: <name>` in a case)."""

from __future__ import annotations

from litestar import delete, get, patch, post
from litestar.params import JSONBody

from tms.http.api_auth import ApiRequest, requires
from tms.library.shared_steps import service as shared_service
from tms.library.shared_steps.models import SharedStepCreate, SharedStepEnvelope, SharedStepList, SharedStepUpdate
from tms.state import db_of


@get("/shared-steps", **requires("read"), summary="A project's shared steps by name (paginated)")
async def list_steps(request: ApiRequest, project_id: str, limit: int | None = None,
                     offset: int | None = None) -> SharedStepList:
    steps, pagination = await shared_service.list_steps(db_of(request), request.user.tenant_id, project_id,
                                                        limit, offset)
    return SharedStepList(data=steps, pagination=pagination)


@post("/shared-steps", **requires("write"),
      summary="Define a shared step {project_id, name, steps}: cases use it with the step line `* shared: <name>`")
async def create_step(request: ApiRequest, data: JSONBody[SharedStepCreate]) -> SharedStepEnvelope:
    return SharedStepEnvelope(data=await shared_service.create_step(db_of(request), request.user.tenant_id, data))


@get("/shared-steps/{step_id:str}", **requires("read"), summary="One shared step, with the cases using it (used_by)")
async def get_step(request: ApiRequest, step_id: str) -> SharedStepEnvelope:
    return SharedStepEnvelope(data=await shared_service.get_step(db_of(request), request.user.tenant_id, step_id))


@patch("/shared-steps/{step_id:str}", **requires("write"),
       summary="Rename or change the steps: a new version of every case using it (listed in used_by)")
async def update_step(request: ApiRequest, step_id: str, data: JSONBody[SharedStepUpdate]) -> SharedStepEnvelope:
    step = await shared_service.update_step(db_of(request), request.user.tenant_id, step_id, data)
    return SharedStepEnvelope(data=step)


@delete("/shared-steps/{step_id:str}", **requires("write"),
        summary="Delete an unused shared step (one that cases or shared steps use is a 409 naming them)")
async def delete_step(request: ApiRequest, step_id: str) -> None:
    await shared_service.delete_step(db_of(request), request.user.tenant_id, step_id)
