"""POST /api/v1/ingest: a CI pipeline's whole report in one request (gzip and Idempotency-Key welcome)."""

from __future__ import annotations

from litestar import MediaType, Response, post

from tms.http.api_auth import ApiRequest, requires
from tms.http.bodies import MAX_WIRE_BYTES, request_body
from tms.runs.ingest import service as ingest_service
from tms.runs.ingest.models import IngestAnswer
from tms.state import DatabaseDep


@post(
    "/ingest",
    **requires("write"),
    summary="Create a COMPLETED run with all its results: 201 all accepted, 207 some rejected",
    request_max_body_size=MAX_WIRE_BYTES,
    response_description="{run_id, accepted, rejected, errors: [{index, error}], result_ids: [id | null]}",
    description="JSON body `{project_id, run_name?, environment?, framework?, results: [Result]}`, optionally "
    "`Content-Encoding: gzip`; an `Idempotency-Key` header makes a retry return the first answer. "
    "Items naming neither `test_case_code` nor `test_case_id` are stored as unlinked results. "
    "With `run_id` (a CI shard) the results go into that existing, unfinished run of the project, which stays "
    "open and fires no test_run.completed.",
)
async def ingest(request: ApiRequest, db: DatabaseDep) -> Response[IngestAnswer]:
    async with request_body(request) as raw:
        status, body = await ingest_service.ingest(
            db, request.user.tenant_id, raw, request.headers.get("idempotency-key")
        )
    # the body is already JSON (a replay returns the stored bytes verbatim)
    return Response(body, status_code=status, media_type=MediaType.JSON)  # type: ignore[arg-type]
