"""GET /api/v1/traceability (read): requirements, their cases and coverage; ``format=csv`` for spreadsheets.
POST /api/v1/traceability/refresh (write): read the requirements' titles and statuses from the trackers now,
in the background (202)."""

from __future__ import annotations

from typing import Literal

from litestar import Response, get, post

from tms.http.api_auth import ApiRequest, requires
from tms.http.paging import check_choice
from tms.state import ConfigDep, DatabaseDep
from tms.traceability import service
from tms.traceability.models import FORMATS, Traceability


@get("/traceability", **requires("read"),
     summary="Requirements (ticket keys in cases' tickets) with their cases, latest result per environment and "
     "coverage (passed, failed, untested, none)",
     description="`project_id` (required), `source` (JIRA, GITHUB, GITLAB, LINEAR, OTHER), `coverage` (repeatable), "
     "`gaps=true` (requirements with failing or no tests), `limit`/`offset` as for cases, `format=json|csv`. "
     "Titles and statuses are those the background refresh read from the tracker integration.")
async def traceability(request: ApiRequest, db: DatabaseDep, project_id: str,
                       source: Literal["JIRA", "GITHUB", "GITLAB", "LINEAR", "OTHER"] | None = None,
                       coverage: list[Literal["passed", "failed", "untested", "none"]] | None = None,
                       gaps: bool = False, limit: int | None = None, offset: int | None = None,
                       format: Literal["json", "csv"] = "json") -> Traceability | Response[str]:
    check_choice(format, FORMATS, "format")
    q = service.query(project_id, source, coverage, gaps)
    if format == "csv":
        text = await service.csv_text(db, request.user.tenant_id, q)
        return Response(text, media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": 'attachment; filename="traceability.csv"'})
    return await service.matrix(db, request.user.tenant_id, q, limit, offset)


@post("/traceability/refresh", **requires("write"), status_code=202,
      summary="Read the requirements' titles and statuses from the trackers now (in the background)")
async def refresh(request: ApiRequest, db: DatabaseDep, config: ConfigDep) -> Response[dict[str, str]]:
    service.refresh_soon(db, config, request.user.tenant_id)
    return Response({"status": "refreshing"}, status_code=202)


HANDLERS = [traceability, refresh]
