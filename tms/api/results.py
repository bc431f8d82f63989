"""/api/v1/runs/{id}/results: upsert results per case and list every result of a run."""

from __future__ import annotations

from litestar import Response, get, post

from tms.api.auth import ApiRequest, requires
from tms.api.bodies import MAX_WIRE_BYTES, request_body
from tms.models.results import BulkAnswer, ResultList
from tms.services import results as result_service
from tms.state import db_of


@get(
    "/runs/{run_id:str}/results",
    **requires("read"),
    summary="The results of a run, linked and unlinked, a page at a time (limit/offset)",
    description="Linked results first, then unlinked ones (`test_case_id`/`test_case_code` null), each in the "
    "order they were stored. `limit` defaults to 500 and is clamped to 5,000; `pagination.total` counts "
    "every result of the run. `assignee_id` and `status` filter it (an assignee lists linked results only).",
)
async def list_results(
    request: ApiRequest, run_id: str, limit: int | None = None, offset: int | None = None,
    assignee_id: str | None = None, status: str | None = None,
) -> ResultList:
    return await result_service.list_results(db_of(request), request.user.tenant_id, run_id, limit, offset,
                                             assignee_id=assignee_id, status=status)


@post(
    "/runs/{run_id:str}/results",
    **requires("write"),
    summary="Upsert results per case: 201 all accepted, 207 some rejected",
    request_max_body_size=MAX_WIRE_BYTES,
    description="JSON body `{results: [Result]}` (gzip accepted); each item names `test_case_code` or "
    "`test_case_id` and is upserted per (run, case); answer `{accepted, rejected, errors: [{index, error}]}`.",
)
async def post_results(request: ApiRequest, run_id: str) -> Response[BulkAnswer]:
    db, tenant_id = db_of(request), request.user.tenant_id
    async with request_body(request) as raw:
        answer = await result_service.post_results(db, tenant_id, run_id, raw)
    return Response(answer, status_code=207 if answer.rejected else 201)
