"""/api/v1/quarantine: tests set aside from quality gates."""

from __future__ import annotations

from litestar import Request, delete, get, post
from litestar.params import JSONBody

from tms.api.auth import requires
from tms.models.quarantine import QuarantineCreate, QuarantineEnvelope, QuarantineList
from tms.services import quarantine as service
from tms.services.tokens import ApiPrincipal


@get("/quarantine", **requires("read"), summary="List quarantined tests (filter project_id; limit/offset)")
async def list_quarantine(request: Request[ApiPrincipal, str, object], project_id: str | None = None,
                          limit: int | None = None, offset: int | None = None) -> QuarantineList:
    entries, pagination = await service.list_entries(request.app.state.db, request.user.tenant_id,
                                                     project_id=project_id, limit=limit, offset=offset)
    return QuarantineList(data=entries, pagination=pagination)


@post("/quarantine", **requires("write"), summary="Quarantine a test by code or title, with a reason")
async def create_quarantine(request: Request[ApiPrincipal, str, object],
                            data: JSONBody[QuarantineCreate]) -> QuarantineEnvelope:
    return QuarantineEnvelope(data=await service.create(request.app.state.db, request.user.tenant_id, data))


@delete("/quarantine/{entry_id:str}", **requires("write"), summary="End a quarantine")
async def delete_quarantine(request: Request[ApiPrincipal, str, object], entry_id: str) -> None:
    await service.delete(request.app.state.db, request.user.tenant_id, entry_id)
