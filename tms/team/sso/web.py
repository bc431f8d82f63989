"""Single sign-on pages: Settings -> Sign-in (admins), the OpenID Connect start and callback, and the
"Sign in with <provider>" choices the sign-in page shows (``sso/buttons.html``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs

from litestar import Router, get, post
from litestar.connection import ASGIConnection
from litestar.datastructures import Cookie
from litestar.enums import ScopeType
from litestar.response import Redirect, Template
from litestar.types import ASGIApp, Receive, Scope, Send

from tms.config import Config
from tms.db import Database
from tms.errors import DomainError
from tms.http.pages import AnyRequest, done, form_of, render, tenant_of
from tms.state import ConfigDep, DatabaseDep, db_of
from tms.team.audit import service as audit
from tms.team.signin.session import needs_role, page_guard, safe_next
from tms.team.signin.session_cookie import start_session
from tms.team.sso import service as sso
from tms.team.sso import settings as sso_settings
from tms.team.sso.models import PROVIDER_ROLES

BROWSER_COOKIE = "tms_oidc"
_COOKIE_PATH = "/auth/oidc"
CHOICES_KEY = "tms_sso_choices"  # the request scope's key the sign-in page's partial reads


# ---- Settings -> Sign-in -------------------------------------------------------------------------------------


async def _settings_page(db: Database, config: Config, request: AnyRequest, *,
                         form: sso_settings.SettingsForm | None = None, errors: dict[str, str] | None = None,
                         status_code: int = 200) -> Template:
    tenant_id = tenant_of(request)
    stored = await sso_settings.get_settings(db, tenant_id)
    history, _, _, _ = await audit.list_entries(db, tenant_id, entity_type="sso", limit=20)
    response = render(
        request, "settings/sign_in.html", status_code=status_code, active_nav="settings", settings_nav="sign-in",
        form=form or sso_settings.form_of(stored), stored=stored, errors=errors or {}, roles=PROVIDER_ROLES,
        redirect_uri=sso.redirect_uri(config), history=history,
        sign_in_url=f"{config.base_url}/login?tenant={tenant_id}")
    response.headers["Cache-Control"] = "no-store"
    return response


@get("/settings/sign-in")
async def settings_page(request: AnyRequest, db: DatabaseDep, config: ConfigDep) -> Template:
    return await _settings_page(db, config, request)


def _checked(single: dict[str, str], name: str) -> bool:
    return single.get(name, "") in ("1", "on", "true")


@post("/settings/sign-in", status_code=303)
async def save_settings(request: AnyRequest, db: DatabaseDep, config: ConfigDep) -> Template | Redirect:
    single, _ = await form_of(request)
    form = sso_settings.SettingsForm(
        name=single.get("name", ""), issuer=single.get("issuer", ""), client_id=single.get("client_id", ""),
        client_secret=single.get("client_secret", ""), scopes=single.get("scopes", ""),
        allowed_domains=single.get("allowed_domains", ""), create_users=_checked(single, "create_users"),
        default_role=single.get("default_role", "viewer"), groups_claim=single.get("groups_claim", ""),
        group_roles=single.get("group_roles", ""), sso_required=_checked(single, "sso_required"),
        enabled=_checked(single, "enabled"))
    try:
        await sso_settings.save_settings(db, config, tenant_of(request), form)
    except sso_settings.SettingsErrors as exc:
        # a typed secret is not echoed back into the page
        return await _settings_page(db, config, request, form=replace(form, client_secret=""), errors=exc.fields,
                                    status_code=400)
    return done(request, "/settings/sign-in", "Single sign-on settings saved.")


@post("/settings/sign-in/remove", status_code=303)
async def remove_settings(request: AnyRequest, db: DatabaseDep) -> Redirect:
    removed = await sso_settings.remove_settings(db, tenant_of(request))
    return done(request, "/settings/sign-in",
                "Single sign-on removed: members sign in with their passwords." if removed else "Nothing to remove.")


# ---- /auth/oidc ----------------------------------------------------------------------------------------------


def _error_page(request: AnyRequest, exc: DomainError) -> Template:
    response = Template("sso/error.html", context={"status": exc.status_code, "title": exc.title,
                                                   "detail": exc.detail, "user": None}, status_code=exc.status_code)
    response.headers["Cache-Control"] = "no-store"
    return response


def _browser_cookie(config: Config, value: str, max_age: int) -> Cookie:
    return Cookie(key=BROWSER_COOKIE, value=value, path=_COOKIE_PATH, max_age=max_age, httponly=True,
                  samesite="lax", secure=config.production)


@get("/auth/oidc/start")
async def start(request: AnyRequest, db: DatabaseDep, config: ConfigDep,
                tenant: str | None = None, email: str | None = None,
                next: str | None = None) -> Template | Redirect:
    try:
        begun = await sso.begin(db, config, tenant_id=tenant, email=email,
                                next_path=safe_next(next))
    except DomainError as exc:
        return _error_page(request, exc)
    response = Redirect(begun.url, status_code=302)
    response.cookies.append(_browser_cookie(config, begun.browser_key, int(sso.LOGIN_TTL.total_seconds())))
    response.headers["Cache-Control"] = "no-store"
    return response


@get("/auth/oidc/callback")
async def callback(request: AnyRequest, db: DatabaseDep, config: ConfigDep) -> Template | Redirect:
    query = request.query_params  # ``state`` is a name Litestar reserves for handler parameters
    try:
        signed_in = await sso.finish(db, config, state=query.get("state", ""),
                                     code=query.get("code", ""), error=query.get("error", ""),
                                     browser_key=request.cookies.get(BROWSER_COOKIE, ""))
    except DomainError as exc:
        response: Template | Redirect = _error_page(request, exc)
    else:
        start_session(request, {"user_id": signed_in.user_id})  # under a fresh id: no session fixation
        response = Redirect(safe_next(signed_in.next_path), status_code=303)
    response.cookies.append(_browser_cookie(config, "", 0))  # the binding is used up either way
    return response


# ---- the sign-in page's choices ------------------------------------------------------------------------------


def login_choices(app: ASGIApp) -> ASGIApp:
    """Middleware: on ``GET /login``, reads the single sign-on choices (the tenant named by ``tenant=``,
    or found by the domain of ``sso_email=``) into the request scope for ``sso/buttons.html``: a
    template cannot await the database, and the sign-in page's handler belongs to password sign-in."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == ScopeType.HTTP and scope["path"] == "/login" and scope.get("method") == "GET":
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            tenant = (query.get("tenant") or [""])[-1][:100] or None
            email = (query.get("sso_email") or [""])[-1][:254] or None
            next_path = safe_next((query.get("next") or [""])[-1])
            connection: ASGIConnection[Any, Any, Any, Any] = ASGIConnection(scope)
            choices = await sso.sign_in_choices(db_of(connection), tenant, next_path, email=email)
            scope[CHOICES_KEY] = choices  # type: ignore[literal-required]
        await app(scope, receive, send)

    return middleware


def router() -> Router:
    return Router(path="/", route_handlers=[settings_page, save_settings, remove_settings],
                  guards=[page_guard], include_in_schema=False, **needs_role("admin"))


def public_router() -> Router:
    return Router(path="/", route_handlers=[start, callback], include_in_schema=False)
