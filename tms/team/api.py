"""/api/v1/users (the tenant's web users) and /api/v1/audit (who did what), both read-only."""

from __future__ import annotations

import msgspec
from litestar import get

from tms.http.api_auth import ApiRequest, requires
from tms.library.cases.models import Pagination
from tms.state import DatabaseDep
from tms.team import service as team
from tms.team.audit import service as audit
from tms.team.models import AuditEntry, AuditList, User, UserList


@get("/users", **requires("read"), summary="The team's web users and their roles")
async def list_users(request: ApiRequest, db: DatabaseDep) -> UserList:
    rows = await team.list_users(db, request.user.tenant_id)
    return UserList(data=[User(**team.user_dict(row)) for row in rows])


@get("/audit", **requires("read"), summary="The audit log, newest first (filters entity_type, entity_id, "
     "action, actor_id; limit/offset)")
async def list_audit(
    request: ApiRequest, db: DatabaseDep,
    entity_type: str | None = None,
    entity_id: str | None = None,
    action: str | None = None,
    actor_id: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> AuditList:
    entries, total, limit, offset = await audit.list_entries(
        db, request.user.tenant_id, entity_type=entity_type, entity_id=entity_id,
        action=action, actor_id=actor_id, limit=limit, offset=offset)
    return AuditList(data=[msgspec.convert(e, AuditEntry) for e in entries],
                     pagination=Pagination(total=total, limit=limit, offset=offset))
