"""Runs: list with status and counts; run page with results, attachments, unlinked results, Mark completed."""

from __future__ import annotations

import dataclasses
import json
from typing import Any
from urllib.parse import urlencode

from litestar import Router, get, post
from litestar.response import Redirect, Response, Template

from tms.attachments import service as attachment_service
from tms.attachments.api import attachment_file
from tms.db import Database
from tms.errors import DomainError, NotFound
from tms.failures import service as failure_service
from tms.http.pages import (
    AnyRequest,
    convert,
    done,
    field_errors,
    form_of,
    not_found,
    page_numbers,
    render,
    tenant_of,
    user_of,
)
from tms.http.paging import page_offset
from tms.integrations import defects
from tms.library.cases import search as case_search
from tms.library.cases import service as case_service
from tms.library.cases.web import AUTOMATION, LAYERS, PRIORITIES, STATUSES, _choice
from tms.library.projects import service as project_service
from tms.planning.milestones import service as milestone_service
from tms.runs import service as run_service
from tms.runs.executions import service as executions
from tms.runs.models import RUN_STATUSES, RunCreate, RunRerun, RunUpdate
from tms.runs.results import service as result_service
from tms.runs.statuses import RESULT_STATUSES, counted
from tms.state import ConfigDep, DatabaseDep, app_state
from tms.team import service as team
from tms.team.audit import service as audit
from tms.team.signin.session import page_guard

PAGE_SIZE = 50
# results shown per page of a run; a 20,000-result nightly run must not become a 50 MB page
RESULTS_PAGE = 200


def bar_segments(counts: Any) -> list[tuple[str, int, float]]:
    """(status, count, percent) for the stacked bar of a run."""
    total = counts.total or 0
    return [(status, n, 100.0 * n / total) for status, n in counted(counts) if n and total]


@get("/runs")
async def list_runs(request: AnyRequest, db: DatabaseDep, offset: int = 0, project_id: str | None = None,
                    status: str | None = None) -> Template:
    tenant = tenant_of(request)
    status = status if status in RUN_STATUSES else None
    offset = page_offset(offset)
    runs, total = await run_service.list_runs_newest(db, tenant, project_id=project_id or None, status=status,
                                                     limit=PAGE_SIZE, offset=offset)
    projects = await project_service.list_projects(db, tenant)
    query = {"project_id": project_id or "", "status": status or ""}
    return render(request, "runs/list.html", active_nav="runs", runs=runs, projects=projects,
                  project_names={p.id: p.name for p in projects}, statuses=RUN_STATUSES, query=query,
                  bars={run.id: bar_segments(run.counts) for run in runs},
                  pager=page_numbers(total, PAGE_SIZE, offset),
                  pager_query=urlencode({k: v for k, v in query.items() if v}), filtered=any(query.values()))


async def _run_or_404(db: Database, request: AnyRequest, run_id: str) -> Any:
    try:
        return await run_service.get_run(db, tenant_of(request), run_id)
    except NotFound as exc:
        raise not_found("run") from exc


@get("/runs/{run_id:str}")
async def run_page(request: AnyRequest, db: DatabaseDep, run_id: str, status: str | None = None, offset: int = 0,
                   unlinked_offset: int = 0, assignee: str | None = None) -> Template:
    """Linked and unlinked results each a page at a time (``offset``, ``unlinked_offset``); filters by
    status and assignee (a user id, "me", or "none" for the unassigned)."""
    tenant = tenant_of(request)
    run = await _run_or_404(db, request, run_id)
    status = status if status in RESULT_STATUSES else None
    offset, unlinked_offset = page_offset(offset), page_offset(unlinked_offset)
    members = await team.list_users(db, tenant)
    if assignee == "me":
        assignee = user_of(request).id
    assignee = assignee if assignee == "none" or assignee in {m["id"] for m in members} else None
    page = await result_service.run_page(db, tenant, run.id, status=status, assignee=assignee, limit=RESULTS_PAGE,
                                         offset=offset, unlinked_offset=unlinked_offset)
    linked, unlinked, by_status = page.linked, page.unlinked, page.by_status
    try:
        project = await project_service.get_project(db, tenant, run.project_id)
    except NotFound:
        project = None
    history, _, _, _ = await audit.list_entries(db, tenant, entity_type="run", entity_id=run.id, limit=20)
    names = {m["id"]: m["name"] or m["email"] for m in members}
    clusters = await failure_service.clusters(db, tenant, run.id)
    return render(request, "runs/detail.html", active_nav="runs", run=run, project=project, clusters=clusters,
                  linked=linked, unlinked=unlinked, unlinked_total=page.unlinked_total, by_status=by_status,
                  status=status, statuses=RESULT_STATUSES, total=sum(by_status.values()),
                  bar=bar_segments(run.counts), pager=page_numbers(page.linked_total, RESULTS_PAGE, offset),
                  pager_query=urlencode({k: v for k, v in (("status", status), ("assignee", assignee),
                                                           ("unlinked_offset", unlinked_offset)) if v}),
                  unlinked_pager=page_numbers(page.unlinked_total, RESULTS_PAGE, unlinked_offset),
                  unlinked_pager_query=urlencode({k: v for k, v in (("status", status), ("offset", offset)) if v}),
                  assignee=assignee, names=names,
                  case_titles=await case_service.titles_of(db, tenant, [r["test_case_id"] for r in linked
                                                                       if r["test_case_id"]]),
                  assignable=[m for m in members if m["active"] and m["role"] != "viewer"],
                  assignee_counts=page.assignee_counts,
                  can_file_issue=user_of(request).has_role("tester")
                  and await defects.can_create_issues(db, tenant),
                  open=run.status in run_service.OPEN_STATUSES, history=history,
                  history_names={**names, **({project.id: project.name} if project else {})},
                  can_write=user_of(request).has_role("tester"))


@post("/runs/{run_id:str}/complete", status_code=303)
async def complete_run(request: AnyRequest, db: DatabaseDep, run_id: str) -> Redirect:
    """Through the runs service, so test_run.completed fires exactly as it does for PATCH."""
    run = await _run_or_404(db, request, run_id)
    single, _ = await form_of(request)
    summary = single.get("summary", "").strip()[:20_000] or None
    if run.status == "COMPLETED":
        return done(request, f"/runs/{run.id}", "This run is already completed.", "info")
    await run_service.update_run(db, tenant_of(request), run.id,
                                 RunUpdate(status="COMPLETED", summary=summary))
    return done(request, f"/runs/{run.id}", f"Run “{run.name}” marked completed.")


RERUN_DEFAULT = ("FAILED", "BROKEN", "UNKNOWN")  # shown as Failed, Blocked, Untested


async def _edit_page(db: Database, request: AnyRequest, run: Any, *, form: dict[str, Any] | None = None,
                     errors: dict[str, str] | None = None, rerun_form: dict[str, Any] | None = None,
                     rerun_errors: dict[str, str] | None = None, status_code: int = 200) -> Template:
    """Edit a run (name, environment, milestone) and rerun its failures: one page, two forms, each
    re-rendered with what was typed when it fails."""
    tenant = tenant_of(request)
    try:
        project = await project_service.get_project(db, tenant, run.project_id)
    except NotFound:
        project = None
    milestones, _ = await milestone_service.list_milestones(db, tenant, project_id=run.project_id, limit=500)
    environments = list(project.environments if project else [])
    if run.environment and run.environment not in environments:
        environments.append(run.environment)
    return render(request, "runs/edit.html", status_code=status_code, active_nav="runs", run=run, project=project,
                  milestones=milestones, environments=environments, statuses=RESULT_STATUSES,
                  form=form or {"name": run.name, "environment": run.environment or "",
                                "milestone_id": run.milestone_id or ""},
                  errors=errors or {}, rerun_form=rerun_form or {"statuses": list(RERUN_DEFAULT), "name": ""},
                  rerun_errors=rerun_errors or {})


@get("/runs/{run_id:str}/edit")
async def edit_run_page(request: AnyRequest, db: DatabaseDep, run_id: str) -> Template:
    return await _edit_page(db, request, await _run_or_404(db, request, run_id))


@post("/runs/{run_id:str}/edit", status_code=303)
async def edit_run(request: AnyRequest, db: DatabaseDep, run_id: str) -> Template | Redirect:
    """Through the runs service's PATCH: name, environment and milestone."""
    run = await _run_or_404(db, request, run_id)
    single, _ = await form_of(request)
    form = {key: single.get(key, "") for key in ("name", "environment", "milestone_id")}
    body, errors = convert(RunUpdate, {"name": form["name"].strip(), "environment": form["environment"].strip() or None,
                                       "milestone_id": form["milestone_id"] or None})
    if body is not None:
        try:
            updated = await run_service.update_run(db, tenant_of(request), run.id, body)
        except DomainError as exc:
            errors = field_errors(exc, "name")
        else:
            return done(request, f"/runs/{updated.id}", f"Run “{updated.name}” saved.")
    return await _edit_page(db, request, run, form=form, errors=errors, status_code=400)


@post("/runs/{run_id:str}/rerun", status_code=303)
async def rerun(request: AnyRequest, db: DatabaseDep, run_id: str) -> Template | Redirect:
    """A new run of the cases whose result had one of the ticked statuses (Failed, Blocked, Untested by default)."""
    run = await _run_or_404(db, request, run_id)
    single, multi = await form_of(request)
    statuses, name = multi.get("statuses", []), single.get("name", "")
    form: dict[str, Any] = {"statuses": statuses, "name": name}
    body, errors = convert(RunRerun, {"statuses": statuses, "name": name.strip() or None})
    if body is not None:
        try:
            new = await run_service.rerun(db, tenant_of(request), run.id, body)
        except DomainError as exc:
            errors = field_errors(exc, "statuses")
        else:
            return done(request, f"/runs/{new.id}", f"Run “{new.name}” created with {new.counts.total} cases.")
    if "statuses" in errors and not statuses:
        errors["statuses"] = "Tick at least one status."
    return await _edit_page(db, request, run, rerun_form=form, rerun_errors=errors, status_code=400)


def _filters_from(values: Any, prefix: str = "") -> case_search.CaseQuery:
    """The picker's filter (the case list's own query parameters, ``f_``-prefixed when posted back)."""
    def get_value(key: str) -> str:
        return str(values.get(prefix + key) or "").strip()

    tag = get_value("tag")[:100]
    return case_search.CaseQuery(
        q=get_value("q")[:200] or None, project_id=get_value("project_id") or None,
        status=_choice(get_value("status"), STATUSES),
        automation_status=_choice(get_value("automation_status"), AUTOMATION),
        priority=_choice(get_value("priority"), PRIORITIES), layer=_choice(get_value("layer"), LAYERS),
        tags=(tag,) if tag else (), section_id=get_value("section_id") or None,
        include_subsections=get_value("sub") == "1")


PICK_LIMIT = 500  # cases listed with a checkbox; "all matching the filter" takes up to MAX_CASES
MAX_CASES = 50_000
FILTER_FIELDS = ("q", "project_id", "status", "automation_status", "priority", "layer", "tag", "section_id", "sub")


async def _picker(db: Database, request: AnyRequest, *, run: Any = None, form: dict[str, Any] | None = None,
                  errors: dict[str, str] | None = None, status_code: int = 200,
                  filters: case_search.CaseQuery | None = None) -> Template:
    """The case picker: the new-run form, or "Add cases" to an open run."""
    tenant = tenant_of(request)
    filters = filters or _filters_from(request.query_params)
    if run is not None:
        filters = dataclasses.replace(filters, project_id=run.project_id)
    rows, page = await case_search.list_cases(db, tenant, limit=PICK_LIMIT, offset=0, query=filters)
    total = page.total
    already = await run_service.cases_in_run(db, tenant, run.id, [c.id for c in rows]) if run else set()
    projects = await project_service.list_open_projects(db, tenant)
    form = form or {"name": "", "project_id": filters.project_id or "", "environment": "", "case_ids": [],
                    "all_matching": False, "milestone_id": str(request.query_params.get("milestone_id") or "")}
    milestones, _ = await milestone_service.list_milestones(db, tenant, status="OPEN", limit=500)
    environments = sorted({e for p in projects for e in p.environments})
    query = {"q": filters.q or "", "project_id": filters.project_id or "", "status": filters.status or "",
             "automation_status": filters.automation_status or "", "priority": filters.priority or "",
             "layer": filters.layer or "", "tag": filters.tags[0] if filters.tags else "",
             "section_id": filters.section_id or "", "sub": "1" if filters.include_subsections else ""}
    return render(request, "runs/pick.html", status_code=status_code, active_nav="runs", run=run,
                  cases=rows, total=total, shown=len(rows), already=already, projects=projects,
                  environments=environments, form=form, errors=errors or {}, query=query,
                  milestones=[m for m in milestones if not form["project_id"] or m.project_id == form["project_id"]],
                  statuses=STATUSES, automation=AUTOMATION, priorities=PRIORITIES, layers=LAYERS,
                  filtered=any(v for k, v in query.items() if k != "project_id" or run is None))


@get("/runs/new")
async def new_run_page(request: AnyRequest, db: DatabaseDep) -> Template:
    return await _picker(db, request)


async def _chosen_cases(db: Database, request: AnyRequest, single: dict[str, str],
                        multi: dict[str, list[str]]) -> list[str]:
    if single.get("all_matching"):
        filters = _filters_from(single, "f_")
        return (await case_search.matching_ids(db, tenant_of(request), filters))[:MAX_CASES]
    return list(dict.fromkeys(multi.get("case_ids", [])))


@post("/runs/new", status_code=303)
async def create_run(request: AnyRequest, db: DatabaseDep) -> Template | Redirect:
    single, multi = await form_of(request)
    name, project_id = single.get("name", ""), single.get("project_id", "")
    environment, milestone_id = single.get("environment", ""), single.get("milestone_id", "")
    form = {"name": name, "project_id": project_id, "environment": environment,
            "case_ids": multi.get("case_ids", []), "all_matching": bool(single.get("all_matching")),
            "milestone_id": milestone_id}
    errors: dict[str, str] = {}
    if not name.strip():
        errors["name"] = "Give the run a name."
    elif len(name) > 200:
        errors["name"] = "At most 200 characters."
    if not project_id:
        errors["project_id"] = "Choose a project."
    if len(environment) > 100:
        errors["environment"] = "At most 100 characters."
    filters = _filters_from(single, "f_")
    if errors:
        return await _picker(db, request, form=form, errors=errors, status_code=400, filters=filters)
    case_ids = await _chosen_cases(db, request, single, multi)
    try:
        run = await run_service.create_run(db, tenant_of(request), RunCreate(
            name=name.strip(), project_id=project_id,
            environment=environment.strip() or None, test_case_ids=case_ids,
            milestone_id=milestone_id or None))
    except DomainError as exc:
        field = {"test_case_ids": "case_ids"}.get(exc.field or "", exc.field or "name")
        return await _picker(db, request, form=form, errors={field: exc.detail}, status_code=400, filters=filters)
    return done(request, f"/runs/{run.id}", f"Run “{run.name}” created with {run.counts.total} cases.")


@get("/runs/{run_id:str}/add")
async def add_cases_page(request: AnyRequest, db: DatabaseDep, run_id: str) -> Template:
    return await _picker(db, request, run=await _run_or_404(db, request, run_id))


@post("/runs/{run_id:str}/add", status_code=303)
async def add_cases(request: AnyRequest, db: DatabaseDep, run_id: str) -> Template | Redirect:
    run = await _run_or_404(db, request, run_id)
    single, multi = await form_of(request)
    case_ids = await _chosen_cases(db, request, single, {**multi})
    if not case_ids:
        return await _picker(db, request, run=run,
                             errors={"case_ids": "Tick at least one case, or “all matching”."},
                             status_code=400, filters=_filters_from(single, "f_"))
    try:
        async with db.transaction() as tx:
            added = await run_service.add_cases_to_run(tx, tenant_of(request), run.id, case_ids)
    except DomainError as exc:
        return await _picker(db, request, run=run, errors={"case_ids": exc.detail}, status_code=400,
                             filters=_filters_from(single, "f_"))
    return done(request, f"/runs/{run.id}", f"{added} case{'s' if added != 1 else ''} added to the run.")


@post("/runs/{run_id:str}/bulk", status_code=303)
async def bulk_results(request: AnyRequest, db: DatabaseDep, config: ConfigDep, run_id: str) -> Redirect:
    """The run page's selection: assign the ticked results to someone (or nobody), or remove them."""
    run = await _run_or_404(db, request, run_id)
    single, multi = await form_of(request)
    result_ids = list(dict.fromkeys(multi.get("result_ids", [])))
    back = f"/runs/{run.id}" + (("?" + single["back"]) if single.get("back") else "")
    if not result_ids:
        return done(request, back, "Select at least one result first.", "error")
    tenant = tenant_of(request)
    try:
        if single.get("action") == "remove":
            rows = await db.fetch_all(
                "SELECT test_case_id FROM test_results WHERE run_id = ? AND tenant_id = ? "
                "AND id IN (SELECT value FROM json_each(?))", (run.id, tenant, json.dumps(result_ids)))
            async with db.transaction() as tx:
                removed = await run_service.remove_cases_from_run(tx, tenant, run.id,
                                                                  [r["test_case_id"] for r in rows])
            return done(request, back, f"{removed} result{'s' if removed != 1 else ''} removed from the run.")
        assignee = single.get("assignee_id") or None
        count = await executions.assign_results(db, tenant, run.id, result_ids, assignee,
                                                config=config)
    except DomainError as exc:
        return done(request, back, exc.detail, "error")
    who = "nobody" if assignee is None else "the chosen tester"
    return done(request, back, f"{count} result{'s' if count != 1 else ''} assigned to {who}.")


@get("/web/attachments/{attachment_id:str}")
async def download_attachment(request: AnyRequest, attachment_id: str) -> Response[Any]:
    """The API's download for a signed-in user: same checks, same defensive headers, and the same
    302 to a short-lived presigned URL when ``attachments.s3_presigned_seconds`` is set."""
    state = app_state(request)
    try:
        stored = await attachment_service.open_attachment(
            state.db, tenant_of(request), attachment_id, state.attachment_store,
            redirect_seconds=int(state.config.get("attachments.s3_presigned_seconds")))
    except NotFound as exc:
        raise not_found("attachment") from exc
    if stored.redirect:
        return Redirect(stored.redirect, status_code=302, headers={"Cache-Control": "private, no-store"})
    return attachment_file(stored)


def router() -> Router:
    return Router(path="/", route_handlers=[list_runs, new_run_page, create_run, run_page, complete_run,
                                            add_cases_page, add_cases, bulk_results, download_attachment,
                                            edit_run_page, edit_run, rerun],
                  guards=[page_guard], include_in_schema=False)
