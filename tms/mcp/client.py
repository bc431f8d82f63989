"""The public API as the MCP tools use it: one httpx client, answers as JSON, failures as ToolError.

A 4xx/5xx answer becomes a ``ToolError`` whose text is the server's problem details (title,
detail and every ``{field, message}``), so an assistant reads *why* a write was refused, e.g. the
Gherkin line the server could not parse, and can correct itself.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx
from mcp.server.mcpserver.exceptions import ToolError

from tms import __version__

USER_AGENT = f"tms-mcp/{__version__}"


# the detail of the server's 404 for a path no route serves (a missing resource names itself instead)
NO_ROUTE_DETAIL = "The resource was not found."


class ApiError(ToolError):
    """The server answered with an error status; ``status`` keeps it for callers that branch on it,
    ``detail`` the problem's own detail (``NO_ROUTE_DETAIL``: no route serves the path)."""

    def __init__(self, status: int, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


def segment(value: str, what: str = "id") -> str:
    """A path segment: an id or code can never reach another route.

    Escaping alone is not enough: the server decodes ``%2F`` back to ``/`` before routing, and
    ``.``/``..`` are resolved by the client, so ``AX-1/versions`` would read the versions route and an
    empty value the list. Such a value is no id or code of anything: it is refused, saying why.
    """
    clean = value.strip()
    if not clean:
        raise ToolError(f"{what} is empty: give a code (e.g. TC-12) or an id")
    if "/" in clean or clean in (".", ".."):
        raise ToolError(f"{what} {clean!r} is not a code or id: it must not contain '/' nor be '.' or '..'")
    return quote(clean, safe="")


def problem_text(response: httpx.Response) -> str:
    """``HTTP 400 Invalid input: bdd_content: line 3: …`` from a problem-details (or any) answer."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        return f"HTTP {response.status_code}: {response.text[:500].strip() or response.reason_phrase}"
    parts = [f"HTTP {response.status_code} {body.get('title') or response.reason_phrase}".rstrip()]
    detail = body.get("detail")
    if detail and detail != body.get("title"):
        parts.append(str(detail))
    for error in body.get("errors") or []:
        if isinstance(error, dict):
            field, message = error.get("field"), error.get("message")
            parts.append(f"{field}: {message}" if field else str(message))
    return ": ".join(parts[:2]) + "".join(f"; {part}" for part in parts[2:])


def _detail(response: httpx.Response) -> str | None:
    try:
        body = response.json()
    except ValueError:
        return None
    detail = body.get("detail") if isinstance(body, dict) else None
    return detail if isinstance(detail, str) else None


class TmsClient:
    def __init__(self, url: str, token: str, *, timeout: float = 30.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._http = httpx.AsyncClient(
            base_url=url.rstrip("/") + "/api/v1",
            headers={"Authorization": f"Bearer {token}", "User-Agent": USER_AGENT, "Accept": "application/json"},
            timeout=timeout,
            transport=transport,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def request(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                      json: dict[str, Any] | None = None) -> Any:
        clean = {k: v for k, v in (params or {}).items() if v is not None and v != [] and v != ""}
        try:
            response = await self._http.request(method, path, params=clean, json=json)
        except httpx.HTTPError as exc:
            raise ToolError(f"TMS could not be reached: {type(exc).__name__}: {exc}".rstrip(": ")) from None
        if response.status_code >= 400:
            raise ApiError(response.status_code, problem_text(response), _detail(response))
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    async def get(self, path: str, **params: Any) -> Any:
        return await self.request("GET", path, params=params)

    async def post(self, path: str, body: dict[str, Any]) -> Any:
        return await self.request("POST", path, json=body)

    async def patch(self, path: str, body: dict[str, Any]) -> Any:
        return await self.request("PATCH", path, json=body)
