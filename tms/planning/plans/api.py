"""/api/v1/plans: test plans, each started as one run per environment."""

from __future__ import annotations

from litestar import delete, get, patch, post
from litestar.params import JSONBody

from tms.http.api_auth import ApiRequest, requires
from tms.planning.plans import service as plan_service
from tms.planning.plans.models import PlanCreate, PlanEnvelope, PlanList, PlanUpdate
from tms.state import DatabaseDep


@get("/plans", **requires("read"), summary="List test plans (filters project_id, milestone_id; limit/offset)")
async def list_plans(
    request: ApiRequest, db: DatabaseDep,
    project_id: str | None = None,
    milestone_id: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> PlanList:
    plans, pagination = await plan_service.list_plans(
        db, request.user.tenant_id,
        project_id=project_id, milestone_id=milestone_id, limit=limit, offset=offset,
    )
    return PlanList(data=plans, pagination=pagination)


@post("/plans", **requires("write"),
      summary="Create a test plan: one PENDING run per environment with every selected case as UNKNOWN")
async def create_plan(request: ApiRequest, db: DatabaseDep, data: JSONBody[PlanCreate]) -> PlanEnvelope:
    return PlanEnvelope(data=await plan_service.create_plan(db, request.user.tenant_id, data))


@get("/plans/{plan_id:str}", **requires("read"), summary="Get a test plan with its runs' totals")
async def get_plan(request: ApiRequest, db: DatabaseDep, plan_id: str) -> PlanEnvelope:
    return PlanEnvelope(data=await plan_service.get_plan(db, request.user.tenant_id, plan_id))


@patch("/plans/{plan_id:str}", **requires("write"), summary="Change a plan's name, description or milestone")
async def update_plan(
    request: ApiRequest, db: DatabaseDep, plan_id: str, data: JSONBody[PlanUpdate]
) -> PlanEnvelope:
    plan = await plan_service.update_plan(db, request.user.tenant_id, plan_id, data)
    return PlanEnvelope(data=plan)


@delete("/plans/{plan_id:str}", **requires("write"), summary="Delete a test plan (its runs and results stay)")
async def delete_plan(request: ApiRequest, db: DatabaseDep, plan_id: str) -> None:
    await plan_service.delete_plan(db, request.user.tenant_id, plan_id)
