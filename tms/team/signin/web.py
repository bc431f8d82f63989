"""Sign in, sign out, and the first-run setup that creates the first tenant and its admin."""

from __future__ import annotations

import hmac
from typing import Any

from litestar import Request, get, post
from litestar.plugins.flash import flash
from litestar.response import Redirect, Response, Template

from tms.errors import DomainError
from tms.state import app_state, db_of
from tms.team import accounts
from tms.team.signin.session import load_user, safe_next, users_exist
from tms.team.signin.session_cookie import start_session


def _client_address(request: Request[Any, Any, Any]) -> str:
    return request.client.host if request.client else "unknown"


@get("/login", include_in_schema=False)
async def login_page(request: Request[Any, Any, Any], next: str | None = None) -> Template | Redirect:
    if not await users_exist(request):
        return Redirect("/setup")
    if await load_user(request) is not None:
        return Redirect(safe_next(next))
    return Template("login.html", context={"next": safe_next(next)})


@post("/login", include_in_schema=False, status_code=303)
async def login(request: Request[Any, Any, Any]) -> Template | Redirect:
    form = await request.form()
    email = str(form.get("email", "")).strip()
    password = str(form.get("password", ""))
    next_path = safe_next(str(form.get("next", "")))
    throttle = app_state(request).login_throttle
    address = _client_address(request)
    wait = await throttle.retry_after(address, email)
    if wait:
        return Template(
            "login.html",
            context={"error": f"Too many failed sign-ins. Try again in {wait} seconds.", "email": email,
                     "next": next_path},
            status_code=429,
            headers={"Retry-After": str(wait)},
        )
    user = await accounts.authenticate_user(db_of(request), email, password) if email and password else None
    if user is None:
        await throttle.record_failure(address, email)
        return Template(
            "login.html",
            context={"error": "Wrong email or password.", "email": email, "next": next_path},
            status_code=400,
        )
    await throttle.record_success(address, email)
    start_session(request, {"user_id": user["id"]})  # under a fresh id: no session fixation
    return Redirect(next_path, status_code=303)


@post("/logout", include_in_schema=False, status_code=303)
async def logout(request: Request[Any, Any, Any]) -> Redirect:
    request.clear_session()
    return Redirect("/login", status_code=303)


async def _setup_token_ok(request: Request[Any, Any, Any], token: str | None) -> bool:
    """This replica's first-run link, or one another replica printed (known by its hash)."""
    if not token:
        return False
    expected = app_state(request).setup_token
    if expected and hmac.compare_digest(expected, token):
        return True
    return await accounts.setup_link_known(db_of(request), token)


@get("/setup", include_in_schema=False)
async def setup_page(request: Request[Any, Any, Any], token: str | None = None) -> Template | Redirect:
    if await users_exist(request):
        return Redirect("/login")
    return Template(
        "setup.html", context={"token_ok": await _setup_token_ok(request, token), "token": token, "form": {},
                               "errors": {}}
    )


@post("/setup", include_in_schema=False, status_code=303)
async def setup(request: Request[Any, Any, Any]) -> Template | Redirect | Response[str]:
    if await users_exist(request):
        return Redirect("/login", status_code=303)
    form = await request.form()
    token = str(form.get("token", ""))
    if not await _setup_token_ok(request, token):
        return Template("setup.html", context={"token_ok": False, "form": {}, "errors": {}}, status_code=403)
    values = {key: str(form.get(key, "")) for key in ("tenant_name", "email", "password")}
    try:
        created = await accounts.create_first_tenant_and_admin(
            db_of(request), values["tenant_name"], values["email"], values["password"]
        )
    except DomainError as exc:
        return Template(
            "setup.html",
            context={"token_ok": True, "token": token, "form": values, "errors": {exc.field or "name": exc.detail}},
            status_code=400,
        )
    state = app_state(request)
    state.setup_done = True
    state.setup_token = None
    start_session(request, {"user_id": created["user_id"]})
    flash(request, "Your team is ready. Create a project, then an API token for your CI.", "success")
    return Redirect("/", status_code=303)
