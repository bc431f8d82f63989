"""The custom fields card of a project's settings page: add, rename, reorder, retire or restore.

Admins manage fields (``needs_role("admin")``); every write goes through tms.library.fields.service,
so the rules are the API's. The page itself is tms.library.projects.web.settings_page.
"""

from __future__ import annotations

from typing import Any

from litestar import Router, post
from litestar.response import Redirect, Template

from tms.db import Database
from tms.errors import DomainError, NotFound
from tms.http.pages import AnyRequest, convert, done, form_of, not_found, tenant_of
from tms.library.fields import service as field_service
from tms.library.fields.models import CustomField, CustomFieldCreate, CustomFieldUpdate
from tms.library.fields.values import CHOICES
from tms.library.projects import service as project_service
from tms.library.projects.web import settings_page
from tms.state import DatabaseDep
from tms.team.signin.session import needs_role, page_guard


def _options(text: str) -> list[str]:
    return [line.strip() for line in text.replace(",", "\n").splitlines() if line.strip()]


def _default(kind: str, text: str) -> Any:
    """The default as typed into the form, read as the API would take it (checked by the service)."""
    text = text.strip()
    if not text:
        return None
    if kind == "number":
        try:
            return float(text)
        except ValueError:
            return text  # the service names the field
    if kind == "checkbox":
        return text.lower() in ("true", "yes", "on", "1")
    if kind == "multiselect":
        return _options(text)
    return text


async def _field_or_404(db: Database, request: AnyRequest, field_id: str) -> CustomField:
    try:
        return await field_service.get_field(db, tenant_of(request), field_id)
    except NotFound as exc:
        raise not_found("custom field") from exc


def _back(field_project: str) -> str:
    return f"/projects/{field_project}/edit#fields"


@post("/", status_code=303, **needs_role("admin"))
async def create_field(request: AnyRequest, db: DatabaseDep) -> Template | Redirect:
    form, _ = await form_of(request)
    try:
        project = await project_service.get_project(db, tenant_of(request), form.get("project_id", ""))
    except NotFound as exc:
        raise not_found("project") from exc
    kind = form.get("field_type", "text")
    body, errors = convert(CustomFieldCreate, {
        "project_id": project.id, "key": form.get("field_key", "").strip(), "name": form.get("field_name", "").strip(),
        "type": kind, "entity": form.get("field_entity") or "case", "required": form.get("field_required") == "on",
        "options": _options(form.get("field_options", "")) or None,
        "default": _default(kind, form.get("field_default", "")),
    })
    if body is not None:
        try:
            field = await field_service.create_field(db, tenant_of(request), body)
        except DomainError as exc:
            errors = {exc.field or "key": exc.detail}
        else:
            return done(request, _back(project.id), f"Custom field “{field.name}” added.")
    # the inputs are named field_<name> (the page's project form has its own name)
    errors = {f"field_{name}": message for name, message in errors.items()}
    return await settings_page(db, request, project, status_code=400, field_form=form, field_errors=errors)


@post("/{field_id:str}", status_code=303, **needs_role("admin"))
async def update_field(request: AnyRequest, db: DatabaseDep, field_id: str) -> Redirect:
    field = await _field_or_404(db, request, field_id)
    form, _ = await form_of(request)
    changes: dict[str, Any] = {"name": form.get("name", "").strip(), "required": form.get("required") == "on"}
    if field.type in CHOICES:
        changes["options"] = _options(form.get("options", ""))
    if "default" in form:
        changes["default"] = _default(field.type, form["default"])
    body, errors = convert(CustomFieldUpdate, changes)
    if body is not None:
        try:
            updated = await field_service.update_field(db, tenant_of(request), field.id, body)
        except DomainError as exc:
            errors = {exc.field or "name": exc.detail}
        else:
            return done(request, _back(field.project_id), f"Custom field “{updated.name}” saved.")
    message = "; ".join(f"{name}: {text}" for name, text in errors.items())
    return done(request, _back(field.project_id), f"“{field.name}” was not saved: {message}", "error")


@post("/{field_id:str}/move", status_code=303, **needs_role("admin"))
async def move_field(request: AnyRequest, db: DatabaseDep, field_id: str) -> Redirect:
    field = await _field_or_404(db, request, field_id)
    form, _ = await form_of(request)
    await field_service.swap_position(db, tenant_of(request), field.id,
                                      -1 if form.get("direction") == "up" else 1)
    return done(request, _back(field.project_id), f"“{field.name}” moved.")


@post("/{field_id:str}/retire", status_code=303, **needs_role("admin"))
async def retire_field(request: AnyRequest, db: DatabaseDep, field_id: str) -> Redirect:
    field = await _field_or_404(db, request, field_id)
    await field_service.update_field(db, tenant_of(request), field.id, CustomFieldUpdate(retired=True))
    return done(request, _back(field.project_id),
                f"“{field.name}” is retired: hidden from forms; the values cases hold are kept.")


@post("/{field_id:str}/restore", status_code=303, **needs_role("admin"))
async def restore_field(request: AnyRequest, db: DatabaseDep, field_id: str) -> Redirect:
    field = await _field_or_404(db, request, field_id)
    await field_service.update_field(db, tenant_of(request), field.id, CustomFieldUpdate(retired=False))
    return done(request, _back(field.project_id), f"“{field.name}” is back on the forms.")


def router() -> Router:
    return Router(path="/custom-fields", route_handlers=[create_field, update_field, move_field, retire_field,
                                                         restore_field],
                  guards=[page_guard], include_in_schema=False)
