"""Test cases: searchable list, case page (highlighted Gherkin, tickets, history), create and edit forms.

Every write goes through tms.services.cases, so codes, defaults and Gherkin validation are the API's.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from litestar import Router, get, post
from litestar.response import Redirect, Template

from tms.models.cases import CaseCreate, CaseUpdate
from tms.services import cases as case_service
from tms.services import projects as project_service
from tms.services.errors import DomainError, NotFound
from tms.services.paging import page_offset
from tms.store import case_views
from tms.web.common import AnyRequest, convert, db_of, done, form_of, not_found, page_numbers, render, tenant_of
from tms.web.gherkin_html import error_lines, highlight
from tms.web.session import page_guard

PAGE_SIZE = 50
STATUSES = ("DRAFT", "READY", "DEPRECATED")
AUTOMATION = ("MANUAL", "IN_PROGRESS", "AUTOMATED", "FLAKY", "ARCHIVED")
PRIORITIES = ("LOW", "MEDIUM", "HIGH", "CRITICAL")
LAYERS = ("UI", "API", "INTEGRATION", "UNIT")
SOURCES = ("JIRA", "GITHUB", "GITLAB", "LINEAR", "OTHER")
CHOICES = {"statuses": STATUSES, "automation": AUTOMATION, "priorities": PRIORITIES, "layers": LAYERS,
           "sources": SOURCES}
FILTER_KEYS = ("q", "project_id", "status", "automation_status", "priority", "layer", "tag")
EXAMPLE = """Feature: Checkout

  Scenario: Pay with a saved card
    Given a signed-in customer with a saved card
    When they pay for their cart
    Then the order is confirmed
"""


def _choice(value: str | None, allowed: tuple[str, ...]) -> str | None:
    """A filter value from the query string; anything unknown is ignored rather than an error page."""
    return value if value in allowed else None


@get("/")
async def list_cases(request: AnyRequest, offset: int = 0) -> Template:
    db, tenant = db_of(request), tenant_of(request)
    query = {key: (request.query_params.get(key) or "").strip() for key in FILTER_KEYS}
    filters = case_views.CaseFilters(
        q=query["q"][:200] or None,
        project_id=query["project_id"] or None,
        status=_choice(query["status"], STATUSES),
        automation_status=_choice(query["automation_status"], AUTOMATION),
        priority=_choice(query["priority"], PRIORITIES),
        layer=_choice(query["layer"], LAYERS),
        tag=query["tag"][:100] or None,
    )
    offset = page_offset(offset)
    rows, total = await case_views.search_cases(db, tenant, filters, limit=PAGE_SIZE, offset=offset)
    projects = await project_service.list_projects(db, tenant)
    cases = [case_service.case_from_row(row) for row in rows]
    retest = {row["id"] for row in rows if row["needs_retest"]}
    return render(request, "cases/list.html", active_nav="cases", cases=cases, query=query, retest=retest,
                  projects=projects, project_names={p.id: p.name for p in projects},
                  pager=page_numbers(total, PAGE_SIZE, offset),
                  pager_query=urlencode({k: v for k, v in query.items() if v}),
                  filtered=any(query.values()), **CHOICES)


def _parse_tickets(text: str) -> tuple[list[dict[str, str]], str | None]:
    """One ticket a line: ``JIRA SHOP-12`` or just ``SHOP-12`` (source OTHER)."""
    tickets = []
    for number, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) == 2 and parts[0].upper() in SOURCES:
            tickets.append({"source": parts[0].upper(), "key": parts[1]})
        elif len(parts) == 1:
            tickets.append({"source": "OTHER", "key": parts[0]})
        else:
            return [], f"Line {number}: write a source and a key, e.g. “JIRA SHOP-12”."
    return tickets, None


def _case_data(form: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The form as a CaseCreate-shaped dict, and errors only the form can make (ticket lines)."""
    tickets, ticket_error = _parse_tickets(form.get("tickets", ""))
    data: dict[str, Any] = {
        "title": form.get("title", "").strip(),
        "bdd_content": form.get("bdd_content", "").replace("\r\n", "\n"),
        "project_id": form.get("project_id") or None,
        "status": form.get("status") or "DRAFT",
        "priority": form.get("priority") or "MEDIUM",
        "layer": form.get("layer") or None,
        "is_e2e": form.get("is_e2e") == "on",
        "automation_status": form.get("automation_status") or "MANUAL",
        "tags": [tag.strip() for tag in form.get("tags", "").split(",") if tag.strip()],
        "tickets": tickets,
    }
    if form.get("code", "").strip():
        data["code"] = form["code"].strip()
    return data, ({"tickets": ticket_error} if ticket_error else {})


def _humane_case_errors(errors: dict[str, str]) -> dict[str, str]:
    if "code" in errors and "regex" in errors["code"]:
        errors["code"] = "A code is capital letters or digits, a dash and a number, e.g. SHOP-12."
    for key in ("status", "priority", "layer", "automation_status"):
        if key in errors:
            errors[key] = "Choose one of the listed values."
    return errors


async def _form_page(request: AnyRequest, *, case: Any = None, form: dict[str, str], errors: dict[str, str],
                     status_code: int = 200) -> Template:
    projects = await project_service.list_projects(db_of(request), tenant_of(request))
    gherkin_errors: list[tuple[int | None, str]] = []
    if "bdd_content" in errors:
        gherkin_errors = error_lines(errors["bdd_content"])
    bad_lines = {line for line, _ in gherkin_errors if line}
    preview = highlight(form.get("bdd_content", "")) if bad_lines else []
    return render(request, "cases/form.html", status_code=status_code, active_nav="cases", case=case,
                  form=form, errors=errors, projects=projects, gherkin_errors=gherkin_errors,
                  bad_lines=bad_lines, preview=preview, **CHOICES)


def _form_from_case(case: Any) -> dict[str, str]:
    return {
        "title": case.title, "bdd_content": case.bdd_content, "project_id": case.project_id or "",
        "code": case.code, "status": case.status, "priority": case.priority, "layer": case.layer or "",
        "is_e2e": "on" if case.is_e2e else "", "automation_status": case.automation_status,
        "tags": ", ".join(case.tags), "tickets": "\n".join(f"{t.source} {t.key}" for t in case.tickets),
    }


@get("/new")
async def new_case_page(request: AnyRequest) -> Template:
    active = await project_service.get_active_project(db_of(request), tenant_of(request))
    form = {"bdd_content": EXAMPLE, "project_id": active.id if active else "", "status": "DRAFT",
            "priority": "MEDIUM", "automation_status": "MANUAL"}
    return await _form_page(request, form=form, errors={})


@post("/new", status_code=303)
async def create_case(request: AnyRequest) -> Template | Redirect:
    form, _ = await form_of(request)
    data, errors = _case_data(form)
    body, errors2 = convert(CaseCreate, data)
    errors = _humane_case_errors({**errors2, **errors})
    if body is not None and not errors:
        try:
            case = await case_service.create_case(db_of(request), tenant_of(request), body)
        except DomainError as exc:
            errors = {exc.field or "title": exc.detail}
        else:
            return done(request, f"/cases/{case.code}", f"Test case {case.code} created.")
    return await _form_page(request, form=form, errors=errors, status_code=400)


async def _case_or_404(request: AnyRequest, case_id: str) -> Any:
    try:
        return await case_service.get_case(db_of(request), tenant_of(request), case_id)
    except NotFound as exc:
        raise not_found("test case") from exc


@get("/{case_id:str}")
async def case_page(request: AnyRequest, case_id: str) -> Template:
    db, tenant = db_of(request), tenant_of(request)
    case = await _case_or_404(request, case_id)
    project = None
    if case.project_id:
        try:
            project = await project_service.get_project(db, tenant, case.project_id)
        except NotFound:
            project = None
    history = await case_views.result_history(db, tenant, case.id)
    retest = await case_views.retest_flag(db, tenant, case.id)
    return render(request, "cases/detail.html", active_nav="cases", case=case, project=project,
                  lines=highlight(case.bdd_content), history=history, retest=retest, **CHOICES)


@get("/{case_id:str}/edit")
async def edit_case_page(request: AnyRequest, case_id: str) -> Template:
    case = await _case_or_404(request, case_id)
    return await _form_page(request, case=case, form=_form_from_case(case), errors={})


@post("/{case_id:str}/edit", status_code=303)
async def edit_case(request: AnyRequest, case_id: str) -> Template | Redirect:
    case = await _case_or_404(request, case_id)
    form, _ = await form_of(request)
    data, errors = _case_data(form)
    data.setdefault("code", case.code)
    body, errors2 = convert(CaseUpdate, data)
    errors = _humane_case_errors({**errors2, **errors})
    if body is not None and not errors:
        try:
            updated = await case_service.update_case(db_of(request), tenant_of(request), case.id, body)
        except NotFound as exc:
            if exc.field != "project_id":
                raise not_found("test case") from exc
            errors = {"project_id": exc.detail}
        except DomainError as exc:
            errors = {exc.field or "title": exc.detail}
        else:
            return done(request, f"/cases/{updated.code}", f"Test case {updated.code} saved.")
    return await _form_page(request, case=case, form=form, errors=errors, status_code=400)


@post("/{case_id:str}/status", status_code=303)
async def change_status(request: AnyRequest, case_id: str) -> Redirect:
    """The quick status / automation-status change on the case page."""
    case = await _case_or_404(request, case_id)
    form, _ = await form_of(request)
    changes = {key: form[key] for key in ("status", "automation_status") if form.get(key)}
    body, _ = convert(CaseUpdate, changes)
    if body is None or not changes:
        return done(request, f"/cases/{case.code}", "Choose a listed status.", "error")
    await case_service.update_case(db_of(request), tenant_of(request), case.id, body)
    words = ", ".join(f"{k.replace('_', ' ')} {v.replace('_', ' ').lower()}" for k, v in changes.items())
    return done(request, f"/cases/{case.code}", f"{case.code}: {words}.")


def router() -> Router:
    return Router(path="/cases", route_handlers=[list_cases, new_case_page, create_case, case_page,
                                                 edit_case_page, edit_case, change_status],
                  guards=[page_guard], include_in_schema=False)


