"""Failure intelligence pages: run comparison, known issues, quarantine, flaky tests, and the one-click
"make a known issue" of a cluster on the run page. Every write goes through the services (audited)."""

from __future__ import annotations

from typing import Any

from litestar import Router, get, post
from litestar.response import Redirect, Template

from tms.db import Database
from tms.errors import DomainError, InvalidInput, NotFound
from tms.failures import service as failure_service
from tms.failures.flaky import service as flaky_service
from tms.failures.known_issues import service as known_issue_service
from tms.failures.known_issues.models import KnownIssue, KnownIssueCreate, KnownIssueStatus, KnownIssueUpdate
from tms.failures.known_issues.patterns import MAX_PATTERNS_PER_PROJECT, MAX_SUBJECT
from tms.failures.quarantine import service as quarantine_service
from tms.failures.quarantine.models import QuarantineCreate, QuarantineEntry
from tms.http.pages import AnyRequest, convert, done, field_errors, form_of, not_found, render, tenant_of
from tms.library.projects import service as project_service
from tms.runs import service as run_service
from tms.state import ConfigDep, DatabaseDep

FLAKY_PAGE = 100


async def _project(db: Database, request: AnyRequest, project_id: str | None) -> Any:
    """The project named in the query, else the active one, else the first; None when there is none."""
    tenant = tenant_of(request)
    if project_id:
        try:
            return await project_service.get_project(db, tenant, project_id)
        except NotFound as exc:
            raise not_found("project") from exc
    active = await project_service.get_active_project(db, tenant)
    if active is not None:
        return active
    projects = await project_service.list_projects(db, tenant)
    return projects[0] if projects else None


def _clean(form: dict[str, str]) -> dict[str, Any]:
    """Form strings as an API body: blank optional fields are absent, not empty strings."""
    return {key: value.strip() for key, value in form.items() if value.strip()}


# ---- compare ------------------------------------------------------------------------------------

@get("/runs/{run_id:str}/compare")
async def compare_page(request: AnyRequest, db: DatabaseDep, run_id: str, base: str | None = None) -> Template:
    tenant = tenant_of(request)
    try:
        run = await run_service.get_run(db, tenant, run_id)
        comparison = await failure_service.compare(db, tenant, run_id, base or None)
        base_run = await run_service.get_run(db, tenant, comparison.base_run_id) if comparison.base_run_id else None
        same, others = await failure_service.base_candidates(db, tenant, run_id)
    except NotFound as exc:
        raise not_found("run") from exc
    return render(request, "failures/compare.html", active_nav="runs", run=run, base_run=base_run,
                  comparison=comparison, default_base=not base, same_environment=same, other_runs=others)


# ---- known issues -------------------------------------------------------------------------------

async def _known_issues_page(db: Database, request: AnyRequest, project: Any, *, form: dict[str, str] | None = None,
                             errors: dict[str, str] | None = None, status_code: int = 200) -> Template:
    tenant = tenant_of(request)
    issues: list[KnownIssue] = []
    if project is not None:
        issues, _ = await known_issue_service.list_issues(db, tenant, project_id=project.id, limit=500)
    messages = {} if project is None else await failure_service.fingerprint_messages(
        db, tenant, project.id, [i.fingerprint for i in issues if i.fingerprint])
    return render(request, "failures/known_issues.html", status_code=status_code, active_nav="failures",
                  project=project, messages=messages, issues=issues,
                  projects=await project_service.list_projects(db, tenant),
                  form=form or {}, errors=errors or {},
                  pattern_hint=(f"a regular expression (RE2 syntax) over the first {MAX_SUBJECT:,} characters of "
                                "message and stack, e.g. ConnectionError: .*payments (at most "
                                f"{MAX_PATTERNS_PER_PROJECT:,} open patterns per project)"))


@get("/known-issues")
async def known_issues_page(request: AnyRequest, db: DatabaseDep, project_id: str | None = None,
                            fingerprint: str | None = None, run_id: str | None = None) -> Template:
    project = await _project(db, request, project_id)
    return await _known_issues_page(db, request, project, form={"fingerprint": fingerprint or "",
                                                            "run_id": run_id or ""})


@post("/known-issues", status_code=303)
async def create_known_issue(request: AnyRequest, db: DatabaseDep) -> Template | Redirect:
    """The known-issues form, and the run page's one-click "make a known issue" of a cluster."""
    single, _ = await form_of(request)
    project = await _project(db, request, single.get("project_id") or None)
    if project is None:
        raise not_found("project")
    body = _clean({key: single.get(key, "") for key in ("fingerprint", "pattern", "bug_ticket_key",
                                                         "bug_ticket_url", "note")})
    body["project_id"] = project.id
    if "bug_ticket_key" not in body:
        return await _known_issues_page(db, request, project, form=single, status_code=400,
                                        errors={"bug_ticket_key": "This field is required."})
    value, errors = convert(KnownIssueCreate, body)
    if value is not None:
        try:
            issue = await known_issue_service.create(db, tenant_of(request), value,
                                                     run_id=single.get("run_id") or None)
        except DomainError as exc:
            errors = field_errors(exc, "bug_ticket_key")
        else:
            back = single.get("back") or f"/known-issues?project_id={project.id}"
            if not back.startswith("/") or back.startswith("//"):
                back = "/known-issues"
            return done(request, back, f"Known issue {issue.bug_ticket_key} created: matching failures now link to it.")
    return await _known_issues_page(db, request, project, form=single, errors=errors, status_code=400)


@post("/known-issues/{issue_id:str}/status", status_code=303)
async def set_known_issue_status(request: AnyRequest, db: DatabaseDep, issue_id: str) -> Redirect:
    single, _ = await form_of(request)
    status: KnownIssueStatus = "CLOSED" if single.get("status") == "CLOSED" else "OPEN"
    try:
        issue = await known_issue_service.update(db, tenant_of(request), issue_id,
                                                 KnownIssueUpdate(status=status))
    except NotFound as exc:
        raise not_found("known issue") from exc
    except InvalidInput as exc:
        # reopening an issue with a pattern when its project already holds the most it may
        issue = await known_issue_service.get(db, tenant_of(request), issue_id)
        return done(request, f"/known-issues?project_id={issue.project_id}",
                    f"Known issue {issue.bug_ticket_key} not reopened: {exc.detail}", "error")
    return done(request, f"/known-issues?project_id={issue.project_id}",
                f"Known issue {issue.bug_ticket_key} {'closed' if status == 'CLOSED' else 'reopened'}.")


@post("/known-issues/{issue_id:str}/delete", status_code=303)
async def delete_known_issue(request: AnyRequest, db: DatabaseDep, issue_id: str) -> Redirect:
    tenant = tenant_of(request)
    try:
        issue = await known_issue_service.get(db, tenant, issue_id)
        await known_issue_service.delete(db, tenant, issue_id)
    except NotFound as exc:
        raise not_found("known issue") from exc
    return done(request, f"/known-issues?project_id={issue.project_id}", f"Known issue {issue.bug_ticket_key} deleted.")


# ---- quarantine ---------------------------------------------------------------------------------

async def _quarantine_page(db: Database, request: AnyRequest, project: Any, *, form: dict[str, str] | None = None,
                           errors: dict[str, str] | None = None, status_code: int = 200) -> Template:
    tenant = tenant_of(request)
    entries: list[QuarantineEntry] = []
    if project is not None:
        entries, _ = await quarantine_service.list_entries(db, tenant, project_id=project.id, limit=500)
    return render(request, "failures/quarantine.html", status_code=status_code, active_nav="failures",
                  project=project, projects=await project_service.list_projects(db, tenant), entries=entries,
                  form=form or {}, errors=errors or {})


@get("/quarantine")
async def quarantine_page(request: AnyRequest, db: DatabaseDep, project_id: str | None = None,
                          test_case_code: str | None = None, title: str | None = None) -> Template:
    project = await _project(db, request, project_id)
    return await _quarantine_page(db, request, project, form={"test_case_code": test_case_code or "",
                                                          "title": title or ""})


@post("/quarantine", status_code=303)
async def create_quarantine(request: AnyRequest, db: DatabaseDep) -> Template | Redirect:
    single, _ = await form_of(request)
    project = await _project(db, request, single.get("project_id") or None)
    if project is None:
        raise not_found("project")
    body = _clean({key: single.get(key, "") for key in ("test_case_code", "title", "reason", "expires_at")})
    body["project_id"] = project.id
    if "expires_at" in body and len(body["expires_at"]) == 16:  # <input type="datetime-local">, taken as UTC
        body["expires_at"] += ":00Z"
    if "reason" not in body:
        return await _quarantine_page(db, request, project, form=single, errors={"reason": "This field is required."},
                                      status_code=400)
    value, errors = convert(QuarantineCreate, body)
    if value is not None:
        try:
            entry = await quarantine_service.create(db, tenant_of(request), value)
        except DomainError as exc:
            errors = field_errors(exc, "test_case_code")
        else:
            name = entry.test_case_code or entry.title
            note = " (no such test known yet: check the name)" if entry.unknown_test else ""
            return done(request, f"/quarantine?project_id={project.id}", f"{name} quarantined{note}.")
    return await _quarantine_page(db, request, project, form=single, errors=errors, status_code=400)


@post("/quarantine/{entry_id:str}/delete", status_code=303)
async def delete_quarantine(request: AnyRequest, db: DatabaseDep, entry_id: str) -> Redirect:
    single, _ = await form_of(request)
    try:
        await quarantine_service.delete(db, tenant_of(request), entry_id)
    except NotFound as exc:
        raise not_found("quarantine entry") from exc
    project_id = single.get("project_id", "")
    return done(request, f"/quarantine?project_id={project_id}" if project_id else "/quarantine",
                "Quarantine ended: the test's failures count again.")


# ---- flaky ----------------------------------------------------------------------------------------

@get("/flaky")
async def flaky_page(request: AnyRequest, db: DatabaseDep, config: ConfigDep,
                     project_id: str | None = None, runs: int | None = None) -> Template:
    tenant = tenant_of(request)
    project = await _project(db, request, project_id)
    window = max(2, min(runs or config.get("flaky.runs"), flaky_service.MAX_RUNS))
    tests: list[Any] = []
    total = 0
    if project is not None:
        tests, pagination = await flaky_service.list_flaky(db, tenant, project.id, window, FLAKY_PAGE, 0)
        total = pagination.total
    return render(request, "failures/flaky.html", active_nav="failures", project=project, tests=tests, total=total,
                  runs=window, threshold=config.get("flaky.threshold"),
                  projects=await project_service.list_projects(db, tenant))


def router() -> Router:
    from tms.team.signin.session import page_guard

    return Router(path="/", route_handlers=[compare_page, known_issues_page, create_known_issue,
                                            set_known_issue_status, delete_known_issue, quarantine_page,
                                            create_quarantine, delete_quarantine, flaky_page],
                  guards=[page_guard], include_in_schema=False)
