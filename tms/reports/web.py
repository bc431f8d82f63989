"""Report pages for signed-in users: the printable HTML report of a run, plan or milestone, and its
downloads (HTML, PDF, CSV, JSON) through the session, since a browser holds no API token.

``/<kind>s/{id}/report`` is the report itself (the same document as the HTML download, plus the
download links); ``/<kind>s/{id}/report/download?format=`` answers the file as an attachment.
"""

from __future__ import annotations

import msgspec
from litestar import Response, Router, get

from tms.db import Database
from tms.errors import NotFound
from tms.http.pages import AnyRequest, not_found, tenant_of
from tms.reports import html, service
from tms.reports.models import REPORT_FORMATS, Report, ReportEnvelope, ReportKind
from tms.state import DatabaseDep
from tms.team.signin.session import page_guard

_PLURAL = {"run": "runs", "plan": "plans", "milestone": "milestones"}


async def _build(db: Database, request: AnyRequest, kind: ReportKind, target_id: str) -> Report:
    try:
        return await service.build(db, tenant_of(request), kind, target_id)
    except NotFound:
        raise not_found(kind) from None


async def _page(db: Database, request: AnyRequest, kind: ReportKind, target_id: str) -> Response[str]:
    report = await _build(db, request, kind, target_id)
    base = f"/{_PLURAL[kind]}/{report.id}"
    body = html.render_text(report, page={"download": f"{base}/report/download", "back": base})
    return Response(body, media_type="text/html; charset=utf-8")


async def _download(db: Database, request: AnyRequest, kind: ReportKind, target_id: str, fmt: str) -> Response[bytes]:
    service.check_format(fmt, REPORT_FORMATS)
    report = await _build(db, request, kind, target_id)
    if fmt == "json":
        body, media_type = msgspec.json.encode(ReportEnvelope(data=report)), "application/json"
        filename = f"{kind}-{report.id}-report.json"
    else:
        rendered = await service.render(report, fmt)
        body, media_type, filename = rendered.body, rendered.media_type, rendered.filename
    return Response(body, media_type=media_type,
                    headers={"Content-Disposition": f'attachment; filename="{filename}"'})


@get("/runs/{run_id:str}/report")
async def run_report_page(request: AnyRequest, db: DatabaseDep, run_id: str) -> Response[str]:
    return await _page(db, request, "run", run_id)


@get("/plans/{plan_id:str}/report")
async def plan_report_page(request: AnyRequest, db: DatabaseDep, plan_id: str) -> Response[str]:
    return await _page(db, request, "plan", plan_id)


@get("/milestones/{milestone_id:str}/report")
async def milestone_report_page(request: AnyRequest, db: DatabaseDep, milestone_id: str) -> Response[str]:
    return await _page(db, request, "milestone", milestone_id)


@get("/runs/{run_id:str}/report/download")
async def run_report_download(request: AnyRequest, db: DatabaseDep, run_id: str,
                              format: str = "html") -> Response[bytes]:
    return await _download(db, request, "run", run_id, format)


@get("/plans/{plan_id:str}/report/download")
async def plan_report_download(request: AnyRequest, db: DatabaseDep, plan_id: str,
                               format: str = "html") -> Response[bytes]:
    return await _download(db, request, "plan", plan_id, format)


@get("/milestones/{milestone_id:str}/report/download")
async def milestone_report_download(request: AnyRequest, db: DatabaseDep, milestone_id: str,
                                    format: str = "html") -> Response[bytes]:
    return await _download(db, request, "milestone", milestone_id, format)


def router() -> Router:
    return Router(path="/", route_handlers=[
        run_report_page, plan_report_page, milestone_report_page,
        run_report_download, plan_report_download, milestone_report_download,
    ], guards=[page_guard], include_in_schema=False)
