"""/api/v1 reports of runs, plans and milestones, and the export of a run's results (read scope)."""

from __future__ import annotations

from litestar import Response, get
from litestar.openapi.datastructures import ResponseSpec
from litestar.response import Stream

from tms.db import Database
from tms.http.api_auth import ApiRequest, requires
from tms.reports import service
from tms.reports.models import REPORT_FORMATS, ExportFormat, ReportEnvelope, ReportFormat, ReportKind
from tms.state import DatabaseDep

_REPORT_DESCRIPTION = (
    "`format`: `json` (default: `{data: Report}`), `html` (one self-contained file: inline CSS and SVG, "
    "no external asset), `pdf` (made inside the service) or `csv` (one table for spreadsheets). Totals and "
    "pass rate, per environment, by section, by assignee, the largest 50 failure clusters with their bug "
    "links and the first 200 failures (see docs/reports.md)."
)


# the 200 of format=json, in the OpenAPI document (html, pdf and csv answer files)
_RESPONSES = {200: ResponseSpec(data_container=ReportEnvelope, description="The report (format=json); "
                                "format=html, pdf and csv answer text/html, application/pdf and text/csv")}


async def _report(db: Database, request: ApiRequest, kind: ReportKind, target_id: str, fmt: str) -> Response[object]:
    service.check_format(fmt, REPORT_FORMATS)
    report = await service.build(db, request.user.tenant_id, kind, target_id)
    if fmt == "json":
        return Response(ReportEnvelope(data=report))
    rendered = await service.render(report, fmt)
    disposition = "inline" if fmt == "html" else "attachment"
    return Response(rendered.body, media_type=rendered.media_type,
                    headers={"Content-Disposition": f'{disposition}; filename="{rendered.filename}"'})


@get("/runs/{run_id:str}/report", **requires("read"), summary="A run's report: json, html, pdf or csv",
     description=_REPORT_DESCRIPTION + " A run's report adds the trend against the previous run of the same "
     "project and environment.", responses=_RESPONSES)
async def run_report(request: ApiRequest, db: DatabaseDep, run_id: str,
                     format: ReportFormat = "json") -> Response[object]:
    return await _report(db, request, "run", run_id, format)


@get("/plans/{plan_id:str}/report", **requires("read"), summary="A test plan's report: json, html, pdf or csv",
     description=_REPORT_DESCRIPTION, responses=_RESPONSES)
async def plan_report(request: ApiRequest, db: DatabaseDep, plan_id: str,
                      format: ReportFormat = "json") -> Response[object]:
    return await _report(db, request, "plan", plan_id, format)


@get("/milestones/{milestone_id:str}/report", **requires("read"),
     summary="A milestone's report: json, html, pdf or csv", description=_REPORT_DESCRIPTION,
     responses=_RESPONSES)
async def milestone_report(request: ApiRequest, db: DatabaseDep, milestone_id: str,
                           format: ReportFormat = "json") -> Response[object]:
    return await _report(db, request, "milestone", milestone_id, format)


@get("/runs/{run_id:str}/export", **requires("read"),
     summary="A run's results as JUnit XML, CTRF JSON or CSV (streamed)",
     description="`format=junit|ctrf|csv`. JUnit and CTRF read back through `tms ingest` into an equal run (case "
     "codes as `@service('CODE')`, statuses, durations, messages, stacks; docs/reports.md lists the limits); "
     "CSV is a spreadsheet export (the reporter reads no CSV).")
async def export_run(request: ApiRequest, db: DatabaseDep, run_id: str, format: ExportFormat = "junit") -> Stream:
    export = await service.export_run(db, request.user.tenant_id, run_id, format)
    return Stream(export.chunks, media_type=export.media_type,
                  headers={"Content-Disposition": f'attachment; filename="{export.filename}"'})


HANDLERS = [run_report, plan_report, milestone_report, export_run]
