"""/api/v1/flaky: tests whose outcome flips over a project's last runs."""

from __future__ import annotations

from litestar import get

from tms.failures.flaky import service
from tms.failures.flaky.models import FlakyList
from tms.http.api_auth import ApiRequest, requires
from tms.state import ConfigDep, DatabaseDep


@get("/flaky", **requires("read"), summary="Flaky tests of a project over its last `runs` runs (default 30)")
async def list_flaky(request: ApiRequest, db: DatabaseDep, config: ConfigDep, project_id: str,
                     runs: int | None = None, limit: int | None = None, offset: int | None = None) -> FlakyList:
    config = config
    tests, pagination = await service.list_flaky(db, request.user.tenant_id, project_id, runs,
                                                 limit, offset, default_runs=config.get("flaky.runs"))
    return FlakyList(data=tests, pagination=pagination)
