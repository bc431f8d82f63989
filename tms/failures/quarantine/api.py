"""/api/v1/quarantine: tests set aside from quality gates."""

from __future__ import annotations

from litestar import delete, get, post
from litestar.params import JSONBody

from tms.failures.quarantine import service
from tms.failures.quarantine.models import QuarantineCreate, QuarantineEnvelope, QuarantineList
from tms.http.api_auth import ApiRequest, requires
from tms.state import DatabaseDep


@get("/quarantine", **requires("read"), summary="List quarantined tests (filter project_id; limit/offset)")
async def list_quarantine(request: ApiRequest, db: DatabaseDep, project_id: str | None = None,
                          limit: int | None = None, offset: int | None = None) -> QuarantineList:
    entries, pagination = await service.list_entries(db, request.user.tenant_id,
                                                     project_id=project_id, limit=limit, offset=offset)
    return QuarantineList(data=entries, pagination=pagination)


@post("/quarantine", **requires("write"), summary="Quarantine a test by code or title, with a reason")
async def create_quarantine(request: ApiRequest, db: DatabaseDep,
                            data: JSONBody[QuarantineCreate]) -> QuarantineEnvelope:
    return QuarantineEnvelope(data=await service.create(db, request.user.tenant_id, data))


@delete("/quarantine/{entry_id:str}", **requires("write"), summary="End a quarantine")
async def delete_quarantine(request: ApiRequest, db: DatabaseDep, entry_id: str) -> None:
    await service.delete(db, request.user.tenant_id, entry_id)
