"""ASGI middleware of the whole app: OPTIONS answers and the security headers of every response.

Both run after routing (Litestar builds the middleware stack per route), so the scope already names
the route handler and the route's path template.
"""

from __future__ import annotations

from typing import Any

from litestar.enums import ScopeType
from litestar.handlers import HTTPRouteHandler
from litestar.routes import HTTPRoute
from litestar.types import ASGIApp, HTTPResponseStartEvent, Message, Receive, Scope, Send


def is_options_answer(scope: Scope, handler: Any) -> bool:
    """Litestar's own OPTIONS handler (no OPTIONS handler of ours exists): it needs no credentials
    (a CORS preflight never carries any) and tells only which methods the path has."""
    return (
        scope.get("method") == "OPTIONS"
        and isinstance(handler, HTTPRouteHandler)
        and handler.http_methods == {"OPTIONS"}
    )


def options_middleware(app: ASGIApp) -> ASGIApp:
    """Answers OPTIONS (and so every CORS preflight) with 204 and the path's complete ``Allow``.

    Litestar's generated OPTIONS handler lists only the methods of the first handlers registered on
    a path (routes merged later keep the first route's answer: ``/api/v1/projects`` said
    ``GET, OPTIONS``), and it ran behind our guards, which a token-less request fails. This answers
    before sessions or guards, from the app's merged routes. No CORS headers are sent: TMS has no
    cross-origin policy, so a browser keeps other origins out.
    """
    methods_by_path: dict[str, str] = {}

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP or not is_options_answer(scope, scope.get("route_handler")):
            await app(scope, receive, send)
            return
        if not methods_by_path:
            for route in scope["litestar_app"].routes:
                if isinstance(route, HTTPRoute):
                    methods_by_path[route.path_format] = ", ".join(sorted(route.methods))
        allow = methods_by_path.get(scope.get("path_template", ""), "OPTIONS")
        start: HTTPResponseStartEvent = {"type": "http.response.start", "status": 204,
                                         "headers": [(b"allow", allow.encode()), (b"content-length", b"0")]}
        await send(start)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return middleware


# No inline script anywhere (app.js is a file; templates carry none), so scripts come only from
# our origin. Inline style *attributes* remain (bar widths, chart legends): 'unsafe-inline' for
# styles only, which cannot run code. Images: our own (attachments, SVG charts are inline markup).
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"x-content-type-options", b"nosniff"),
)


async def security_headers(message: Message, scope: Scope) -> None:
    """``before_send`` hook: every HTTP response (pages, API, errors, even the router's own 404s)
    gets the headers above, unless the handler set its own (an SVG download's sandbox CSP)."""
    if message["type"] != "http.response.start":
        return
    headers = list(message.get("headers", ()))
    present = {name.lower() for name, _ in headers}
    headers.extend((name, value) for name, value in SECURITY_HEADERS if name not in present)
    message["headers"] = headers
