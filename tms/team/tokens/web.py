"""Settings → Developer → API Tokens: create (the full token is shown once), list, revoke."""

from __future__ import annotations

from typing import Any

from litestar import Router, get, post
from litestar.response import Redirect, Template

from tms.db import Database
from tms.errors import DomainError, NotFound
from tms.http.pages import AnyRequest, done, field_errors, form_of, not_found, render, tenant_of, user_of
from tms.state import DatabaseDep
from tms.team.audit import service as audit
from tms.team.signin.session import needs_role, page_guard
from tms.team.tokens import service as token_service

# The new token crosses the redirect in the server-side session and is popped by the next GET,
# so it is displayed exactly once and a reload never shows (or re-creates) it.
_NEW_TOKEN_KEY = "new_token"  # noqa: S105 - a session key, not a secret


async def _page(db: Database, request: AnyRequest, *, form: dict[str, Any] | None = None,
                errors: dict[str, str] | None = None, status_code: int = 200) -> Template:
    new_token = request.session.pop(_NEW_TOKEN_KEY, None) if request.method == "GET" else None
    tokens = await token_service.list_tokens(db, tenant_of(request))
    for token in tokens:
        token["scope_list"] = token["scopes"].split(",")
    history, _, _, _ = await audit.list_entries(db, tenant_of(request), entity_type="token", limit=30)
    template = render(request, "settings/tokens.html", status_code=status_code, active_nav="settings",
                      history=history,
                      settings_nav="tokens", tokens=tokens, new_token=new_token,
                      form=form or {"scopes": ["read"]}, errors=errors or {}, scopes=token_service.SCOPES)
    if new_token:
        template.headers["Cache-Control"] = "no-store"
    return template


@get("/tokens")
async def tokens_page(request: AnyRequest, db: DatabaseDep) -> Template:
    return await _page(db, request)


@post("/tokens", status_code=303)
async def create_token(request: AnyRequest, db: DatabaseDep) -> Template | Redirect:
    single, multi = await form_of(request)
    name, scopes = single.get("name", ""), multi.get("scopes", [])
    form = {"name": name, "scopes": scopes}
    try:
        created = await token_service.create_token(
            db, tenant_of(request), name, scopes, created_by=user_of(request).id
        )
    except DomainError as exc:
        return await _page(db, request, form=form, errors=field_errors(exc, "name"), status_code=400)
    request.session[_NEW_TOKEN_KEY] = {"name": created.name, "token": created.token}
    return done(request, "/settings/tokens", f"Token “{created.name}” created. Copy it now: it is shown only once.")


@post("/tokens/{token_id:str}/revoke", status_code=303)
async def revoke_token(request: AnyRequest, db: DatabaseDep, token_id: str) -> Redirect:
    try:
        await token_service.revoke_token(db, tenant_of(request), token_id)
    except NotFound as exc:
        raise not_found("token") from exc
    return done(request, "/settings/tokens", "Token revoked. It no longer works.")


@get("/")
async def settings_home() -> Redirect:
    return Redirect("/settings/tokens")


def router() -> Router:
    return Router(path="/settings", route_handlers=[settings_home, tokens_page, create_token, revoke_token],
                  guards=[page_guard], include_in_schema=False, **needs_role("admin"))
