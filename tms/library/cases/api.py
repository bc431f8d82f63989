"""/api/v1/cases: the test library. ``{id}`` is a case's cuid or its code."""

from __future__ import annotations

from litestar import delete, get, patch, post
from litestar.params import JSONBody

from tms.db import Database
from tms.errors import InvalidInput
from tms.http.api_auth import ApiRequest, requires
from tms.library.cases import history as case_history
from tms.library.cases import search as case_search
from tms.library.cases import service as case_service
from tms.library.cases import update as case_update
from tms.library.cases.models import CaseCreate, CaseEnvelope, CaseList, CaseUpdate, CaseVersionList
from tms.state import DatabaseDep, app_state


@get(
    "/cases",
    **requires("read"),
    summary="List and search test cases",
    description="Filters (all combined): project_id, status, priority, automation_status, layer, tag (repeatable: "
    "any of them), section_id (`none` = in no section; include_subsections=true widens it to the subtree), "
    "needs_retest, q (words in title, code, Gherkin, tags, ticket keys and text custom fields; all must match), "
    "cf.<key>=value (a custom field holds the value; repeatable: any of them), "
    "review (NONE, REQUESTED, APPROVED, CHANGES_REQUESTED) and reviewer_id (a user's id, or `me`: "
    "`review=REQUESTED&reviewer_id=me` is what waits for your review). "
    "sort: created_at (default), code, title, status, priority, automation_status, layer, updated_at; "
    "order: asc (default) or desc. limit/offset paginate.",
)
async def list_cases(
    request: ApiRequest, db: DatabaseDep,
    project_id: str | None = None,
    status: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
    needs_retest: bool | None = None,
    q: str | None = None,
    tag: list[str] | None = None,
    priority: str | None = None,
    automation_status: str | None = None,
    layer: str | None = None,
    section_id: str | None = None,
    include_subsections: bool = False,
    sort: str = "created_at",
    order: str = "asc",
    review: str | None = None,
    reviewer_id: str | None = None,
) -> CaseList:
    if order not in ("asc", "desc"):
        raise InvalidInput("order must be asc or desc", field="order")
    query = case_search.CaseQuery(
        project_id=project_id, status=status, priority=priority, automation_status=automation_status, layer=layer,
        q=q, tags=tuple(tag or ()), section_id=section_id, include_subsections=include_subsections,
        needs_retest=needs_retest, sort=sort, descending=order == "desc", fields=field_filters(request),
        review=review, reviewer_id=await _reviewer(db, request, reviewer_id),
    )
    cases, pagination = await case_search.list_cases(
        db, request.user.tenant_id, limit=limit, offset=offset, query=query
    )
    return CaseList(data=cases, pagination=pagination)


async def _reviewer(db: Database, request: ApiRequest, reviewer_id: str | None) -> str | None:
    """``me`` is the token's creator (a token nobody created matches no reviewer)."""
    if reviewer_id != "me":
        return reviewer_id
    return await case_service.actor_user_id(db, request.user.tenant_id) or ""


def field_filters(request: ApiRequest) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The `cf.<key>=value` query parameters (repeatable), by key."""
    params = request.query_params
    keys = sorted({name[3:] for name in params if name.startswith("cf.")})
    return tuple((key, tuple(params.getall(f"cf.{key}"))) for key in keys)


@post("/cases", **requires("write"), summary="Create a test case (code given or TC-<n>)")
async def create_case(request: ApiRequest, db: DatabaseDep, data: JSONBody[CaseCreate]) -> CaseEnvelope:
    return CaseEnvelope(data=await case_service.create_case(db, request.user.tenant_id, data))


@get("/cases/{case_id:str}", **requires("read"), summary="Get a test case by cuid or code")
async def get_case(request: ApiRequest, db: DatabaseDep, case_id: str) -> CaseEnvelope:
    return CaseEnvelope(data=await case_service.get_case(db, request.user.tenant_id, case_id))


@patch("/cases/{case_id:str}", **requires("write"), summary="Change fields of a test case")
async def update_case(
    request: ApiRequest, db: DatabaseDep, case_id: str, data: JSONBody[CaseUpdate]
) -> CaseEnvelope:
    case = await case_update.update_case(db, request.user.tenant_id, case_id, data)
    return CaseEnvelope(data=case)


@delete("/cases/{case_id:str}", **requires("write"), summary="Delete a test case (its results stay)")
async def delete_case(request: ApiRequest, db: DatabaseDep, case_id: str) -> None:
    await case_service.delete_case(db, request.user.tenant_id, case_id,
                                   app_state(request).attachment_store)


@get("/cases/{case_id:str}/versions", **requires("read"), summary="A test case's versions, newest first")
async def list_versions(
    request: ApiRequest, db: DatabaseDep, case_id: str, limit: int | None = None, offset: int | None = None
) -> CaseVersionList:
    versions, pagination = await case_history.list_versions(
        db, request.user.tenant_id, case_id, limit=limit, offset=offset
    )
    return CaseVersionList(data=versions, pagination=pagination)
