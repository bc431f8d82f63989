"""/api/v1/admin/sweep: the retention sweep of unlinked results, for the caller's tenant."""

from __future__ import annotations

from typing import Any

from litestar import Request, post

from tms.api.auth import requires
from tms.services import retention
from tms.services.tokens import ApiPrincipal


@post("/admin/sweep", **requires("write"), status_code=200,
      summary="Remove this tenant's unlinked results older than [retention] unlinked_days")
async def sweep(request: Request[ApiPrincipal, str, object]) -> dict[str, Any]:
    days = int(request.app.state.config.get("retention.unlinked_days"))
    deleted = await retention.sweep_tenant(request.app.state.db, request.user.tenant_id, days)
    return {"data": {"deleted": deleted}}
