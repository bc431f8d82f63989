"""LDAP pages: the sign-in form (``GET|POST /auth/ldap``) and, for admins, Settings → Directory
(``/settings/ldap``: the LDAP section with its "Test connection" button, and SCIM's group mapping)."""

from __future__ import annotations

from typing import Any

from litestar import Request, Router, get, post
from litestar.response import Redirect, Template

from tms.config import Config
from tms.db import Database
from tms.errors import DomainError
from tms.http.pages import AnyRequest, done, field_errors, form_of, render, tenant_of
from tms.state import ConfigDep, DatabaseDep, app_state
from tms.team.ldap import service
from tms.team.scim import roles as scim_roles
from tms.team.service import FormErrors
from tms.team.signin.session import needs_role, page_guard, safe_next
from tms.team.signin.session_cookie import start_session

ROLE_CHOICES = ("admin", "tester", "viewer")


def _errors(exc: DomainError) -> dict[str, str]:
    """Every wrong field of the form at once."""
    return dict(exc.fields) if isinstance(exc, FormErrors) else field_errors(exc, "url")


def _address(request: Request[Any, Any, Any]) -> str:
    return request.client.host if request.client else "unknown"


@get("/auth/ldap", include_in_schema=False)
async def sign_in_page(request: Request[Any, Any, Any], db: DatabaseDep, tenant: str | None = None,
                       next: str | None = None) -> Template:
    tenant_id, tenant_name = await service.sign_in_tenants(db, tenant)
    return Template("ldap/login.html", context={"tenant_id": tenant_id or tenant or "", "tenant_name": tenant_name,
                                                "next": safe_next(next), "username": ""})


@post("/auth/ldap", include_in_schema=False, status_code=303)
async def sign_in(request: Request[Any, Any, Any], db: DatabaseDep, config: ConfigDep) -> Template | Redirect:
    single, _ = await form_of(request)
    username, password = single.get("username", "").strip(), single.get("password", "")
    next_path = safe_next(single.get("next"))
    tenant_id, tenant_name = await service.sign_in_tenants(db, single.get("tenant", "").strip() or None)

    def again(error: str, status: int, headers: dict[str, str] | None = None) -> Template:
        return Template("ldap/login.html", status_code=status, headers=headers, context={
            "tenant_id": tenant_id or single.get("tenant", ""), "tenant_name": tenant_name, "next": next_path,
            "username": username, "error": error})

    if tenant_id is None:
        return again("This team does not sign in with LDAP. Check the team ID, or use your email and password.",
                     400)
    throttle, address, key = app_state(request).login_throttle, _address(request), f"ldap:{tenant_id}:{username}"
    wait = await throttle.retry_after(address, key)
    if wait:
        return again(f"Too many failed sign-ins. Try again in {wait} seconds.", 429, {"Retry-After": str(wait)})
    try:
        user = await service.sign_in(db, config, tenant_id, username, password)
    except service.WrongCredentials:
        await throttle.record_failure(address, key)
        return again("Wrong username or password.", 400)
    except service.DirectoryError:
        return again("The directory cannot be reached just now. Try again later, or ask your administrator.", 502)
    except service.SignInRefused as exc:
        await throttle.record_failure(address, key)
        return again(str(exc), 403)
    await throttle.record_success(address, key)
    start_session(request, {"user_id": user["id"]})  # under a fresh id: no session fixation
    return Redirect(next_path, status_code=303)


async def _page(db: Database, config: Config, request: AnyRequest, *, form: dict[str, Any] | None = None,
                errors: dict[str, str] | None = None, scim_form: dict[str, Any] | None = None,
                scim_errors: dict[str, str] | None = None, result: str | None = None, result_ok: bool = False,
                status_code: int = 200) -> Template:
    tenant_id = tenant_of(request)
    settings = await service.get_settings(db, tenant_id)
    mapping = await scim_roles.get_settings(db, tenant_id)
    base = config.base_url.rstrip("/")
    return render(request, "settings/ldap.html", status_code=status_code, active_nav="settings",
                  settings_nav="directory", form=form or settings.form(), errors=errors or {},
                  has_bind_password=settings.has_bind_password, roles=ROLE_CHOICES, result=result,
                  result_ok=result_ok, sign_in_url=f"{base}/auth/ldap?tenant={tenant_id}", scim_url=f"{base}/scim/v2",
                  scim_form=scim_form or {"group_role_map": scim_roles.format_group_role_map(mapping.group_role_map),
                                          "default_role": mapping.default_role},
                  scim_errors=scim_errors or {})


@get("/ldap")
async def settings_page(request: AnyRequest, db: DatabaseDep, config: ConfigDep) -> Template:
    return await _page(db, config, request)


@post("/ldap", status_code=303)
async def save_settings(request: AnyRequest, db: DatabaseDep, config: ConfigDep) -> Template | Redirect:
    single, _ = await form_of(request)
    try:
        await service.save_settings(db, config, tenant_of(request), single)
    except DomainError as exc:
        return await _page(db, config, request, form=single, errors=_errors(exc), status_code=400)
    return done(request, "/settings/ldap", "LDAP sign-in settings saved.")


@post("/ldap/test", status_code=200)
async def test_connection(request: AnyRequest, db: DatabaseDep, config: ConfigDep) -> Template:
    single, _ = await form_of(request)
    try:
        message = await service.test_connection(db, config, tenant_of(request), single)
    except DomainError as exc:
        return await _page(db, config, request, form=single, errors=_errors(exc), status_code=400)
    except service.DirectoryError as exc:
        return await _page(db, config, request, form=single, result=str(exc), status_code=200)
    return await _page(db, config, request, form=single, result=message, result_ok=True)


@post("/ldap/scim", status_code=303)
async def save_scim_mapping(request: AnyRequest, db: DatabaseDep, config: ConfigDep) -> Template | Redirect:
    single, _ = await form_of(request)
    try:
        mapping = scim_roles.parse_group_role_map(single.get("group_role_map", ""))
        await scim_roles.save_settings(db, tenant_of(request), mapping, single.get("default_role", ""))
    except DomainError as exc:
        field = "default_role" if exc.field == "scim_default_role" else "group_role_map"
        return await _page(db, config, request, scim_form=single, scim_errors={field: exc.detail}, status_code=400)
    return done(request, "/settings/ldap", "SCIM group mapping saved; it applies at the next change of a group.")


def sign_in_routes() -> list[Any]:
    return [sign_in_page, sign_in]


def settings_router() -> Router:
    return Router(path="/settings", route_handlers=[settings_page, save_settings, test_connection, save_scim_mapping],
                  guards=[page_guard], include_in_schema=False, **needs_role("admin"))
