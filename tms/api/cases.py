"""/api/v1/cases: the test library. ``{id}`` is a case's cuid or its code."""

from __future__ import annotations

from litestar import Request, delete, get, patch, post
from litestar.params import JSONBody

from tms.api.auth import requires
from tms.models.cases import CaseCreate, CaseEnvelope, CaseList, CaseUpdate
from tms.services import cases as case_service
from tms.services.tokens import ApiPrincipal


@get("/cases", **requires("read"), summary="List test cases (filters project_id, status, needs_retest; limit/offset)")
async def list_cases(
    request: Request[ApiPrincipal, str, object],
    project_id: str | None = None,
    status: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
    needs_retest: bool | None = None,
) -> CaseList:
    cases, pagination = await case_service.list_cases(
        request.app.state.db, request.user.tenant_id,
        project_id=project_id, status=status, limit=limit, offset=offset, needs_retest=needs_retest,
    )
    return CaseList(data=cases, pagination=pagination)


@post("/cases", **requires("write"), summary="Create a test case (code given or TC-<n>)")
async def create_case(request: Request[ApiPrincipal, str, object], data: JSONBody[CaseCreate]) -> CaseEnvelope:
    return CaseEnvelope(data=await case_service.create_case(request.app.state.db, request.user.tenant_id, data))


@get("/cases/{case_id:str}", **requires("read"), summary="Get a test case by cuid or code")
async def get_case(request: Request[ApiPrincipal, str, object], case_id: str) -> CaseEnvelope:
    return CaseEnvelope(data=await case_service.get_case(request.app.state.db, request.user.tenant_id, case_id))


@patch("/cases/{case_id:str}", **requires("write"), summary="Change fields of a test case")
async def update_case(
    request: Request[ApiPrincipal, str, object], case_id: str, data: JSONBody[CaseUpdate]
) -> CaseEnvelope:
    case = await case_service.update_case(request.app.state.db, request.user.tenant_id, case_id, data)
    return CaseEnvelope(data=case)


@delete("/cases/{case_id:str}", **requires("write"), summary="Delete a test case (its results stay)")
async def delete_case(request: Request[ApiPrincipal, str, object], case_id: str) -> None:
    await case_service.delete_case(request.app.state.db, request.user.tenant_id, case_id)
