"""Bearer authentication for /api/v1 and the scope guard every operation declares.

Each handler states its scope once, with ``**requires("read")`` or ``**requires("write")`` (or
``requires(None)`` for "any valid token"): the same value drives the guard and the OpenAPI security
requirement, so the docs cannot drift from what is enforced.
"""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.connection import ASGIConnection
from litestar.datastructures import State
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.handlers.base import BaseRouteHandler
from litestar.middleware import AbstractAuthenticationMiddleware, AuthenticationResult

from tms.state import app_state
from tms.team.audit.service import Actor, acting_as
from tms.team.tokens.service import ApiPrincipal, verify_token

BEARER_SCHEME = "BearerToken"
# The few /api/v1 routes of the signed-in user alone (the inbox): the session cookie, never a token
SESSION_SCHEME = "SessionCookie"
# The request of an /api/v1 handler: the authenticated token's principal, its raw token, app state.
ApiRequest = Request[ApiPrincipal, str, State]


def requires(scope: str | None) -> dict[str, Any]:
    """Keyword arguments for a route decorator: its required scope, enforced and documented."""
    scopes = [] if scope is None else [scope]
    return {"opt": {"scope": scope}, "security": [{BEARER_SCHEME: scopes}]}


class BearerAuthMiddleware(AbstractAuthenticationMiddleware):
    async def authenticate_request(self, connection: ASGIConnection[Any, Any, Any, Any]) -> AuthenticationResult:
        header = connection.headers.get("authorization", "")
        scheme, _, presented = header.partition(" ")
        if scheme.lower() != "bearer" or not presented.strip():
            raise NotAuthorizedException("Missing or malformed Authorization header; use 'Bearer <token>'.")
        state = app_state(connection)
        principal = await verify_token(state.db, presented.strip())
        if principal is None:
            raise NotAuthorizedException("The token is invalid, revoked, or its tenant is suspended.")
        state.token_usage.mark(principal.token_id)
        acting_as(Actor("token", principal.token_id, principal.token_name))
        return AuthenticationResult(user=principal, auth=principal.token_id)


async def scope_guard(connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler) -> None:
    """Async on purpose: Litestar runs a sync guard in a worker thread, a hop on every API call."""
    if "scope" not in handler.opt:
        raise RuntimeError(f"route {handler} declares no scope; use **requires(...)")
    required = handler.opt["scope"]
    principal: ApiPrincipal = connection.user
    if required is not None and required not in principal.scopes:
        raise PermissionDeniedException(f"This operation needs a token with the '{required}' scope.")
