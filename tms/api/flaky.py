"""/api/v1/flaky: tests whose outcome flips over a project's last runs."""

from __future__ import annotations

from litestar import Request, get

from tms.api.auth import requires
from tms.models.flaky import FlakyList
from tms.services import flaky as service
from tms.services.tokens import ApiPrincipal


@get("/flaky", **requires("read"), summary="Flaky tests of a project over its last `runs` runs (default 30)")
async def list_flaky(request: Request[ApiPrincipal, str, object], project_id: str,
                     runs: int | None = None, limit: int | None = None, offset: int | None = None) -> FlakyList:
    config = request.app.state.config
    tests, pagination = await service.list_flaky(request.app.state.db, request.user.tenant_id, project_id, runs,
                                                 limit, offset, default_runs=config.get("flaky.runs"))
    return FlakyList(data=tests, pagination=pagination)
