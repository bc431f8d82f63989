"""/api/v1/runs/{id}/results: upsert results per case and list every result of a run."""

from __future__ import annotations

from litestar import Request, Response, get, post

from tms.api.auth import requires
from tms.api.bodies import MAX_WIRE_BYTES, request_body
from tms.models.results import BulkAnswer, ResultList
from tms.services import results as result_service
from tms.services.tokens import ApiPrincipal


@get("/runs/{run_id:str}/results", **requires("read"), summary="Every result of a run, linked and unlinked")
async def list_results(request: Request[ApiPrincipal, str, object], run_id: str) -> ResultList:
    results = await result_service.list_results(request.app.state.db, request.user.tenant_id, run_id)
    return ResultList(data=results)


@post(
    "/runs/{run_id:str}/results",
    **requires("write"),
    summary="Upsert results per case: 201 all accepted, 207 some rejected",
    request_max_body_size=MAX_WIRE_BYTES,
    description="JSON body `{results: [Result]}` (gzip accepted); each item names `test_case_code` or "
    "`test_case_id` and is upserted per (run, case); answer `{accepted, rejected, errors: [{index, error}]}`.",
)
async def post_results(request: Request[ApiPrincipal, str, object], run_id: str) -> Response[BulkAnswer]:
    db, tenant_id = request.app.state.db, request.user.tenant_id
    async with request_body(request) as raw:
        answer = await result_service.post_results(db, tenant_id, run_id, raw)
    return Response(answer, status_code=207 if answer.rejected else 201)
