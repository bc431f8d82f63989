"""Sign in (the password, then the second factor when the user has one), sign out, forgot password, and
the first-run setup that creates the first tenant and its admin."""

from __future__ import annotations

import hmac
import logging
from typing import Any
from urllib.parse import quote

import msgspec
from litestar import Request, get, post
from litestar.background_tasks import BackgroundTask
from litestar.plugins.flash import flash
from litestar.response import Redirect, Response, Template

from tms.config import Config
from tms.db import Database
from tms.errors import DomainError, InvalidInput
from tms.http.problems import problem_response
from tms.state import ConfigDep, DatabaseDep, app_state
from tms.team import accounts, links
from tms.team.signin import two_factor
from tms.team.signin.session import NEEDS_CODE, half_signed_in, load_user, safe_next, users_exist
from tms.team.signin.session_cookie import SECOND_FACTOR, start_session
from tms.team.signin.throttle import ResetThrottle
from tms.team.sso import service as sso_service

log = logging.getLogger(__name__)


def _client_address(request: Request[Any, Any, Any]) -> str:
    return request.client.host if request.client else "unknown"


def _login_page(config: Config, request: Request[Any, Any, Any], *, status_code: int = 200,
                headers: dict[str, str] | None = None, **context: Any) -> Template:
    context.setdefault("password_login", config.get("auth.password_login"))
    return Template("login.html", context=context, status_code=status_code, headers=headers)


@get("/login", include_in_schema=False)
async def login_page(request: Request[Any, Any, Any], config: ConfigDep,
                     next: str | None = None) -> Template | Redirect:
    if not await users_exist(request):
        return Redirect("/setup")
    if await load_user(request) is not None:
        return Redirect(safe_next(next))
    return _login_page(config, request, next=safe_next(next))


@post("/login", include_in_schema=False, status_code=303)
async def login(request: Request[Any, Any, Any], db: DatabaseDep, config: ConfigDep) -> Template | Redirect:
    form = await request.form()
    email = str(form.get("email", "")).strip()
    password = str(form.get("password", ""))
    next_path = safe_next(str(form.get("next", "")))
    throttle = app_state(request).login_throttle
    address = _client_address(request)
    wait = await throttle.retry_after(address, email)
    if wait:
        return _login_page(config, request, error=f"Too many failed sign-ins. Try again in {wait} seconds.",
                           email=email, next=next_path, status_code=429, headers={"Retry-After": str(wait)})
    owners_only = not config.get("auth.password_login")
    user = (await accounts.authenticate_user(db, email, password, owners_only=owners_only)
            if email and password else None)
    if user is None:
        await throttle.record_failure(address, email)
        error = ("Password sign-in is off here: use your organisation's sign-in." if owners_only
                 else "Wrong email or password.")
        return _login_page(config, request, error=error, email=email, next=next_path, status_code=400)
    # "SSO required": only the owner still signs in with a password (asked once the password
    # matched, so the answer does not tell which addresses are members)
    refusal = await sso_service.password_sign_in_refused(db, user["id"])
    if refusal:
        return _login_page(config, request, error=refusal, email=email, next=next_path, status_code=403)
    await throttle.record_success(address, email)
    # under a fresh id (no session fixation); without its second factor until /login/two-factor
    start_session(request, {"user_id": user["id"]})
    state = await two_factor.state(db, user["id"], user["tenant_id"])
    if state.enrolled:
        return Redirect("/login/two-factor?next=" + quote(next_path, safe="/"), status_code=303)
    if state.required:
        flash(request, "Your team requires two-factor sign-in: set it up to go on.", "info")
        return Redirect("/account/2fa", status_code=303)
    return Redirect(next_path, status_code=303)


# --- the second step: a code from the authenticator app, or a recovery code ----------------------------

def _second_step_page(request: Request[Any, Any, Any], next_path: str, *, error: str = "", status_code: int = 200,
                      headers: dict[str, str] | None = None) -> Template:
    response = Template("account/two_factor_login.html", context={"next": next_path, "error": error},
                        status_code=status_code, headers=headers)
    response.headers["Cache-Control"] = "no-store"
    return response


@get("/login/two-factor", include_in_schema=False)
async def second_step_page(request: Request[Any, Any, Any], next: str | None = None) -> Template | Redirect:
    user, progress = await half_signed_in(request)
    if user is None:
        return Redirect("/login")
    if progress != NEEDS_CODE:
        return Redirect(safe_next(next))
    return _second_step_page(request, safe_next(next))


@post("/login/two-factor", include_in_schema=False, status_code=303)
async def second_step(request: Request[Any, Any, Any], db: DatabaseDep, config: ConfigDep) -> Template | Redirect:
    form = await request.form()
    next_path = safe_next(str(form.get("next", "")))
    user, progress = await half_signed_in(request)
    if user is None:
        return Redirect("/login", status_code=303)
    if progress != NEEDS_CODE:
        return Redirect(next_path, status_code=303)
    try:
        method = await two_factor.verify(db, config, user.tenant_id, user.id,
                                         str(form.get("code", "")), _client_address(request))
    except two_factor.TooManyAttempts as exc:
        return _second_step_page(request, next_path, error=exc.detail, status_code=429,
                                 headers={"Retry-After": str(exc.retry_after)})
    except DomainError as exc:
        return _second_step_page(request, next_path, error=exc.detail, status_code=400)
    start_session(request, {"user_id": user.id, SECOND_FACTOR: method})  # a fresh id once more
    if method == "recovery":
        left = await two_factor.recovery_codes_left(db, user.id)
        flash(request, f"You signed in with a recovery code; {left} left. Set up two-factor again if your "
              "device is lost (/account/2fa).", "info")
    return Redirect(next_path, status_code=303)


# --- forgot password -------------------------------------------------------------------------------------

_RESET_SENT = ("If an account uses that address, a link to set a new password is on its way. It works once, "
               "within 1 hour.")


class _ResetRequest(msgspec.Struct):
    email: str


@get("/password-reset", include_in_schema=False)
async def forgot_page(request: Request[Any, Any, Any], sent: str | None = None) -> Template:
    return Template("account/forgot.html", context={"sent": _RESET_SENT if sent else "", "email": "", "error": ""})


async def _reset_email(request: Request[Any, Any, Any]) -> tuple[str, bool]:
    """The address asked for, from the form or a JSON body ``{"email": ...}``; and whether it was JSON."""
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            return msgspec.json.decode(await request.body(), type=_ResetRequest).email.strip(), True
        except (msgspec.DecodeError, RecursionError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"body: {exc}", field="email") from exc
    form = await request.form()
    return str(form.get("email", "")).strip(), False


@post("/password-reset", include_in_schema=False, status_code=303, exclude_from_csrf=True)
async def forgot(request: Request[Any, Any, Any], db: DatabaseDep,
                 config: ConfigDep) -> Template | Redirect | Response[Any]:
    """Mails a one-hour reset link when the address has an account. The answer never says whether it has:
    it is the same, and sent before the account is even looked up (the lookup, the link and the mail run
    after the response, as a background task). Throttled per address asked for and per client.

    No CSRF token is needed: a forged request can only mail a link to the address's own owner."""
    try:
        email, as_json = await _reset_email(request)
        accounts.clean_email(email)
    except InvalidInput as exc:
        if request.headers.get("content-type", "").startswith("application/json"):
            return problem_response(400, exc.detail, errors=[{"field": "email", "message": exc.detail}])
        return Template("account/forgot.html", context={"sent": "", "email": "", "error": "Enter your email address."},
                        status_code=400)
    client = _client_address(request)
    throttle = ResetThrottle(db)
    wait = await throttle.retry_after(client, email)
    if wait:
        detail = f"Too many reset requests. Try again in {wait} seconds."
        if as_json:
            return problem_response(429, detail, headers={"Retry-After": str(wait)})
        return Template("account/forgot.html", context={"sent": "", "email": email, "error": detail},
                        status_code=429, headers={"Retry-After": str(wait)})
    await throttle.record(client, email)
    task = BackgroundTask(_mail_reset, db, config, email, client)
    if as_json:
        return Response({"data": {"detail": _RESET_SENT}}, status_code=202, background=task)
    return Redirect("/password-reset?sent=1", status_code=303, background=task)


async def _mail_reset(db: Any, config: Any, email: str, client: str) -> None:
    try:
        await links.mail_reset(db, config, email, client)
    except Exception:  # a background task has nobody to answer: log it (never the link) and go on
        log.exception("password reset mail failed")


@post("/logout", include_in_schema=False, status_code=303)
async def logout(request: Request[Any, Any, Any]) -> Redirect:
    request.clear_session()
    return Redirect("/login", status_code=303)


async def _setup_token_ok(db: Database, request: Request[Any, Any, Any], token: str | None) -> bool:
    """This replica's first-run link, or one another replica printed (known by its hash)."""
    if not token:
        return False
    expected = app_state(request).setup_token
    if expected and hmac.compare_digest(expected, token):
        return True
    return await accounts.setup_link_known(db, token)


@get("/setup", include_in_schema=False)
async def setup_page(request: Request[Any, Any, Any], db: DatabaseDep, token: str | None = None) -> Template | Redirect:
    if await users_exist(request):
        return Redirect("/login")
    return Template(
        "setup.html", context={"token_ok": await _setup_token_ok(db, request, token), "token": token, "form": {},
                               "errors": {}}
    )


@post("/setup", include_in_schema=False, status_code=303)
async def setup(request: Request[Any, Any, Any], db: DatabaseDep) -> Template | Redirect | Response[str]:
    if await users_exist(request):
        return Redirect("/login", status_code=303)
    form = await request.form()
    token = str(form.get("token", ""))
    if not await _setup_token_ok(db, request, token):
        return Template("setup.html", context={"token_ok": False, "form": {}, "errors": {}}, status_code=403)
    values = {key: str(form.get(key, "")) for key in ("tenant_name", "email", "password")}
    try:
        created = await accounts.create_first_tenant_and_admin(
            db, values["tenant_name"], values["email"], values["password"]
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
