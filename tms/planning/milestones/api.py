"""/api/v1/milestones: a project's dated goals with the totals of their runs."""

from __future__ import annotations

from litestar import delete, get, patch, post
from litestar.params import JSONBody

from tms.http.api_auth import ApiRequest, requires
from tms.planning.milestones import service as milestone_service
from tms.planning.milestones.models import MilestoneCreate, MilestoneEnvelope, MilestoneList, MilestoneUpdate
from tms.state import DatabaseDep


@get("/milestones", **requires("read"), summary="List milestones (filters project_id, status; limit/offset)")
async def list_milestones(
    request: ApiRequest, db: DatabaseDep,
    project_id: str | None = None,
    status: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> MilestoneList:
    milestones, pagination = await milestone_service.list_milestones(
        db, request.user.tenant_id,
        project_id=project_id, status=status, limit=limit, offset=offset,
    )
    return MilestoneList(data=milestones, pagination=pagination)


@post("/milestones", **requires("write"), summary="Create a milestone (OPEN)")
async def create_milestone(
    request: ApiRequest, db: DatabaseDep, data: JSONBody[MilestoneCreate]
) -> MilestoneEnvelope:
    milestone = await milestone_service.create_milestone(db, request.user.tenant_id, data)
    return MilestoneEnvelope(data=milestone)


@get("/milestones/{milestone_id:str}", **requires("read"), summary="Get a milestone with its runs' totals")
async def get_milestone(request: ApiRequest, db: DatabaseDep, milestone_id: str) -> MilestoneEnvelope:
    milestone = await milestone_service.get_milestone(db, request.user.tenant_id, milestone_id)
    return MilestoneEnvelope(data=milestone)


@patch("/milestones/{milestone_id:str}", **requires("write"),
       summary="Change a milestone's name, description, due date or status")
async def update_milestone(
    request: ApiRequest, db: DatabaseDep, milestone_id: str, data: JSONBody[MilestoneUpdate]
) -> MilestoneEnvelope:
    milestone = await milestone_service.update_milestone(
        db, request.user.tenant_id, milestone_id, data
    )
    return MilestoneEnvelope(data=milestone)


@delete("/milestones/{milestone_id:str}", **requires("write"), summary="Delete a milestone (its runs stay)")
async def delete_milestone(request: ApiRequest, db: DatabaseDep, milestone_id: str) -> None:
    await milestone_service.delete_milestone(db, request.user.tenant_id, milestone_id)
