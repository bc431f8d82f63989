"""Two-factor pages: a user's own set-up (``/account/2fa``) and the admins' Settings → Two-factor (the
tenant switch, each member's state, and the reset for a lost device).

Recovery codes are shown in the answer to the post that makes them (``no-store``), never kept in the
session or anywhere else in clear."""

from __future__ import annotations

from litestar import Router, get, post
from litestar.response import Redirect, Template

from tms.config import Config
from tms.db import Database
from tms.errors import DomainError, NotFound
from tms.http.pages import AnyRequest, done, form_of, not_found, render, tenant_of, user_of
from tms.state import ConfigDep, DatabaseDep
from tms.team.signin import two_factor
from tms.team.signin.session import enrolment_guard, needs_role, page_guard
from tms.team.signin.session_cookie import SECOND_FACTOR, start_session


def _client(request: AnyRequest) -> str:
    return request.client.host if request.client else "unknown"


def _no_store(template: Template) -> Template:
    template.headers["Cache-Control"] = "no-store"
    return template


async def _page(db: Database, config: Config, request: AnyRequest, *, errors: dict[str, str] | None = None,
                status_code: int = 200) -> Template:
    user = user_of(request)
    row = await two_factor.enrolment(db, user.id)
    enrolled = row is not None and bool(row["confirmed_at"])
    pending = None if enrolled else await two_factor.pending_enrolment(db, config, user.id, user.email)
    return _no_store(render(
        request, "account/two_factor.html", status_code=status_code, active_nav="account", enrolled=enrolled,
        pending=pending, codes_left=await two_factor.recovery_codes_left(db, user.id) if enrolled else 0,
        required=await two_factor.is_required(db, user.tenant_id), errors=errors or {}))


def _codes_page(request: AnyRequest, codes: list[str], *, first: bool) -> Template:
    return _no_store(render(request, "account/recovery_codes.html", active_nav="account", codes=codes, first=first))


@get("/2fa")
async def two_factor_page(request: AnyRequest, db: DatabaseDep, config: ConfigDep) -> Template:
    return await _page(db, config, request)


@post("/2fa/start", status_code=303)
async def start(request: AnyRequest, db: DatabaseDep, config: ConfigDep) -> Template | Redirect:
    user = user_of(request)
    try:
        await two_factor.start_enrolment(db, config, user.tenant_id, user.id)
    except DomainError as exc:
        return done(request, "/account/2fa", exc.detail, "error")
    return Redirect("/account/2fa", status_code=303)


@post("/2fa/confirm", status_code=200)
async def confirm(request: AnyRequest, db: DatabaseDep, config: ConfigDep) -> Template | Redirect:
    single, _ = await form_of(request)
    user = user_of(request)
    try:
        codes = await two_factor.confirm_enrolment(db, config, user.tenant_id, user.id,
                                                   single.get("code", ""))
    except DomainError as exc:
        return await _page(db, config, request, errors={"code": exc.detail}, status_code=400)
    # this session has just proved the second factor; a fresh id marks the change of privilege
    start_session(request, {"user_id": user.id, SECOND_FACTOR: "totp"})
    return _codes_page(request, codes, first=True)


@post("/2fa/cancel", status_code=303)
async def cancel(request: AnyRequest, db: DatabaseDep) -> Redirect:
    await two_factor.cancel_enrolment(db, user_of(request).id)
    return done(request, "/account/2fa", "Set-up cancelled.")


@post("/2fa/recovery-codes", status_code=200)
async def new_recovery_codes(request: AnyRequest, db: DatabaseDep, config: ConfigDep) -> Template:
    single, _ = await form_of(request)
    user = user_of(request)
    try:
        codes = await two_factor.regenerate_recovery_codes(db, config, user.tenant_id,
                                                           user.id, single.get("code", ""), _client(request))
    except two_factor.TooManyAttempts as exc:
        page = await _page(db, config, request, errors={"code": exc.detail}, status_code=429)
        page.headers["Retry-After"] = str(exc.retry_after)
        return page
    except DomainError as exc:
        return await _page(db, config, request, errors={"code": exc.detail}, status_code=400)
    return _codes_page(request, codes, first=False)


@post("/2fa/disable", status_code=303)
async def disable(request: AnyRequest, db: DatabaseDep, config: ConfigDep) -> Template | Redirect:
    single, _ = await form_of(request)
    user = user_of(request)
    try:
        await two_factor.turn_off(db, config, user.tenant_id, user.id,
                                  single.get("off_code", ""), _client(request))
    except two_factor.TooManyAttempts as exc:
        page = await _page(db, config, request, errors={"off_code": exc.detail}, status_code=429)
        page.headers["Retry-After"] = str(exc.retry_after)
        return page
    except DomainError as exc:
        return await _page(db, config, request, errors={"off_code": exc.detail}, status_code=400)
    return done(request, "/account/2fa", "Two-factor is off.")


# --- Settings → Two-factor (admins) ------------------------------------------------------------------------

async def _team_page(db: Database, request: AnyRequest, *, error: str = "", status_code: int = 200) -> Template:
    tenant = tenant_of(request)
    return render(request, "account/two_factor_team.html", status_code=status_code, active_nav="settings",
                  settings_nav="two-factor", members=await two_factor.members(db, tenant),
                  required=await two_factor.is_required(db, tenant), me=user_of(request), error=error)


@get("/two-factor")
async def team_page(request: AnyRequest, db: DatabaseDep) -> Template:
    return await _team_page(db, request)


@post("/two-factor", status_code=303)
async def set_required(request: AnyRequest, db: DatabaseDep) -> Template | Redirect:
    single, _ = await form_of(request)
    required = single.get("required") == "1"
    try:
        changed = await two_factor.set_required(db, tenant_of(request), user_of(request).id, required)
    except DomainError as exc:
        return await _team_page(db, request, error=exc.detail, status_code=409)
    if not changed:
        return done(request, "/settings/two-factor", "Nothing changed.")
    return done(request, "/settings/two-factor",
                "Two-factor is now required: members without it set it up at their next page."
                if required else "Two-factor is no longer required.")


@post("/two-factor/{user_id:str}/reset", status_code=303)
async def reset(request: AnyRequest, db: DatabaseDep, user_id: str) -> Redirect:
    try:
        await two_factor.reset(db, tenant_of(request), user_of(request).id, user_id)
    except NotFound as exc:
        raise not_found("user") from exc
    except DomainError as exc:
        return done(request, "/settings/two-factor", exc.detail, "error")
    return done(request, "/settings/two-factor",
                "Two-factor reset: the member signs in with their password and sets it up again.")


def account_router() -> Router:
    return Router(path="/account", route_handlers=[two_factor_page, start, confirm, cancel, new_recovery_codes,
                                                   disable],
                  guards=[enrolment_guard], include_in_schema=False, **needs_role("viewer"))


def settings_router() -> Router:
    return Router(path="/settings", route_handlers=[team_page, set_required, reset], guards=[page_guard],
                  include_in_schema=False, **needs_role("admin"))
