"""/api/v1/runs and the results of a run."""

from __future__ import annotations

from litestar import Request, Response, get, patch, post

from tms.api.auth import requires
from tms.api.bodies import MAX_WIRE_BYTES, read_body
from tms.models.results import BulkAnswer, ResultList
from tms.models.runs import RunCreate, RunEnvelope, RunList, RunUpdate
from tms.services import results as result_service
from tms.services import runs as run_service
from tms.services.tokens import ApiPrincipal


@get("/runs", **requires("read"), summary="List runs (filters project_id, status; limit/offset)")
async def list_runs(
    request: Request[ApiPrincipal, str, object],
    project_id: str | None = None,
    status: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> RunList:
    runs, pagination = await run_service.list_runs(
        request.app.state.db, request.user.tenant_id,
        project_id=project_id, status=status, limit=limit, offset=offset,
    )
    return RunList(data=runs, pagination=pagination)


@post("/runs", **requires("write"), summary="Create a PENDING run, optionally pre-populated with cases")
async def create_run(request: Request[ApiPrincipal, str, object], data: RunCreate) -> RunEnvelope:
    return RunEnvelope(data=await run_service.create_run(request.app.state.db, request.user.tenant_id, data))


@get("/runs/{run_id:str}", **requires("read"), summary="Get a run")
async def get_run(request: Request[ApiPrincipal, str, object], run_id: str) -> RunEnvelope:
    return RunEnvelope(data=await run_service.get_run(request.app.state.db, request.user.tenant_id, run_id))


@patch("/runs/{run_id:str}", **requires("write"), summary="Change a run's name, environment or status")
async def update_run(request: Request[ApiPrincipal, str, object], run_id: str, data: RunUpdate) -> RunEnvelope:
    run = await run_service.update_run(request.app.state.db, request.user.tenant_id, run_id, data)
    return RunEnvelope(data=run)


@get("/runs/{run_id:str}/results", **requires("read"), summary="Every result of a run, linked and unlinked")
async def list_results(request: Request[ApiPrincipal, str, object], run_id: str) -> ResultList:
    results = await result_service.list_results(request.app.state.db, request.user.tenant_id, run_id)
    return ResultList(data=results)


@post(
    "/runs/{run_id:str}/results",
    **requires("write"),
    summary="Upsert results per case: 201 all accepted, 207 some rejected",
    request_max_body_size=MAX_WIRE_BYTES,
)
async def post_results(request: Request[ApiPrincipal, str, object], run_id: str) -> Response[BulkAnswer]:
    db, tenant_id = request.app.state.db, request.user.tenant_id
    answer = await result_service.post_results(db, tenant_id, run_id, await read_body(request))
    return Response(answer, status_code=207 if answer.rejected else 201)
