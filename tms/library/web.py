"""The organised library's pages: sections, bulk actions, import (with a preview) and export, versions.

Every write goes through the services (tms.library.sections.service, case_bulk, case_io, cases), so the
rules, versions and audit entries are the API's.
"""

from __future__ import annotations

import itertools
from typing import Any

import msgspec
from litestar import Router, get, post
from litestar.datastructures import UploadFile
from litestar.response import Redirect, Stream, Template

from tms.db import Database
from tms.errors import DomainError, NotFound
from tms.http.pages import AnyRequest, convert, done, form_of, not_found, render, tenant_of, user_of
from tms.library.cases import bulk as case_bulk
from tms.library.cases import history as case_history
from tms.library.cases import search as case_search
from tms.library.cases import service as case_service
from tms.library.cases import update as case_update
from tms.library.cases.diff import MAX_DIFF_ROWS, cached_diff
from tms.library.cases.models import CaseUpdate
from tms.library.cases.web import view_from_query
from tms.library.fields import service as field_service
from tms.library.fields import values as field_values
from tms.library.imports import service as import_previews
from tms.library.projects import service as project_service
from tms.library.sections import service as section_service
from tms.library.sections.models import SectionCreate, SectionUpdate
from tms.library.shared_steps import service as shared_service
from tms.library.transfer import export as case_export
from tms.library.transfer import service as case_io
from tms.library.transfer.csvfile import MAX_IMPORT_BYTES
from tms.state import DatabaseDep, app_state
from tms.team.signin.session import page_guard

# ---------------------------------------------------------------------------------------------- sections


@post("/sections", status_code=303)
async def create_section(request: AnyRequest, db: DatabaseDep) -> Redirect:
    form, _ = await form_of(request)
    data = {"project_id": form.get("project_id", ""), "name": form.get("name", "").strip(),
            "parent_id": form.get("parent_id") or None}
    body, errors = convert(SectionCreate, data)
    back = f"/cases?project_id={data['project_id']}"
    if body is None:
        return done(request, back, f"Section not created: {next(iter(errors.values()))}", "error")
    try:
        section = await section_service.create_section(db, tenant_of(request), body)
    except DomainError as exc:
        return done(request, back, f"Section not created: {exc.detail}", "error")
    return done(request, f"{back}&section_id={section.id}&sub=1", f"Section “{section.name}” created.")


async def _section_page(db: Database, request: AnyRequest, section_id: str, form: dict[str, str] | None = None,
                        errors: dict[str, str] | None = None, status_code: int = 200) -> Template:
    tenant = tenant_of(request)
    try:
        section = await section_service.get_section(db, tenant, section_id)
    except NotFound as exc:
        raise not_found("section") from exc
    sections, _, _ = await section_service.tree(db, tenant, section.project_id)
    inside = {s.id for s in sections if s.id == section.id}
    for s in sections:  # its own subtree cannot be its new parent
        if s.parent_id in inside:
            inside.add(s.id)
    parents = [(s.id, "\u2003" * s.depth + s.name) for s in sections if s.id not in inside]
    form = form or {"name": section.name, "description": section.description or "",
                    "parent_id": section.parent_id or "", "position": str(section.position)}
    return render(request, "cases/section.html", status_code=status_code, active_nav="cases", section=section,
                  parents=parents, form=form, errors=errors or {},
                  path=await section_service.path_names(db, tenant, section.id))


@get("/sections/{section_id:str}")
async def section_page(request: AnyRequest, db: DatabaseDep, section_id: str) -> Template:
    return await _section_page(db, request, section_id)


@post("/sections/{section_id:str}", status_code=303)
async def update_section(request: AnyRequest, db: DatabaseDep, section_id: str) -> Template | Redirect:
    form, _ = await form_of(request)
    data: dict[str, Any] = {"name": form.get("name", "").strip(), "description": form.get("description") or None,
                            "parent_id": form.get("parent_id") or None}
    try:
        data["position"] = int(form.get("position") or 0)
    except ValueError:
        return await _section_page(db, request, section_id, form, {"position": "Write a whole number."}, 400)
    body, errors = convert(SectionUpdate, data)
    if body is not None:
        try:
            section = await section_service.update_section(db, tenant_of(request), section_id, body)
        except NotFound as exc:
            if exc.field is None:
                raise not_found("section") from exc
            errors = {exc.field: exc.detail}
        except DomainError as exc:
            errors = {exc.field or "name": exc.detail}
        else:
            return done(request, f"/cases?project_id={section.project_id}&section_id={section.id}&sub=1",
                        f"Section “{section.name}” saved.")
    return await _section_page(db, request, section_id, form, errors, 400)


@post("/sections/{section_id:str}/delete", status_code=303)
async def delete_section(request: AnyRequest, db: DatabaseDep, section_id: str) -> Redirect:
    tenant = tenant_of(request)
    try:
        section = await section_service.get_section(db, tenant, section_id)
        await section_service.delete_section(db, tenant, section_id)
    except NotFound as exc:
        raise not_found("section") from exc
    except DomainError as exc:
        return done(request, f"/cases/sections/{section_id}", exc.detail, "error")
    moved = section.case_count
    return done(request, f"/cases?project_id={section.project_id}",
                f"Section “{section.name}” deleted; its {moved} case{'s' if moved != 1 else ''} and subsections "
                "moved one level up.")


# ---------------------------------------------------------------------------------------------- bulk


@post("/bulk", status_code=303)
async def bulk(request: AnyRequest, db: DatabaseDep) -> Template | Redirect:
    tenant = tenant_of(request)
    form, multi = await form_of(request)
    back = "/cases" + (f"?{form['filter']}" if form.get("filter") else "")
    action, _, value = (form.get("op") or "").partition(":")
    if action in ("add_tag", "remove_tag"):
        value = form.get("tag", "")
    if action not in case_bulk.ACTIONS:
        return done(request, back, "Choose an action for the selected cases.", "error")
    all_matching = form.get("all_matching") == "1"
    if all_matching:
        view = view_from_query(form.get("filter", ""))
        ids = await case_search.matching_ids(db, tenant, view.query)
    else:
        ids = list(dict.fromkeys(multi.get("ids", [])))
    if not ids:
        return done(request, back, "Select at least one test case (or “All matching”).", "error")
    if (action == "delete" or all_matching) and form.get("confirmed") != "1":
        fields = [(k, v) for k, values in multi.items() if k not in ("confirmed",) for v in values]
        return render(request, "cases/bulk_confirm.html", active_nav="cases", count=len(ids), action=action,
                      value=value, fields=fields, back=back)
    try:
        changed = await case_bulk.apply(db, tenant, ids, action, value, app_state(request).attachment_store)
    except DomainError as exc:
        return done(request, back, exc.detail, "error")
    words = {"delete": "deleted", "clone": "cloned", "move": "moved", "add_tag": "tagged", "remove_tag": "untagged"}
    verb = words.get(action, "changed")
    return done(request, back, f"{changed} of {len(ids)} test case{'s' if len(ids) != 1 else ''} {verb}.")


# ---------------------------------------------------------------------------------------------- export


@get("/export")
async def export(request: AnyRequest, db: DatabaseDep) -> Stream | Redirect:
    tenant = tenant_of(request)
    view = view_from_query(str(request.url.query or ""))
    project_id = view.query.project_id
    try:
        await case_io.check_project(db, tenant, project_id)
    except DomainError:
        return done(request, "/cases", "Choose a project to export.", "error")
    assert project_id is not None
    filtered = any(v for k, v in view.params.items() if k not in ("project_id", "sort", "order", "limit", "offset"))
    return Stream(case_export.export_csv(db, tenant, project_id, view.query if filtered else None),
                  media_type="text/csv",
                  headers={"Content-Disposition": 'attachment; filename="cases.csv"'})


# ---------------------------------------------------------------------------------------------- import


async def _import_form(db: Database, request: AnyRequest, form: dict[str, str], errors: dict[str, str],
                       status_code: int = 200) -> Template:
    projects = await project_service.list_projects(db, tenant_of(request))
    return render(request, "cases/import.html", status_code=status_code, active_nav="cases", projects=projects,
                  form=form, errors=errors, max_mb=MAX_IMPORT_BYTES // (1024 * 1024))


@get("/import")
async def import_page(request: AnyRequest, db: DatabaseDep) -> Template:
    active = await project_service.get_active_project(db, tenant_of(request))
    return await _import_form(db, request, {"project_id": active.id if active else "", "format": "csv"}, {})


@post("/import", status_code=200, request_max_body_size=MAX_IMPORT_BYTES + 64 * 1024)
async def import_preview(request: AnyRequest, db: DatabaseDep) -> Template:
    """Plans the import and shows what it will do; nothing is written until the user confirms."""
    tenant = tenant_of(request)
    raw = await request.form()
    form = {"project_id": str(raw.get("project_id") or ""), "format": str(raw.get("format") or "csv")}
    upload = raw.get("file")
    if not isinstance(upload, UploadFile) or not upload.filename:
        return await _import_form(db, request, form, {"file": "Choose a file to import."}, 400)
    data = await upload.read()
    try:
        result = await case_io.import_cases(db, tenant, form["project_id"] or None, data, form["format"],
                                            dry_run=True)
    except DomainError as exc:
        return await _import_form(db, request, form, {exc.field or "file": exc.detail}, 400)
    # kept in the database, not on this replica's disk: any replica can confirm it
    token = await import_previews.keep(db, tenant, user_of(request).id, data, {**form, "name": upload.filename})
    project = await project_service.get_project(db, tenant, form["project_id"])
    return render(request, "cases/import_preview.html", active_nav="cases", result=result, token=token,
                  project=project, file_name=upload.filename, fmt=form["format"])


@post("/import/confirm", status_code=303)
async def import_confirm(request: AnyRequest, db: DatabaseDep) -> Redirect:
    tenant = tenant_of(request)
    form, _ = await form_of(request)
    token = form.get("token", "")

    def expired() -> Redirect:
        return done(request, "/cases/import", "That preview has expired; upload the file again.", "error")

    # only the user who previewed a file can import it, once
    user_id = user_of(request).id
    taken = await import_previews.take(db, tenant, user_id, token) if import_previews.is_token(token) else None
    if taken is None:
        return expired()
    meta, data = taken
    try:
        result = await case_io.import_cases(db, tenant, meta["project_id"], data, meta["format"])
    except DomainError as exc:
        return done(request, "/cases/import", f"Nothing was imported: {exc.detail}", "error")
    return done(request, f"/cases?project_id={meta['project_id']}",
                f"Imported {meta['name']}: {result.created} created, {result.updated} updated, "
                f"{result.unchanged} unchanged, {result.rejected} rejected.",
                "success" if not result.rejected else "warning")


# ---------------------------------------------------------------------------------------------- versions


FIELD_LABELS = {"code": "Code", "title": "Title", "status": "Status", "priority": "Priority", "layer": "Layer",
                "is_e2e": "End-to-end", "automation_status": "Automation", "tags": "Tags", "tickets": "Tickets",
                "section_id": "Section", "project_id": "Project"}


def _field_rows(old: Any, new: Any, labels: dict[str, str]) -> list[tuple[str, str, str]]:
    """The custom fields whose value differs between two versions, as (name, old, new)."""
    keys = sorted(set(old.custom_fields) | set(new.custom_fields), key=lambda k: (k not in labels, labels.get(k, k)))
    rows = []
    for key in keys:
        before, after = old.custom_fields.get(key), new.custom_fields.get(key)
        if before != after:
            rows.append((labels.get(key, key), field_values.cell_of(None, before, {}) or "—",
                         field_values.cell_of(None, after, {}) or "—"))
    return rows


def _shown(version: Any, field: str, names: dict[str, str]) -> str:
    value = getattr(version, field)
    if field == "tags":
        return ", ".join(value) or "—"
    if field == "tickets":
        return ", ".join(f"{t.source} {t.key}" for t in value) or "—"
    if field == "is_e2e":
        return "yes" if value else "no"
    if field in ("section_id", "project_id"):
        return names.get(value, value) if value else "—"
    return str(value) if value is not None else "—"


@get("/{case_id:str}/versions")
async def versions_page(request: AnyRequest, db: DatabaseDep, case_id: str) -> Template:
    tenant = tenant_of(request)
    try:
        case = await case_service.get_case(db, tenant, case_id)
        versions, _ = await case_history.list_versions(db, tenant, case.id, limit=500)
    except NotFound as exc:
        raise not_found("test case") from exc
    numbers = [v.version for v in versions]

    def pick(name: str, default: int) -> int:
        try:
            value = int(request.query_params.get(name) or default)
        except ValueError:
            return default
        return value if value in numbers else default

    newest = numbers[0] if numbers else case.version
    b = pick("b", newest)
    a = pick("a", b - 1 if b - 1 in numbers else b)
    by_number = {v.version: v for v in versions}
    old, new = by_number.get(a), by_number.get(b)
    names: dict[str, str] = {p.id: p.name for p in await project_service.list_projects(db, tenant)}
    for _, options in await section_service.pickable(db, tenant, await project_service.list_projects(db, tenant)):
        names.update({sid: label.strip("\u2003") for sid, label in options})
    fields = []
    labels = {f.key: f.name for f in (await field_service.fields_of(db, tenant, case.project_id)).values()}
    if old and new:
        fields = [(FIELD_LABELS[f], _shown(old, f, names), _shown(new, f, names)) for f in FIELD_LABELS
                  if msgspec.to_builtins(getattr(old, f)) != msgspec.to_builtins(getattr(new, f))]
        fields += _field_rows(old, new, labels)
    diff = None
    if old and new:  # each one's Gherkin with the shared steps it used then: their edits show as changes
        texts = [await shared_service.version_text(v.bdd_content, v.shared_steps) for v in (old, new)]
        diff = await cached_diff(tenant, case.id, a, b, *texts)
    changed_between = {}
    ordered = sorted(versions, key=lambda v: v.version)
    for before, after in itertools.pairwise(ordered):
        changed_between[after.version] = [
            FIELD_LABELS.get(f, "Gherkin") for f in (*FIELD_LABELS, "bdd_content")
            if msgspec.to_builtins(getattr(before, f)) != msgspec.to_builtins(getattr(after, f))]
        changed_between[after.version] += [name for name, _, _ in _field_rows(before, after, labels)]
        if before.shared_steps != after.shared_steps:
            changed_between[after.version].append("Shared steps")
    return render(request, "cases/versions.html", active_nav="cases", case=case, versions=versions, a=a, b=b,
                  fields=fields, diff=diff, max_rows=MAX_DIFF_ROWS, changed=changed_between,
                  gherkin_changed=diff is not None and diff.changed)


@post("/{case_id:str}/move", status_code=303)
async def move_case(request: AnyRequest, db: DatabaseDep, case_id: str) -> Redirect:
    """"Move to…" on the case page: files the case in another section (or in none)."""
    tenant = tenant_of(request)
    form, _ = await form_of(request)
    try:
        case = await case_service.get_case(db, tenant, case_id)
    except NotFound as exc:
        raise not_found("test case") from exc
    body, _ = convert(CaseUpdate, {"section_id": form.get("section_id") or None})
    if body is None:
        return done(request, f"/cases/{case.code}", "Choose a section.", "error")
    try:
        updated = await case_update.update_case(db, tenant, case.id, body)
    except DomainError as exc:
        return done(request, f"/cases/{case.code}", exc.detail, "error")
    where = "no section" if not updated.section_id else "the chosen section"
    return done(request, f"/cases/{updated.code}", f"{updated.code} moved to {where}.")


def router() -> Router:
    return Router(path="/cases", route_handlers=[
        create_section, section_page, update_section, delete_section, bulk, export, import_page, import_preview,
        import_confirm, versions_page, move_case,
    ], guards=[page_guard], include_in_schema=False)
