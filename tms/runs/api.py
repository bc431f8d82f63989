"""/api/v1/runs: create, list, get and change runs."""

from __future__ import annotations

from litestar import delete, get, patch, post
from litestar.params import JSONBody

from tms.http.api_auth import ApiRequest, requires
from tms.runs import service as run_service
from tms.runs.models import (
    RunCasesBody,
    RunCasesChange,
    RunCasesEnvelope,
    RunCreate,
    RunEnvelope,
    RunList,
    RunRerun,
    RunUpdate,
)
from tms.state import DatabaseDep


@get("/runs", **requires("read"),
     summary="List runs (filters project_id, status, milestone_id, plan_id; limit/offset)")
async def list_runs(
    request: ApiRequest, db: DatabaseDep,
    project_id: str | None = None,
    status: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
    milestone_id: str | None = None,
    plan_id: str | None = None,
) -> RunList:
    runs, pagination = await run_service.list_runs(
        db, request.user.tenant_id,
        project_id=project_id, status=status, limit=limit, offset=offset, milestone_id=milestone_id, plan_id=plan_id,
    )
    return RunList(data=runs, pagination=pagination)


@post("/runs", **requires("write"), summary="Create a PENDING run, optionally pre-populated with cases")
async def create_run(request: ApiRequest, db: DatabaseDep, data: JSONBody[RunCreate]) -> RunEnvelope:
    return RunEnvelope(data=await run_service.create_run(db, request.user.tenant_id, data))


@get("/runs/{run_id:str}", **requires("read"), summary="Get a run")
async def get_run(request: ApiRequest, db: DatabaseDep, run_id: str) -> RunEnvelope:
    return RunEnvelope(data=await run_service.get_run(db, request.user.tenant_id, run_id))


@patch("/runs/{run_id:str}", **requires("write"), summary="Change a run's name, environment or status")
async def update_run(
    request: ApiRequest, db: DatabaseDep, run_id: str, data: JSONBody[RunUpdate]
) -> RunEnvelope:
    run = await run_service.update_run(db, request.user.tenant_id, run_id, data)
    return RunEnvelope(data=run)


@post("/runs/{run_id:str}/cases", **requires("write"), status_code=200,
      summary="Add cases (cuids or codes) to an open run as UNKNOWN results")
async def add_cases(
    request: ApiRequest, db: DatabaseDep, run_id: str, data: JSONBody[RunCasesBody]
) -> RunCasesEnvelope:
    db, tenant_id = db, request.user.tenant_id
    async with db.transaction() as tx:
        added = await run_service.add_cases_to_run(tx, tenant_id, run_id, data.case_ids)
    run = await run_service.get_run(db, tenant_id, run_id)
    return RunCasesEnvelope(data=RunCasesChange(added=added, removed=None, run=run))


@delete("/runs/{run_id:str}/cases", **requires("write"), status_code=200,
        summary="Remove cases (cuids or codes) and their results from an open run")
async def remove_cases(
    request: ApiRequest, db: DatabaseDep, run_id: str, data: JSONBody[RunCasesBody]
) -> RunCasesEnvelope:
    db, tenant_id = db, request.user.tenant_id
    async with db.transaction() as tx:
        removed = await run_service.remove_cases_from_run(tx, tenant_id, run_id, data.case_ids)
    run = await run_service.get_run(db, tenant_id, run_id)
    return RunCasesEnvelope(data=RunCasesChange(added=None, removed=removed, run=run))


@post("/runs/{run_id:str}/rerun", **requires("write"), status_code=201,
      summary="A new run of the cases whose result in this run had one of the given statuses",
      description="Same project, environment and milestone; each result assigned as before; default name "
      "'<name> (rerun)'. statuses: PASSED, FAILED, BROKEN, SKIPPED, UNKNOWN (at least one). No matching result "
      "with a test case is a 400 naming statuses.")
async def rerun(request: ApiRequest, db: DatabaseDep, run_id: str, data: JSONBody[RunRerun]) -> RunEnvelope:
    return RunEnvelope(data=await run_service.rerun(db, request.user.tenant_id, run_id, data))
