"""Issue trackers: the inbound webhook, Settings → Integrations, and the "Flag for retest" button.

- ``POST /api/integrations/{id}``: called by GitHub, GitLab or Jira. No session, no Bearer token:
  the tracker's signature (or shared token) is the authentication. 401 before anything is recorded
  when it is missing or wrong; 200 when handled, 202 when received but not about a resolved bug.
- ``/settings/integrations``: list, create (the secret is shown once), details, new secret, delete.
- ``POST /cases/{code}/retest``: flag a case by hand (or clear it) from a case page.
- ``/results/{id}/defect``: "Create issue" for a failed or broken result (the form, prefilled; then the
  tracker's answer: the new key, or why nothing was linked).
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, Router, get, post
from litestar.response import Redirect, Template

from tms.config import Config
from tms.db import Database
from tms.errors import DomainError, NotFound
from tms.failures.retest import service as retest_service
from tms.http.pages import AnyRequest, convert, done, field_errors, form_of, not_found, render, tenant_of
from tms.integrations import KINDS, defects
from tms.integrations import inbound as tracker_calls
from tms.integrations import service as integration_service
from tms.integrations.models import DefectCreate
from tms.state import ConfigDep, DatabaseDep
from tms.team.signin.session import needs_role, page_guard, safe_next

# The secret crosses the redirect in the server-side session and is popped by the next GET, so it is
# displayed exactly once and a reload never shows it again (as with API tokens).
_SHOWN_ONCE_KEY = "new_integration_secret"
# Tracker payloads are a few KB to a few hundred KB (Jira with many custom fields); refuse more.
MAX_INBOUND_BYTES = 2 * 1024 * 1024


@post("/{integration_id:str}", status_code=200, include_in_schema=False)
async def inbound(request: Request[Any, Any, Any], db: DatabaseDep, integration_id: str) -> Response[dict[str, Any]]:
    body = await request.body()
    receipt = await tracker_calls.receive(
        db, integration_id, request.headers, dict(request.query_params), body
    )
    return Response(receipt.body(), status_code=receipt.status_code)


def inbound_router() -> Router:
    return Router(path="/api/integrations", route_handlers=[inbound], include_in_schema=False,
                  request_max_body_size=MAX_INBOUND_BYTES)


def _with_urls(config: Config, row: dict[str, Any]) -> dict[str, Any]:
    item = dict(row)
    item["inbound_url"] = integration_service.inbound_url(str(config.base_url), row["id"])
    item["kind_label"] = integration_service.KIND_LABELS[row["kind"]]
    return item


def _shown_once(request: AnyRequest, integration_id: str | None = None) -> dict[str, Any] | None:
    if request.method != "GET":
        return None
    shown = request.session.get(_SHOWN_ONCE_KEY)
    if not shown or (integration_id is not None and shown.get("id") != integration_id):
        return None
    request.session.pop(_SHOWN_ONCE_KEY, None)
    return shown  # type: ignore[no-any-return]


async def _list_page(db: Database, config: Config, request: AnyRequest, *, form: dict[str, str] | None = None,
                     errors: dict[str, str] | None = None, status_code: int = 200) -> Template:
    rows = await integration_service.list_integrations(db, tenant_of(request))
    shown = _shown_once(request)
    template = render(
        request, "integrations/list.html", status_code=status_code, active_nav="settings",
        settings_nav="integrations", integrations=[_with_urls(config, r) for r in rows], shown=shown,
        form=form or {"kind": "GITHUB"}, errors=errors or {}, kinds=KINDS,
        kind_labels=integration_service.KIND_LABELS,
    )
    if shown:
        template.headers["Cache-Control"] = "no-store"
    return template


@get("/")
async def integrations_page(request: AnyRequest, db: DatabaseDep, config: ConfigDep) -> Template:
    return await _list_page(db, config, request)


@post("/", status_code=303)
async def create_integration(request: AnyRequest, db: DatabaseDep, config: ConfigDep) -> Template | Redirect:
    form, _ = await form_of(request)
    form = {key: form.get(key, "") for key in ("kind", "name", "repository")}
    try:
        created = await integration_service.create_integration(
            db, tenant_of(request), form["kind"], form["name"], form["repository"]
        )
    except DomainError as exc:
        return await _list_page(db, config, request, form=form, errors=field_errors(exc, "name"), status_code=400)
    integration = created.integration
    request.session[_SHOWN_ONCE_KEY] = {"id": integration["id"], "secret": created.secret}
    return done(request, f"/settings/integrations/{integration['id']}",
                f"Integration “{integration['name']}” created. Copy its secret now: it is shown only once.")


async def _detail_page(db: Database, config: Config, request: AnyRequest, integration_id: str, *,
                       form: dict[str, str] | None = None, errors: dict[str, str] | None = None,
                       status_code: int = 200) -> Template:
    try:
        row = await integration_service.get_integration(db, tenant_of(request), integration_id)
    except NotFound as exc:
        raise not_found("integration") from exc
    deliveries = await integration_service.recent_deliveries(db, tenant_of(request), integration_id)
    shown = _shown_once(request, integration_id)
    outbound_form = form or {key: row.get(key) or "" for key in _OUTBOUND_FORM}
    template = render(request, "integrations/detail.html", status_code=status_code, active_nav="settings",
                      settings_nav="integrations", integration=_with_urls(config, row), deliveries=deliveries,
                      shown=shown, form=outbound_form, errors=errors or {},
                      ready=integration_service.outbound_ready(row))
    if shown:
        template.headers["Cache-Control"] = "no-store"
    return template


@get("/{integration_id:str}")
async def integration_page(request: AnyRequest, db: DatabaseDep, config: ConfigDep, integration_id: str) -> Template:
    return await _detail_page(db, config, request, integration_id)


# the outbound settings' form fields (the token is never put back into a form)
_OUTBOUND_FORM = ("api_url", "api_user", "repository", "project_path", "project_key")


@post("/{integration_id:str}/outbound", status_code=303)
async def save_outbound(request: AnyRequest, db: DatabaseDep, config: ConfigDep,
                        integration_id: str) -> Template | Redirect:
    """The tracker API settings. A blank token keeps the stored one; "forget_token" removes it."""
    form, _ = await form_of(request)
    changes: dict[str, str | None] = {key: form[key] for key in _OUTBOUND_FORM if key in form}
    token = form.get("api_token", "").strip()
    if token:
        changes["api_token"] = token
    if form.get("forget_token"):
        changes["api_token"] = None
    try:
        await integration_service.update_integration(db, config, tenant_of(request),
                                                     integration_id, changes)
    except NotFound as exc:
        raise not_found("integration") from exc
    except DomainError as exc:
        kept = {key: form.get(key, "") for key in _OUTBOUND_FORM}
        return await _detail_page(db, config, request, integration_id, form=kept, errors=field_errors(exc, "api_url"),
                                  status_code=400)
    return done(request, f"/settings/integrations/{integration_id}", "Tracker API settings saved.")


@post("/{integration_id:str}/secret", status_code=303)
async def regenerate_secret(request: AnyRequest, db: DatabaseDep, integration_id: str) -> Redirect:
    try:
        secret = await integration_service.regenerate_secret(db, tenant_of(request), integration_id)
    except NotFound as exc:
        raise not_found("integration") from exc
    request.session[_SHOWN_ONCE_KEY] = {"id": integration_id, "secret": secret}
    return done(request, f"/settings/integrations/{integration_id}",
                "New secret created. Update it in the tracker now: the old one no longer works.")


@post("/{integration_id:str}/delete", status_code=303)
async def delete_integration(request: AnyRequest, db: DatabaseDep, integration_id: str) -> Redirect:
    try:
        await integration_service.delete_integration(db, tenant_of(request), integration_id)
    except NotFound as exc:
        raise not_found("integration") from exc
    return done(request, "/settings/integrations", "Integration deleted. Its webhook URL no longer works.")


def settings_router() -> Router:
    return Router(
        path="/settings/integrations",
        route_handlers=[integrations_page, create_integration, integration_page, save_outbound, regenerate_secret,
                        delete_integration],
        guards=[page_guard], include_in_schema=False, **needs_role("admin"),
    )


@post("/cases/{case_ref:str}/retest", status_code=303)
async def flag_case(request: AnyRequest, db: DatabaseDep, case_ref: str) -> Redirect:
    """Form fields: ``needs_retest`` ("true" to flag, "false" to clear), optional ``reason``, ``next``."""
    form, _ = await form_of(request)
    flag = form.get("needs_retest", "true").strip().lower() not in ("false", "0", "off", "")
    try:
        case = await retest_service.flag_case_by_hand(
            db, tenant_of(request), case_ref, flag, form.get("reason") or None
        )
    except NotFound as exc:
        raise not_found("test case") from exc
    target = safe_next(form.get("next") or f"/cases/{case['code']}")
    if flag:
        return done(request, target, f"{case['code']} is in the retest queue.")
    return done(request, target, f"{case['code']} is no longer waiting for a retest.")


def cases_router() -> Router:
    return Router(path="/", route_handlers=[flag_case], guards=[page_guard], include_in_schema=False)


# --- "Create issue" on a failed or broken result (partials/defect_button.html links here) ----------


async def _defect_page(db: Database, config: Config, request: AnyRequest, result_id: str, *,
                       form: dict[str, str] | None = None, errors: dict[str, str] | None = None,
                       status_code: int = 200) -> Template:
    tenant_id = tenant_of(request)
    try:
        proposed, failure = await defects.defect_draft(db, config, tenant_id, result_id)
    except NotFound as exc:
        raise not_found("result") from exc
    choices = await defects.defect_integrations(db, tenant_id)
    home = f"/results/{result_id}/execute" if failure.result.test_case_id else f"/runs/{failure.run.id}"
    back = safe_next(request.query_params.get("back") or (form or {}).get("back") or home)
    form = form or {"title": proposed.title, "body": proposed.body,
                    "integration_id": choices[0]["id"] if choices else ""}
    return render(request, "integrations/defect.html", status_code=status_code, active_nav="runs",
                  result=failure.result, run=failure.run, case=failure.case, integrations=choices, form=form,
                  errors=errors or {}, back=back,
                  failing=failure.result.status in defects.FAILING_STATUSES)


@get("/results/{result_id:str}/defect")
async def defect_page(request: AnyRequest, db: DatabaseDep, config: ConfigDep, result_id: str) -> Template:
    return await _defect_page(db, config, request, result_id)


@post("/results/{result_id:str}/defect", status_code=303)
async def create_defect(request: AnyRequest, db: DatabaseDep, config: ConfigDep, result_id: str) -> Template | Redirect:
    form, _ = await form_of(request)
    kept = {key: form.get(key, "") for key in ("integration_id", "title", "body", "back")}
    body, errors = convert(DefectCreate, {"integration_id": kept["integration_id"], "title": kept["title"] or None,
                                          "body": kept["body"] or None})
    if body is None:
        return await _defect_page(db, config, request, result_id, form=kept, errors=errors, status_code=400)
    try:
        defect = await defects.create_defect(db, config, tenant_of(request),
                                                         result_id, body)
    except NotFound as exc:
        if exc.field != "integration_id":
            raise not_found("result") from exc
        return await _defect_page(db, config, request, result_id, form=kept, errors={"integration_id": exc.detail},
                                  status_code=400)
    except DomainError as exc:  # 400 settings, 409 already linked, 502 the tracker refused or did not answer
        return await _defect_page(db, config, request, result_id, form=kept, errors=field_errors(exc, "form"),
                                  status_code=exc.status_code)
    back = safe_next(kept["back"] or f"/results/{result_id}/execute")
    return done(request, back, f"Created {defect.bug_ticket_key} and linked it to the result.")


def defects_router() -> Router:
    return Router(path="/", route_handlers=[defect_page, create_defect], guards=[page_guard],
                  include_in_schema=False)
