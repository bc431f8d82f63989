"""The traceability matrix page, ``/traceability?project_id=``: requirements down, their cases and the
latest result per environment across, coverage, the gaps filter, CSV download and "Refresh from the
tracker" (which starts the background refresh and returns at once)."""

from __future__ import annotations

from urllib.parse import urlencode

from litestar import Response, Router, get, post
from litestar.response import Redirect, Template

from tms.errors import NotFound
from tms.http.pages import AnyRequest, done, form_of, not_found, page_numbers, render, tenant_of
from tms.http.paging import page_offset
from tms.library.projects import service as projects
from tms.state import ConfigDep, DatabaseDep
from tms.team.signin.session import page_guard
from tms.traceability import service
from tms.traceability.models import COVERAGES, SOURCES

PAGE_SIZE = 100


@get("/traceability")
async def matrix_page(request: AnyRequest, db: DatabaseDep, project_id: str | None = None, source: str | None = None,
                      gaps: bool = False, offset: int = 0) -> Template:
    db, tenant_id = db, tenant_of(request)
    choices = [p for p in await projects.list_projects(db, tenant_id) if not p.archived]
    if not project_id:
        return render(request, "traceability/matrix.html", active_nav="traceability", projects=choices, page=None,
                      project=None, filters={}, sources=SOURCES)
    source = (source or "").upper()
    q = service.query(project_id, source if source in SOURCES else None, None, gaps)  # a stale link: no filter
    try:
        project = await projects.get_project(db, tenant_id, project_id)
        page = await service.matrix(db, tenant_id, q, PAGE_SIZE, page_offset(offset))
    except NotFound as exc:
        raise not_found("project") from exc
    environments = sorted({env for req in page.data for case in req.cases for env in case.latest})
    filters = {"project_id": project_id, "source": q.source or "", "gaps": "1" if gaps else ""}
    query = urlencode({k: v for k, v in filters.items() if v})
    return render(request, "traceability/matrix.html", active_nav="traceability", projects=choices, project=project,
                  page=page, environments=environments, filters=filters, query=query, sources=SOURCES,
                  coverages=COVERAGES, pager=page_numbers(page.pagination.total, PAGE_SIZE, page.pagination.offset))


@get("/traceability/download")
async def download(request: AnyRequest, db: DatabaseDep, project_id: str | None = None, source: str | None = None,
                   gaps: bool = False) -> Response[str]:
    source = (source or "").upper()
    q = service.query(project_id, source if source in SOURCES else None, None, gaps)
    try:
        text = await service.csv_text(db, tenant_of(request), q)
    except NotFound as exc:
        raise not_found("project") from exc
    return Response(text, media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": 'attachment; filename="traceability.csv"'})


@post("/traceability/refresh", status_code=303)
async def refresh(request: AnyRequest, db: DatabaseDep, config: ConfigDep) -> Redirect:
    form, _ = await form_of(request)
    project_id = form.get("project_id", "")
    try:
        await projects.get_project(db, tenant_of(request), project_id)
    except NotFound as exc:
        raise not_found("project") from exc
    service.refresh_soon(db, config, tenant_of(request))
    return done(request, f"/traceability?{urlencode({'project_id': project_id})}",
                "Reading titles and statuses from the trackers in the background; reload in a minute.")


def router() -> Router:
    return Router(path="/", route_handlers=[matrix_page, download, refresh], guards=[page_guard],
                  include_in_schema=False)
