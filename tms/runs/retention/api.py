"""/api/v1/admin/sweep: the retention sweep of unlinked results, for the caller's tenant."""

from __future__ import annotations

from typing import Any

from litestar import post

from tms.http.api_auth import ApiRequest, requires
from tms.runs.retention import service as retention
from tms.state import ConfigDep, DatabaseDep


@post("/admin/sweep", **requires("write"), status_code=200,
      summary="Remove this tenant's unlinked results older than [retention] unlinked_days")
async def sweep(request: ApiRequest, db: DatabaseDep, config: ConfigDep) -> dict[str, Any]:
    days = int(config.get("retention.unlinked_days"))
    deleted = await retention.sweep_tenant(db, request.user.tenant_id, days)
    return {"data": {"deleted": deleted}}
