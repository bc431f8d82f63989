"""Who is signed in to the web interface, and the guards that send everyone else to login or setup."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from litestar import Request
from litestar.config.csrf import CSRFConfig
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.handlers.base import BaseRouteHandler
from litestar.middleware.csrf import CSRFMiddleware

from tms.notifications.inbox import service as inbox
from tms.state import Connection, app_state, db_of
from tms.team import store as user_store
from tms.team.audit.service import Actor, acting_as
from tms.team.signin import two_factor
from tms.team.signin.session_cookie import SECOND_FACTOR

# Each role may do what the ones before it may: viewers read, testers also execute runs and edit cases,
# admins also manage users, tokens, webhooks and integrations; the owner is the admin nobody can demote.
ROLES = ("viewer", "tester", "admin", "owner")
_SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


@dataclass(frozen=True, slots=True)
class WebUser:
    id: str
    tenant_id: str
    tenant_name: str
    email: str
    name: str = ""
    role: str = "viewer"

    @property
    def display_name(self) -> str:
        return self.name or self.email

    def has_role(self, role: str) -> bool:
        return ROLES.index(self.role) >= ROLES.index(role)


def needs_role(role: str) -> dict[str, Any]:
    """Keyword arguments for a web route or router: the least role that may use it.

    Without it, reading (GET) needs any role and every other method needs ``tester``, so a new form
    is closed to viewers by default rather than by remembering to say so.
    """
    if role not in ROLES:
        raise ValueError(f"unknown role {role}")
    return {"opt": {"role": role}}


def _required_role(connection: Connection, handler: BaseRouteHandler) -> str:
    declared = handler.opt.get("role")
    if declared:
        return str(declared)
    return "viewer" if connection.scope.get("method") in _SAFE_METHODS else "tester"


def check_role(connection: Connection, handler: BaseRouteHandler, user: WebUser) -> None:
    required = _required_role(connection, handler)
    if not user.has_role(required):
        raise PermissionDeniedException(f"This needs the {required} role; you are a {user.role}.")


class LoginRequired(Exception):
    """Raised by the page guard; answered with a redirect to ``location`` (/login or /setup)."""

    def __init__(self, location: str) -> None:
        self.location = location


# How far a session's sign-in got: the password (or another first factor) alone, or all the way.
SIGNED_IN = "signed_in"
NEEDS_CODE = "needs_code"            # the user has two-factor: /login/two-factor asks for the code
NEEDS_ENROLMENT = "needs_enrolment"  # the tenant requires two-factor the user has not set up: /account/2fa
_STATE = "tms_signin_state"


async def _session_user(connection: Connection) -> tuple[WebUser | None, str]:
    """The session's user and how far its sign-in got; cached on the connection."""
    if _STATE in connection.scope:
        return connection.scope[_STATE]  # type: ignore[literal-required,no-any-return]
    user: WebUser | None = None
    progress = SIGNED_IN
    session = connection.session if "session" in connection.scope else {}
    user_id = session.get("user_id")
    if user_id:
        row = await user_store.get_user(db_of(connection), user_id)
        # a deactivated user's sessions end at once: the row is read on every request
        if row is not None and row["tenant_status"] == "ACTIVE" and row["active"]:
            user = WebUser(row["id"], row["tenant_id"], row["tenant_name"], row["email"], row["name"], row["role"])
            acting_as(Actor("user", user.id, user.display_name))
            if not session.get(SECOND_FACTOR):
                # read on every request of such a session, so the tenant's switch holds at once
                state = await two_factor.state(db_of(connection), user.id, user.tenant_id)
                progress = NEEDS_CODE if state.enrolled else NEEDS_ENROLMENT if state.required else SIGNED_IN
    connection.scope[_STATE] = (user, progress)  # type: ignore[literal-required]
    return user, progress


async def load_user(connection: Connection) -> WebUser | None:
    """The signed-in user, cached on the connection; None when the session is absent or stale, or its
    user still owes the second factor (or, when the tenant requires it, its enrolment)."""
    if "tms_user" in connection.scope:
        return connection.scope["tms_user"]  # type: ignore[typeddict-item,no-any-return]
    user, progress = await _session_user(connection)
    signed_in = user if progress == SIGNED_IN else None
    connection.scope["tms_user"] = signed_in  # type: ignore[typeddict-unknown-key]
    return signed_in


async def half_signed_in(connection: Connection) -> tuple[WebUser | None, str]:
    """The session's user even before the second factor, and how far its sign-in got."""
    return await _session_user(connection)


async def users_exist(connection: Connection) -> bool:
    state = app_state(connection)
    if not state.setup_done:
        state.setup_done = await user_store.any_user_exists(state.db)
    return bool(state.setup_done)


async def page_guard(connection: Connection, handler: BaseRouteHandler) -> None:
    """Web pages: signed-in users only, with the role the page needs; everyone else goes to /login,
    or to /setup on first run."""
    user = await load_user(connection)
    if user is None:
        if not await users_exist(connection):
            raise LoginRequired("/setup")
        target = connection.url.path
        if connection.url.query:
            target += "?" + connection.url.query
        _, progress = await _session_user(connection)
        if progress == NEEDS_CODE:
            raise LoginRequired("/login/two-factor?next=" + quote(safe_next(target), safe="/"))
        if progress == NEEDS_ENROLMENT:
            raise LoginRequired("/account/2fa")
        raise LoginRequired(login_redirect_target(target))
    check_role(connection, handler, user)
    if connection.scope.get("method") == "GET":  # the bell in the page header: one count, over an index
        connection.scope["tms_unread"] = await inbox.unread_count(db_of(connection), user.id)  # type: ignore[typeddict-unknown-key]


async def enrolment_guard(connection: Connection, handler: BaseRouteHandler) -> None:
    """``/account/2fa``: signed-in users, and those the tenant sends there to enrol before anything else."""
    user, progress = await _session_user(connection)
    if user is None or progress == NEEDS_CODE:
        await page_guard(connection, handler)
        return
    connection.scope["tms_user"] = user  # type: ignore[typeddict-unknown-key]
    check_role(connection, handler, user)


async def session_api_guard(connection: Connection, handler: BaseRouteHandler) -> None:
    """Internal JSON API (/api/webhooks): a session, never a Bearer token; CSRF on unsafe methods.

    CSRF is checked here rather than by the CSRF middleware so that a request without a session
    gets its 401 first, as the contract says, instead of a 403 about a missing CSRF token. The check
    is the middleware's own (``csrf_token_valid``), so forms and this API share one mechanism.
    """
    user = await load_user(connection)
    if user is None:
        raise NotAuthorizedException("Sign in to the web interface; this API takes no Bearer tokens.")
    check_role(connection, handler, user)
    config = connection.app.csrf_config
    if config is not None and connection.scope.get("method") not in config.safe_methods:
        header = connection.headers.get(config.header_name, "")
        cookie = connection.cookies.get(config.cookie_name, "")
        if not csrf_token_valid(config, header, cookie):
            raise PermissionDeniedException("CSRF token missing or incorrect; send the csrftoken cookie's value "
                                            "in the x-csrftoken header.")


def csrf_token_valid(config: CSRFConfig, presented: str, cookie: str) -> bool:
    """Litestar's CSRF check, as its middleware makes it for forms: both tokens carry an HMAC made with
    the app's secret, and their random parts are equal. A pair the client made up itself (the
    same string in cookie and header) fails: only the server can sign a token."""
    if not presented or not cookie:
        return False
    return CSRFMiddleware(app=_never_called, config=config)._csrf_tokens_match(presented, cookie)


async def _never_called(scope: Any, receive: Any, send: Any) -> None:  # the middleware's next app
    raise RuntimeError("not an ASGI app")


def web_user(request: Request[Any, Any, Any]) -> WebUser:
    """The user a guarded handler runs for (the guard has already loaded it)."""
    user = request.scope.get("tms_user")
    if not isinstance(user, WebUser):  # None: no guard signed anyone in
        raise NotAuthorizedException()
    return user


def login_redirect_target(next_path: str) -> str:
    return "/login?next=" + quote(next_path, safe="/")


def safe_next(next_path: str | None) -> str:
    """Only same-site relative paths: an open redirect after login would be a phishing aid."""
    if not next_path or not next_path.startswith("/") or next_path.startswith("//") or "\\" in next_path:
        return "/"
    return next_path
