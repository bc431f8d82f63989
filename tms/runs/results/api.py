"""/api/v1/runs/{id}/results: upsert results per case and list every result of a run."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec
from litestar import Response, get, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.response import Stream

from tms.attachments.service import attachments_by_result
from tms.db import Database
from tms.errors import InvalidInput
from tms.http.api_auth import ApiRequest, requires
from tms.http.bodies import MAX_WIRE_BYTES, request_body
from tms.http.paging import page_window
from tms.library.cases.models import Pagination
from tms.runs.results import service as result_service
from tms.runs.results.models import BulkAnswer, ResultList
from tms.runs.statuses import RESULT_STATUSES
from tms.state import db_of

_encoder = msgspec.json.Encoder()


@get(
    "/runs/{run_id:str}/results",
    **requires("read"),
    summary="The results of a run, linked and unlinked: all of them, or a page at a time (limit/offset)",
    description="Linked results first, then unlinked ones (`test_case_id`/`test_case_code` null), each in the "
    "order they were stored. Without `limit`, every result of the run (after the first `offset`) in one "
    "streamed answer, `pagination.total` = `offset` + the rows in `data`, `pagination.limit` = the rows in "
    "`data`. With `limit` (clamped to 5,000) one page, `pagination.total` counting every result of the run. "
    "`assignee_id` and `status` filter it (an assignee lists linked results only).",
    responses={200: ResponseSpec(ResultList, description="The run's results (all of them without `limit`).",
                                 generate_examples=False)},  # random: step_results (Raw) encodes as nothing
)
async def list_results(
    request: ApiRequest, run_id: str, limit: int | None = None, offset: int | None = None,
    assignee_id: str | None = None, status: str | None = None,
) -> Response[Any]:
    db, tenant_id = db_of(request), request.user.tenant_id
    if limit is not None:
        return Response(await result_service.list_results(db, tenant_id, run_id, limit, offset,
                                                          assignee_id=assignee_id, status=status))
    _, skip = page_window(1, offset)  # the offset's checks
    if status is not None and status not in RESULT_STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(RESULT_STATUSES)}", field="status")
    await result_service.require_run(db, tenant_id, run_id)
    return Stream(_all_results(db, tenant_id, run_id, skip, status, assignee_id), media_type="application/json")


async def _all_results(db: Database, tenant_id: str, run_id: str, offset: int, status: str | None,
                       assignee_id: str | None) -> AsyncIterator[bytes]:
    """``{"data": [...], "pagination": {...}}`` written chunk by chunk: one chunk of rows (and its
    attachments) in memory at a time, and the event loop free between chunks. The pagination comes
    last, so that it counts exactly the rows sent."""
    yield b'{"data":['
    sent = 0
    async for rows in result_service.chunks_for_run(db, tenant_id, run_id, status=status, assignee_id=assignee_id,
                                                    offset=offset):
        attachments = await attachments_by_result(db, tenant_id, [row["id"] for row in rows])
        encoded = _encoder.encode([result_service.result_from_row(row, attachments.get(row["id"], []))
                                   for row in rows])
        yield (b"," if sent else b"") + encoded[1:-1]
        sent += len(rows)
    # nothing after the offset: the run holds at most ``offset`` rows, counted
    total = offset + sent if sent or not offset else await result_service.count_matching(
        db, tenant_id, run_id, status=status, assignee_id=assignee_id)
    yield b'],"pagination":' + _encoder.encode(Pagination(total=total, limit=sent, offset=offset)) + b"}"


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
