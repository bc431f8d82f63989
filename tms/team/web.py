"""Settings → Team (admins): members, roles, invitations, password-reset links; the public pages that
accept an invitation or set a new password; and every user's own Account and sessions pages.

Deactivating a member or demoting them below admin revokes what they issued: when there is anything
(tokens, invitations, reset links), the form answers with a confirm page listing it, and only a post
carrying ``confirmed=1`` (that page's button) makes the change."""

from __future__ import annotations

from typing import Any

from litestar import Router, get, post
from litestar.response import Redirect, Template

from tms.db import Database
from tms.errors import DomainError, NotFound
from tms.http.pages import AnyRequest, done, form_of, not_found, render, tenant_of, user_of
from tms.notifications.inbox import service as inbox
from tms.state import ConfigDep, DatabaseDep
from tms.team import links
from tms.team import service as team
from tms.team.signin.session import needs_role, page_guard
from tms.team.signin.session_cookie import current_session_key, start_session

# a freshly issued link crosses the redirect in the server-side session, shown once by the next GET
_LINK_KEY = "issued_link"


def _errors_of(exc: DomainError, default: str) -> dict[str, str]:
    return dict(exc.fields) if isinstance(exc, team.FormErrors) else {exc.field or default: exc.detail}


async def _team_page(db: Database, request: AnyRequest, *, form: dict[str, Any] | None = None,
                     errors: dict[str, str] | None = None, status_code: int = 200) -> Template:
    tenant = tenant_of(request)
    issued = request.session.pop(_LINK_KEY, None) if request.method == "GET" else None
    members = await team.list_users(db, tenant)
    template = render(request, "team/index.html", status_code=status_code, active_nav="settings",
                      settings_nav="team", members=members, issued=issued, form=form or {"role": "tester"},
                      errors=errors or {}, invitations=await links.pending_invitations(db, tenant),
                      roles=team.ASSIGNABLE_ROLES, me=user_of(request))
    if issued:
        template.headers["Cache-Control"] = "no-store"
    return template


@get("/team")
async def team_page(request: AnyRequest, db: DatabaseDep) -> Template:
    return await _team_page(db, request)


@post("/team/invite", status_code=303)
async def invite(request: AnyRequest, db: DatabaseDep, config: ConfigDep) -> Template | Redirect:
    single, _ = await form_of(request)
    form = {"email": single.get("email", ""), "role": single.get("role", "")}
    user = user_of(request)
    try:
        link = await links.invite(db, config, user.tenant_id, user.tenant_name,
                                  user.id, form["email"], form["role"])
    except DomainError as exc:
        return await _team_page(db, request, form=form, errors=_errors_of(exc, "email"), status_code=400)
    request.session[_LINK_KEY] = {"kind": "invitation", "email": form["email"].strip(), "url": link.url,
                                  "expires_at": link.expires_at, "mailed": link.mailed}
    return done(request, "/settings/team", f"Invitation for {form['email'].strip()} created.")


@post("/team/invitations/{link_id:str}/revoke", status_code=303)
async def revoke_invitation(request: AnyRequest, db: DatabaseDep, link_id: str) -> Redirect:
    try:
        await links.revoke_invitation(db, tenant_of(request), link_id)
    except NotFound as exc:
        raise not_found("invitation") from exc
    return done(request, "/settings/team", "Invitation revoked; its link no longer works.")


async def _confirm_page(db: Database, request: AnyRequest, user_id: str, *, action: str, role: str = "") -> Template:
    """What deactivating or demoting the member would revoke, with the button that does it."""
    try:
        revocation = await team.what_is_revoked(db, tenant_of(request), user_id)
        member = await team.get_member(db, tenant_of(request), user_id)
    except NotFound as exc:
        raise not_found("user") from exc
    return render(request, "team/confirm.html", active_nav="settings", settings_nav="team", member=member,
                  action=action, role=role, revocation=revocation)


async def _needs_confirmation(db: Database, request: AnyRequest, user_id: str, confirmed: bool) -> bool:
    if confirmed:
        return False
    try:
        return (await team.what_is_revoked(db, tenant_of(request), user_id)).revokes_anything_issued
    except NotFound as exc:
        raise not_found("user") from exc


@post("/team/{user_id:str}/role", status_code=303)
async def change_role(request: AnyRequest, db: DatabaseDep, user_id: str) -> Template | Redirect:
    single, _ = await form_of(request)
    role = single.get("role", "")
    me = user_of(request)
    if (role in team.ASSIGNABLE_ROLES and team.below_admin(role)
            and await _needs_confirmation(db, request, user_id, single.get("confirmed") == "1")):
        member = await team.get_member(db, tenant_of(request), user_id)
        if member is not None and member["role"] not in ("owner", role):
            return await _confirm_page(db, request, user_id, action="role", role=role)
    try:
        changed = await team.change_role(db, tenant_of(request), me.id, user_id, role,
                                         keep_session=current_session_key(request))
    except NotFound as exc:
        raise not_found("user") from exc
    except DomainError as exc:
        return done(request, "/settings/team", exc.detail, "error")
    if changed and user_id == me.id:
        _renew_session(request, user_id)  # a fresh session id at every change of one's own privileges
    return done(request, "/settings/team", "Role changed." if changed else "Role unchanged.")


@get("/team/{user_id:str}/deactivate")
async def deactivate_page(request: AnyRequest, db: DatabaseDep, user_id: str) -> Template:
    return await _confirm_page(db, request, user_id, action="deactivate")


@post("/team/{user_id:str}/active", status_code=303)
async def set_active(request: AnyRequest, db: DatabaseDep, user_id: str) -> Template | Redirect:
    single, _ = await form_of(request)
    active = single.get("active") == "1"
    if not active and await _needs_confirmation(db, request, user_id, single.get("confirmed") == "1"):
        return await _confirm_page(db, request, user_id, action="deactivate")
    try:
        await team.set_active(db, tenant_of(request), user_of(request).id, user_id, active)
    except NotFound as exc:
        raise not_found("user") from exc
    except DomainError as exc:
        return done(request, "/settings/team", exc.detail, "error")
    return done(request, "/settings/team", "User reactivated: they sign in afresh." if active else
                "User deactivated: their sessions ended, and what they issued was revoked.")


@post("/team/{user_id:str}/reset", status_code=303)
async def issue_reset(request: AnyRequest, db: DatabaseDep, config: ConfigDep, user_id: str) -> Redirect:
    try:
        link = await links.issue_reset(db, config, tenant_of(request),
                                       user_of(request).id, user_id)
    except NotFound as exc:
        raise not_found("user") from exc
    except DomainError as exc:
        return done(request, "/settings/team", exc.detail, "error")
    request.session[_LINK_KEY] = {"kind": "reset", "url": link.url, "expires_at": link.expires_at, "mailed": False}
    return done(request, "/settings/team", "Password-reset link created: hand it over, it works once within 1 hour.")


def _renew_session(request: AnyRequest, user_id: str) -> None:
    start_session(request, {"user_id": user_id})  # a fresh id; the old row is deleted


# --- public: accept an invitation, set a new password ------------------------------------------------

async def _link_page(db: Database, request: AnyRequest, secret: str, kind: str, *, form: dict[str, Any] | None = None,
                     errors: dict[str, str] | None = None, status_code: int = 200) -> Template:
    try:
        link = await links.open_link(db, secret, kind)
    except NotFound as exc:
        return Template("team/link_invalid.html", context={"message": exc.detail}, status_code=404)
    template = "team/accept.html" if kind == "invitation" else "team/reset.html"
    response = Template(template, context={"link": link, "form": form or {}, "errors": errors or {},
                                           "secret": secret}, status_code=status_code)
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"  # the secret is in the URL
    return response


@get("/invitations/{secret:str}", include_in_schema=False)
async def accept_page(request: AnyRequest, db: DatabaseDep, secret: str) -> Template:
    return await _link_page(db, request, secret, "invitation")


@post("/invitations/{secret:str}", include_in_schema=False, status_code=303)
async def accept(request: AnyRequest, db: DatabaseDep, secret: str) -> Template | Redirect:
    single, _ = await form_of(request)
    form = {"name": single.get("name", "")}
    try:
        user = await links.accept_invitation(db, secret, single.get("name", ""),
                                             single.get("password", ""), single.get("password_confirm", ""))
    except NotFound:
        return await _link_page(db, request, secret, "invitation")
    except DomainError as exc:
        return await _link_page(db, request, secret, "invitation", form=form, errors=_errors_of(exc, "name"),
                                status_code=400)
    _renew_session(request, user["id"])
    return done(request, "/", "Welcome! Your account is ready.")


@get("/password-reset/{secret:str}", include_in_schema=False)
async def reset_page(request: AnyRequest, db: DatabaseDep, secret: str) -> Template:
    return await _link_page(db, request, secret, "reset")


@post("/password-reset/{secret:str}", include_in_schema=False, status_code=303)
async def reset(request: AnyRequest, db: DatabaseDep, secret: str) -> Template | Redirect:
    single, _ = await form_of(request)
    try:
        user = await links.use_reset(db, secret, single.get("password", ""),
                                     single.get("password_confirm", ""))
    except NotFound:
        return await _link_page(db, request, secret, "reset")
    except DomainError as exc:
        return await _link_page(db, request, secret, "reset", errors=_errors_of(exc, "password"), status_code=400)
    _renew_session(request, user["id"])
    return done(request, "/", "Your new password is set.")


# --- own account ---------------------------------------------------------------------------------------

async def _account_page(db: Database, request: AnyRequest, *, form: dict[str, Any] | None = None,
                        errors: dict[str, str] | None = None, status_code: int = 200) -> Template:
    user = user_of(request)
    return render(request, "team/account.html", status_code=status_code, active_nav="account",
                  form=form or {"name": user.name}, errors=errors or {},
                  notify_mail=await inbox.mail_switch(db, user.id))


@get("/account")
async def account_page(request: AnyRequest, db: DatabaseDep) -> Template:
    return await _account_page(db, request)


@post("/account", status_code=303, **needs_role("viewer"))
async def update_account(request: AnyRequest, db: DatabaseDep) -> Template | Redirect:
    single, _ = await form_of(request)
    form = {"name": single.get("name", "")}
    user = user_of(request)
    try:
        changed = await team.update_account(
            db, user.tenant_id, user.id, name=form["name"], old_password=single.get("old_password", ""),
            new_password=single.get("new_password", ""), confirm=single.get("confirm", ""),
            keep_session=current_session_key(request))
    except DomainError as exc:
        return await _account_page(db, request, form=form, errors=_errors_of(exc, "name"), status_code=400)
    if changed["password"]:
        _renew_session(request, user.id)
        return done(request, "/account", "Saved. Your other sessions were ended.")
    return done(request, "/account", "Saved." if any(changed.values()) else "Nothing changed.")


@get("/account/sessions")
async def sessions_page(request: AnyRequest, db: DatabaseDep) -> Template:
    current = current_session_key(request)
    sessions = await team.list_sessions(db, user_of(request).id)
    for row in sessions:
        row["current"] = row["key"] == current
    response = render(request, "account/sessions.html", active_nav="account",
                      sessions=[{k: v for k, v in row.items() if k != "key"} for row in sessions])
    response.headers["Cache-Control"] = "no-store"
    return response


@post("/account/sessions", status_code=303, **needs_role("viewer"))
async def end_sessions(request: AnyRequest, db: DatabaseDep) -> Redirect:
    """Form field ``end``: a session's handle from the list, or ``others`` for every session but this one."""
    single, _ = await form_of(request)
    user = user_of(request)
    ended = await team.end_own_sessions(db, user.tenant_id, user.id, single.get("end", "").strip(),
                                        current_session_key(request))
    if not ended:
        return done(request, "/account/sessions", "No session ended.")
    return done(request, "/account/sessions", "Session ended." if ended == 1 else f"{ended} sessions ended.")


def router() -> Router:
    return Router(path="/settings", route_handlers=[team_page, invite, revoke_invitation, change_role, deactivate_page,
                                                    set_active, issue_reset],
                  guards=[page_guard], include_in_schema=False, **needs_role("admin"))


def public_router() -> Router:
    return Router(path="/", route_handlers=[accept_page, accept, reset_page, reset], include_in_schema=False)


def account_router() -> Router:
    return Router(path="/", route_handlers=[account_page, update_account, sessions_page, end_sessions],
                  guards=[page_guard],
                  include_in_schema=False)

