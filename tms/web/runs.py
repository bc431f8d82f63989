"""Runs: list with status and counts; run page with results, attachments, unlinked results, Mark completed."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from litestar import Router, get, post
from litestar.response import File, Redirect, Template

from tms.api.attachments import attachment_file
from tms.models.runs import RUN_STATUSES, RunUpdate
from tms.services import attachments as attachment_service
from tms.services import failures as failure_service
from tms.services import projects as project_service
from tms.services import runs as run_service
from tms.services.errors import NotFound
from tms.services.paging import page_offset
from tms.store import run_views
from tms.web.common import AnyRequest, db_of, done, not_found, page_numbers, render, tenant_of
from tms.web.session import page_guard

PAGE_SIZE = 50
RESULT_STATUSES = ("PASSED", "FAILED", "BROKEN", "SKIPPED", "UNKNOWN")
# results shown per page of a run; a 20,000-result nightly run must not become a 50 MB page
RESULTS_PAGE = 200


def bar_segments(counts: Any) -> list[tuple[str, int, float]]:
    """(status, count, percent) for the stacked bar of a run."""
    total = counts.total or 0
    pairs = [("PASSED", counts.passed), ("FAILED", counts.failed), ("BROKEN", counts.broken),
             ("SKIPPED", counts.skipped), ("UNKNOWN", counts.unknown)]
    return [(status, n, 100.0 * n / total) for status, n in pairs if n and total]


@get("/runs")
async def list_runs(request: AnyRequest, offset: int = 0, project_id: str | None = None,
                    status: str | None = None) -> Template:
    db, tenant = db_of(request), tenant_of(request)
    status = status if status in RUN_STATUSES else None
    offset = page_offset(offset)
    rows, total = await run_views.list_runs_newest(db, tenant, project_id=project_id or None, status=status,
                                                   limit=PAGE_SIZE, offset=offset)
    runs = [run_service.run_from_row(row) for row in rows]
    projects = await project_service.list_projects(db, tenant)
    query = {"project_id": project_id or "", "status": status or ""}
    return render(request, "runs/list.html", active_nav="runs", runs=runs, projects=projects,
                  project_names={p.id: p.name for p in projects}, statuses=RUN_STATUSES, query=query,
                  bars={run.id: bar_segments(run.counts) for run in runs},
                  pager=page_numbers(total, PAGE_SIZE, offset),
                  pager_query=urlencode({k: v for k, v in query.items() if v}), filtered=any(query.values()))


async def _run_or_404(request: AnyRequest, run_id: str) -> Any:
    try:
        return await run_service.get_run(db_of(request), tenant_of(request), run_id)
    except NotFound as exc:
        raise not_found("run") from exc


@get("/runs/{run_id:str}")
async def run_page(request: AnyRequest, run_id: str, status: str | None = None, offset: int = 0) -> Template:
    db, tenant = db_of(request), tenant_of(request)
    run = await _run_or_404(request, run_id)
    status = status if status in RESULT_STATUSES else None
    offset = page_offset(offset)
    linked_counts, unlinked_counts = await run_views.status_counts(db, tenant, run.id)
    by_status = {s: linked_counts.get(s, 0) + unlinked_counts.get(s, 0) for s in RESULT_STATUSES}
    linked_total = linked_counts.get(status, 0) if status else sum(linked_counts.values())
    unlinked_total = unlinked_counts.get(status, 0) if status else sum(unlinked_counts.values())
    linked = await run_views.result_page(db, tenant, run.id, unlinked=False, status=status, limit=RESULTS_PAGE,
                                         offset=offset)
    unlinked = await run_views.result_page(db, tenant, run.id, unlinked=True, status=status, limit=RESULTS_PAGE,
                                           offset=0)
    # attachments of the shown rows only, through the attachments service (one query per 500 ids)
    attachments = await attachment_service.attachments_by_result(db, tenant, [r["id"] for r in linked + unlinked])
    for row in linked + unlinked:
        row["attachments"] = attachments.get(row["id"], [])
    try:
        project = await project_service.get_project(db, tenant, run.project_id)
    except NotFound:
        project = None
    clusters = await failure_service.clusters(db, tenant, run.id)
    return render(request, "runs/detail.html", active_nav="runs", run=run, project=project, clusters=clusters,
                  linked=linked, unlinked=unlinked, unlinked_total=unlinked_total, by_status=by_status,
                  status=status, statuses=RESULT_STATUSES, total=sum(by_status.values()),
                  bar=bar_segments(run.counts), pager=page_numbers(linked_total, RESULTS_PAGE, offset),
                  pager_query=urlencode({"status": status}) if status else "")


@post("/runs/{run_id:str}/complete", status_code=303)
async def complete_run(request: AnyRequest, run_id: str) -> Redirect:
    """Through the runs service, so test_run.completed fires exactly as it does for PATCH."""
    run = await _run_or_404(request, run_id)
    if run.status == "COMPLETED":
        return done(request, f"/runs/{run.id}", "This run is already completed.", "info")
    await run_service.update_run(db_of(request), tenant_of(request), run.id, RunUpdate(status="COMPLETED"))
    return done(request, f"/runs/{run.id}", f"Run “{run.name}” marked completed.")


@get("/web/attachments/{attachment_id:str}")
async def download_attachment(request: AnyRequest, attachment_id: str) -> File:
    """The API's download for a signed-in user: same checks, same defensive headers."""
    state = request.app.state
    try:
        stored = await attachment_service.open_attachment(state.db, tenant_of(request), attachment_id,
                                                          state.config.attachments_dir)
    except NotFound as exc:
        raise not_found("attachment") from exc
    return attachment_file(stored)


def router() -> Router:
    return Router(path="/", route_handlers=[list_runs, run_page, complete_run, download_attachment],
                  guards=[page_guard], include_in_schema=False)
