"""Test cases: searchable list, case page (highlighted Gherkin, tickets, history), create and edit forms.

Every write goes through tms.library.cases.service, so codes, defaults and Gherkin validation are the API's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode

from litestar import Router, get, post
from litestar.response import Redirect, Template
from markupsafe import Markup, escape

from tms.attachments import service as attachment_service
from tms.db import Database
from tms.errors import DomainError, NotFound
from tms.http.pages import AnyRequest, convert, done, form_of, not_found, page_numbers, render, tenant_of
from tms.http.paging import page_offset
from tms.library.cases import form as case_form
from tms.library.cases import history as case_history
from tms.library.cases import search as case_search
from tms.library.cases import service as case_service
from tms.library.cases import update as case_update
from tms.library.cases.form import SOURCES
from tms.library.cases.models import CaseCreate, CaseUpdate
from tms.library.cases.review import service as review_service
from tms.library.comments.web import thread_context
from tms.library.fields import service as field_service
from tms.library.fields import values as field_values
from tms.library.gherkin.html import error_lines, highlight
from tms.library.gherkin.shared import shared_line_numbers
from tms.library.projects import service as project_service
from tms.library.sections import service as section_service
from tms.library.sections.models import Section
from tms.library.shared_steps import service as shared_service
from tms.state import DatabaseDep
from tms.team.audit import service as audit
from tms.team.signin.session import page_guard

PAGE_SIZE = 50
STATUSES = ("DRAFT", "READY", "DEPRECATED")
AUTOMATION = ("MANUAL", "IN_PROGRESS", "AUTOMATED", "FLAKY", "ARCHIVED")
PRIORITIES = ("LOW", "MEDIUM", "HIGH", "CRITICAL")
LAYERS = ("UI", "API", "INTEGRATION", "UNIT")
CHOICES: dict[str, Any] = {"statuses": STATUSES, "automation": AUTOMATION, "priorities": PRIORITIES, "layers": LAYERS,
           "sources": SOURCES}
EXAMPLE = """Feature: Checkout

  Scenario: Pay with a saved card
    Given a signed-in customer with a saved card
    When they pay for their cart
    Then the order is confirmed
"""


def _choice(value: str | None, allowed: tuple[str, ...]) -> str | None:
    """A filter value from the query string; anything unknown is ignored rather than an error page."""
    return value if value in allowed else None


PAGE_SIZES = (25, 50, 100, 200)
_FIELD_KEY = re.compile(r"^[a-z0-9_]{1,50}$")
SORT_COLUMNS = {"code": "Code", "title": "Title", "status": "Status", "automation_status": "Automation",
                "priority": "Priority", "layer": "Layer", "updated_at": "Updated"}


@dataclass(frozen=True)
class ListView:
    """The cases page's state, all of it in the URL so a filtered view can be bookmarked and shared."""

    params: dict[str, Any]
    query: case_search.CaseQuery
    limit: int
    offset: int

    def url(self, **changes: Any) -> str:
        """This view's URL with some parameters changed (None removes one); the page restarts at 0."""
        params = {k: v for k, v in self.params.items() if k != "offset"}
        params.update(changes)
        pairs = [(k, item) for k, v in params.items() if v not in (None, "", [], ())
                 for item in (v if isinstance(v, list) else [v])]
        return "/cases" + ("?" + urlencode(pairs) if pairs else "")

    def sort_url(self, column: str) -> str:
        descending = self.query.sort == column and not self.query.descending
        return self.url(sort=column, order="desc" if descending else None)

    @property
    def query_string(self) -> str:
        return self.url(offset=None).removeprefix("/cases").removeprefix("?")


def list_view(request: AnyRequest) -> ListView:
    return view_from_query(str(request.url.query or ""))


def view_from_query(query_string: str) -> ListView:
    """Reads the filters from a query string; anything unknown is ignored rather than an error page."""
    parsed = parse_qs(query_string)

    def get(key: str) -> str | None:
        values = parsed.get(key)
        return values[-1] if values else None

    tags = [t.strip()[:100] for value in parsed.get("tag", []) for t in value.split(",")]
    tags = [t for t in tags if t][:20]
    sort = get("sort") or ""
    sort = sort if sort in SORT_COLUMNS else "created_at"
    order = "asc" if get("order") == "asc" else ("desc" if get("order") == "desc" or sort == "created_at" else "asc")
    try:
        limit = int(get("limit") or PAGE_SIZE)
        offset = page_offset(int(get("offset") or 0))
    except ValueError:
        limit, offset = PAGE_SIZE, 0
    limit = limit if limit in PAGE_SIZES else PAGE_SIZE
    params: dict[str, Any] = {
        "q": (get("q") or "").strip()[:200], "project_id": get("project_id") or "",
        "status": _choice(get("status"), STATUSES) or "", "priority": _choice(get("priority"), PRIORITIES) or "",
        "automation_status": _choice(get("automation_status"), AUTOMATION) or "",
        "layer": _choice(get("layer"), LAYERS) or "", "tag": tags, "section_id": get("section_id") or "",
        "sub": "1" if get("sub") == "1" else "", "sort": "" if sort == "created_at" else sort,
        "order": "" if (sort == "created_at" and order == "desc") or (sort != "created_at" and order == "asc")
        else order, "limit": "" if limit == PAGE_SIZE else str(limit), "offset": offset or "",
    }
    # custom fields: `cf.<key>=value` filters and the columns shown (`cols`, keys)
    fields = {name[3:]: values[-1].strip()[:200] for name, values in parsed.items()
              if name.startswith("cf.") and _FIELD_KEY.match(name[3:]) and values[-1].strip()}
    fields = dict(sorted(fields.items())[:20])
    params.update({f"cf.{key}": value for key, value in fields.items()})
    cols = [c.strip() for value in parsed.get("cols", []) for c in value.split(",") if _FIELD_KEY.match(c.strip())]
    params["cols"] = list(dict.fromkeys(cols))[:20]
    query = case_search.CaseQuery(
        project_id=params["project_id"] or None, status=params["status"] or None,
        priority=params["priority"] or None, automation_status=params["automation_status"] or None,
        layer=params["layer"] or None, q=params["q"] or None, tags=tuple(tags),
        section_id=params["section_id"] or None, include_subsections=params["sub"] == "1",
        sort=sort, descending=order == "desc", fields=tuple((key, (value,)) for key, value in fields.items()),
    )
    return ListView(params, query, limit, offset)


def tree_html(sections: list[Any], selected: str | None) -> Markup:
    """The section tree as nested lists, built here rather than by a recursive template macro: a
    2,000-section tree is one string join instead of thousands of macro calls. Names are escaped."""
    parents = {s.id: s.parent_id for s in sections}
    opened: set[str] = set()
    node = selected
    while node and node not in opened:  # the tree opens down to the selected section
        opened.add(node)
        node = parents.get(node)
    has_children = {s.parent_id for s in sections if s.parent_id}
    out: list[str] = []
    stack: list[str] = []  # ids of the open <details> from the root down
    for s in sections:
        while stack and stack[-1] != s.parent_id:
            stack.pop()
            out.append("</ul></details></li>")
        current = ' aria-current="page"' if s.id == selected else ""
        link = (f'<a href="/cases?project_id={escape(s.project_id)}&amp;section_id={escape(s.id)}&amp;sub=1" '
                f'class="tree-link"{current}><span class="tree-name">{escape(s.name)}</span> '
                f'<span class="count" title="{s.case_count} here, {s.subtree_case_count} with subsections">'
                f"{s.subtree_case_count}</span></a>")
        if s.id in has_children:
            is_open = " open" if s.id in opened or s.depth == 0 else ""
            out.append(f'<li data-section-id="{escape(s.id)}"><details{is_open}><summary>{link}</summary><ul>')
            stack.append(s.id)
        else:
            out.append(f'<li data-section-id="{escape(s.id)}"><span class="tree-leaf">{link}</span></li>')
    out.extend("</ul></details></li>" for _ in stack)
    return Markup("".join(out))  # noqa: S704 - every value interpolated above is escaped


def section_options(pickable: list[tuple[str, list[tuple[str, str]]]], *, prefix: str = "",
                    selected: str | None = None, only_project: str | None = None, grouped: bool = True) -> Markup:
    """<option>s of a section picker, built once per page (the tree's sections can be thousands)."""
    out: list[str] = []
    for project_name, options in pickable:
        if only_project is not None and project_name != only_project:
            continue
        if grouped:
            out.append(f'<optgroup label="{escape(project_name)}">')
        for section_id, label in options:
            chosen = " selected" if section_id == selected else ""
            text = label if grouped else f"{project_name} \u203a {label.strip(chr(0x2003))}"
            out.append(f'<option value="{escape(prefix + section_id)}"{chosen}>{escape(text)}</option>')
        if grouped:
            out.append("</optgroup>")
    return Markup("".join(out))  # noqa: S704 - every value interpolated above is escaped


@get("/")
async def list_cases(request: AnyRequest, db: DatabaseDep) -> Template:
    tenant = tenant_of(request)
    view = list_view(request)
    try:
        cases, pagination = await case_search.list_cases(db, tenant, limit=view.limit, offset=view.offset,
                                                          query=view.query)
    except DomainError:
        cases, pagination = [], None
    projects = await project_service.list_projects(db, tenant)
    tree_project = next((p for p in projects if p.id == view.query.project_id), None)
    if tree_project is None and not view.query.project_id:
        tree_project = next((p for p in projects if p.active), projects[0] if projects else None)
    sections: list[Section] = []
    unfiled, in_project = 0, 0
    if tree_project is not None:
        sections, unfiled, in_project = await section_service.tree(db, tenant, tree_project.id)
    all_sections = await section_service.pickable(db, tenant, projects)
    fields = [f for f in (await field_service.fields_of(db, tenant, tree_project.id if tree_project else None))
              .values() if not f.retired]
    columns = [f for f in fields if f.key in view.params["cols"]]
    total = pagination.total if pagination else 0
    filtered = any(v for k, v in view.params.items() if k not in ("sort", "order", "limit", "offset", "cols"))
    return render(
        request, "cases/list.html", active_nav="cases", cases=cases, view=view, query=view.params,
        projects=projects, project_names={p.id: p.name for p in projects}, tree_project=tree_project,
        tree=tree_html(sections, view.query.section_id), unfiled=unfiled, in_project=in_project,
        section_names={s.id: s.name for s in sections},
        move_options=section_options(all_sections, prefix="move:", grouped=False),
        parent_options=section_options(all_sections, selected=view.query.section_id, grouped=False,
                                       only_project=tree_project.name if tree_project else ""),
        pager=page_numbers(total, view.limit, view.offset), pager_query=view.query_string,
        filtered=filtered, page_sizes=PAGE_SIZES, sort_columns=SORT_COLUMNS, list_fields=fields,
        field_columns=columns, **CHOICES,
    )


async def _form_fields(db: Database, request: AnyRequest, form: dict[str, str], multi: dict[str, list[str]],
                       data: dict[str, Any], errors: dict[str, str]) -> dict[str, Any]:
    """Adds the `cf.<key>` inputs of the chosen project's active fields to ``data`` as ``custom_fields``;
    returns the form as a re-rendered page shows it (a multiselect's ticks as a list)."""
    fields = await field_service.fields_of(db, tenant_of(request), form.get("project_id") or None)
    values, field_errors = field_values.values_from_form(fields, form, multi)
    data["custom_fields"] = values
    errors.update(field_errors)
    return {**form, **field_values.form_values(fields, {k: v for k, v in values.items() if isinstance(v, list)})}


async def _form_page(db: Database, request: AnyRequest, *, case: Any = None, form: dict[str, Any],
                     errors: dict[str, str], status_code: int = 200) -> Template:
    tenant = tenant_of(request)
    projects = await project_service.list_projects(db, tenant)
    fields = await field_service.fields_of(db, tenant, form.get("project_id") or None)
    gherkin_errors: list[tuple[int | None, str]] = []
    if "bdd_content" in errors:
        gherkin_errors = error_lines(errors["bdd_content"])
    bad_lines = {line for line, _ in gherkin_errors if line}
    preview = highlight(form.get("bdd_content", "")) if bad_lines else []
    pickable = await section_service.pickable(db, tenant, projects)
    # the editor offers the names of the case's project's shared steps (`* shared: <name>`)
    shared_names = (await shared_service.names(db, tenant, form["project_id"])
                    if form.get("project_id") else [])
    return render(request, "cases/form.html", status_code=status_code, active_nav="cases", case=case,
                  shared_names=shared_names,
                  form=form, errors=errors, projects=projects, pickable=pickable, gherkin_errors=gherkin_errors,
                  bad_lines=bad_lines, preview=preview, custom_fields=[f for f in fields.values() if not f.retired],
                  **CHOICES)


@get("/new")
async def new_case_page(request: AnyRequest, db: DatabaseDep) -> Template:
    active = await project_service.get_active_project(db, tenant_of(request))
    form = {"bdd_content": EXAMPLE, "project_id": active.id if active else "", "status": "DRAFT",
            "priority": "MEDIUM", "automation_status": "MANUAL",
            "section_id": request.query_params.get("section_id") or ""}
    return await _form_page(db, request, form=form, errors={})


@post("/new", status_code=303)
async def create_case(request: AnyRequest, db: DatabaseDep) -> Template | Redirect:
    form, multi = await form_of(request)
    data, errors = case_form.case_data(form)
    shown = await _form_fields(db, request, form, multi, data, errors)
    body, errors2 = convert(CaseCreate, data)
    errors = case_form.humane_case_errors({**errors2, **errors})
    if body is not None and not errors:
        try:
            case = await case_service.create_case(db, tenant_of(request), body)
        except DomainError as exc:
            errors = {exc.field or "title": exc.detail}
        else:
            return done(request, f"/cases/{case.code}", f"Test case {case.code} created.")
    return await _form_page(db, request, form=shown, errors=errors, status_code=400)


async def _case_or_404(db: Database, request: AnyRequest, case_id: str) -> Any:
    try:
        return await case_service.get_case(db, tenant_of(request), case_id)
    except NotFound as exc:
        raise not_found("test case") from exc


@get("/{case_id:str}")
async def case_page(request: AnyRequest, db: DatabaseDep, case_id: str, comments_offset: int = 0) -> Template:
    return await render_case_page(db, request, case_id, comments_offset=comments_offset)


async def render_case_page(db: Database, request: AnyRequest, case_id: str, *,
                           review_form: dict[str, str] | None = None, review_errors: dict[str, str] | None = None,
                           status_code: int = 200, comments_offset: int = 0) -> Template:
    """The case page; the review forms (tms.library.cases.review.web) re-render it with their input and errors."""
    tenant = tenant_of(request)
    case = await _case_or_404(db, request, case_id)
    project = None
    if case.project_id:
        try:
            project = await project_service.get_project(db, tenant, case.project_id)
        except NotFound:
            project = None
    history = await case_service.result_history(db, tenant, case.id)
    retest = await case_service.retest_flag(db, tenant, case.id)
    versions, _ = await case_history.list_versions(db, tenant, case.id, limit=5)
    projects = await project_service.list_projects(db, tenant)
    pickable = [g for g in await section_service.pickable(db, tenant, projects) if project and g[0] == project.name]
    section_path = await section_service.path_names(db, tenant, case.section_id)
    changes, _, _, _ = await audit.list_entries(db, tenant, entity_type="case", entity_id=case.id, limit=20)
    fields = await field_service.fields_of(db, tenant, case.project_id)
    shown: list[tuple[Any, Any]] = [(f, case.custom_fields.get(f.key)) for f in fields.values()
                                    if not f.retired or f.key in case.custom_fields]
    shown += [(None, case.custom_fields[key]) for key in case.custom_fields if key not in fields]
    people, reviewers = await review_service.team(db, tenant)
    # shown with its shared steps expanded, their lines marked
    text = await shared_service.expanded_case_text(db, tenant, case.project_id, case.bdd_content) or ""
    attachments = await attachment_service.case_attachments(db, tenant, case.id)
    return render(request, "cases/detail.html", status_code=status_code, active_nav="cases", case=case,
                  project=project, field_values=shown, attachments=attachments,
                  lines=highlight(text), shared_lines=shared_line_numbers(text), history=history, retest=retest,
                  versions=versions, pickable=pickable, section_path=section_path, changes=changes, people=people,
                  reviewers=reviewers, review_form=review_form or {}, review_errors=review_errors or {}, **CHOICES,
                  **await thread_context(db, request, "case", case.id, comments_offset))


@get("/{case_id:str}/edit")
async def edit_case_page(request: AnyRequest, db: DatabaseDep, case_id: str) -> Template:
    case = await _case_or_404(db, request, case_id)
    fields = await field_service.fields_of(db, tenant_of(request), case.project_id)
    return await _form_page(db, request, case=case, form=case_form.form_from_case(case, fields), errors={})


@post("/{case_id:str}/edit", status_code=303)
async def edit_case(request: AnyRequest, db: DatabaseDep, case_id: str) -> Template | Redirect:
    case = await _case_or_404(db, request, case_id)
    form, multi = await form_of(request)
    data, errors = case_form.case_data(form)
    shown = await _form_fields(db, request, form, multi, data, errors)
    data.setdefault("code", case.code)
    body, errors2 = convert(CaseUpdate, data)
    errors = case_form.humane_case_errors({**errors2, **errors})
    if body is not None and not errors:
        try:
            updated = await case_update.update_case(db, tenant_of(request), case.id, body)
        except NotFound as exc:
            if exc.field not in ("project_id", "section_id"):
                raise not_found("test case") from exc
            errors = {"project_id": exc.detail}
        except DomainError as exc:
            errors = {exc.field or "title": exc.detail}
        else:
            return done(request, f"/cases/{updated.code}", f"Test case {updated.code} saved.")
    return await _form_page(db, request, case=case, form=shown, errors=errors, status_code=400)


@post("/{case_id:str}/status", status_code=303)
async def change_status(request: AnyRequest, db: DatabaseDep, case_id: str) -> Redirect:
    """The quick status / automation-status change on the case page."""
    case = await _case_or_404(db, request, case_id)
    form, _ = await form_of(request)
    changes = {key: form[key] for key in ("status", "automation_status") if form.get(key)}
    body, _ = convert(CaseUpdate, changes)
    if body is None or not changes:
        return done(request, f"/cases/{case.code}", "Choose a listed status.", "error")
    try:
        await case_update.update_case(db, tenant_of(request), case.id, body)
    except DomainError as exc:  # READY refused under the project's require_review
        return done(request, f"/cases/{case.code}", exc.detail, "error")
    words = ", ".join(f"{k.replace('_', ' ')} {v.replace('_', ' ').lower()}" for k, v in changes.items())
    return done(request, f"/cases/{case.code}", f"{case.code}: {words}.")


def router() -> Router:
    return Router(path="/cases", route_handlers=[list_cases, new_case_page, create_case, case_page,
                                                 edit_case_page, edit_case, change_status],
                  guards=[page_guard], include_in_schema=False)


