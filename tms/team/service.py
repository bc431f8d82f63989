"""The team of a tenant: members and roles, one-time invitation and password-reset links, own account.

Links are ``<base_url>/invitations/<secret>`` (48 hours) and ``/password-reset/<secret>`` (1 hour): the
secret is 256 random bits, only its SHA-256 digest is stored (a high-entropy secret needs no slow hash,
as for API tokens), and a link works once. The owner (the tenant's first user) cannot be demoted,
deactivated or reset by anyone else, so a team can never lose its last way in.

Trust ends with the change that withdraws it: deactivating a member or demoting them below admin
revokes the API tokens they created and the invitations and reset links they issued (one audit entry
each), and ends their sessions; a password change ends the user's other sessions, a reset every one.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from tms.config import Config
from tms.db import Database, Row, Transaction
from tms.errors import Conflict, InvalidInput, NotFound
from tms.ids import iso, new_id, now_iso
from tms.notifications import mail
from tms.team import accounts
from tms.team import store as user_store
from tms.team.audit import service as audit
from tms.team.signin import sessions as session_store
from tms.team.tokens import service as tokens
from tms.team.tokens import store as token_store

log = logging.getLogger(__name__)

ROLES = ("owner", "admin", "tester", "viewer")
ASSIGNABLE_ROLES = ("admin", "tester", "viewer")
INVITATION_TTL = timedelta(hours=48)
RESET_TTL = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class IssuedLink:
    id: str
    url: str
    expires_at: str
    mailed: bool = False


@dataclass(frozen=True, slots=True)
class Revocation:
    """What deactivating a member or demoting them below admin withdraws: the confirm page lists it."""

    tokens: list[Row] = field(default_factory=list)       # id, name, prefix, scopes, created_at, last_used_at
    invitations: list[Row] = field(default_factory=list)  # id, email, role, expires_at
    resets: list[Row] = field(default_factory=list)       # id, email (the account it resets), expires_at
    sessions: int = 0

    @property
    def revokes_anything_issued(self) -> bool:
        return bool(self.tokens or self.invitations or self.resets)


def below_admin(role: str) -> bool:
    return role not in ("owner", "admin")


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


def _expiry(ttl: timedelta) -> str:
    return iso(datetime.now(UTC) + ttl)


def user_dict(row: Row) -> dict[str, Any]:
    return {"id": row["id"], "email": row["email"], "name": row["name"], "role": row["role"],
            "active": bool(row["active"]), "created_at": row["created_at"]}


async def list_users(db: Database, tenant_id: str) -> list[Row]:
    return await user_store.list_users(db, tenant_id)


async def _member(db: Any, tenant_id: str, user_id: str) -> Row:
    row = await user_store.get_member(db, tenant_id, user_id)
    if row is None:
        raise NotFound(f"user {user_id} not found")
    return row


def _check_role(role: str, field: str = "role") -> None:
    if role not in ASSIGNABLE_ROLES:
        raise InvalidInput(f"role must be one of {', '.join(ASSIGNABLE_ROLES)}", field=field)


async def invite(db: Database, config: Config, tenant_id: str, tenant_name: str, inviter_id: str, email: str,
                 role: str) -> IssuedLink:
    """A one-time invitation link (48 h); a newer invitation to the same address replaces older ones.
    Mailed too when ``[smtp] host`` is set; the link is always returned so an admin can hand it over."""
    errors: dict[str, str] = {}
    try:
        email = accounts.clean_email(email)
    except InvalidInput as exc:
        errors["email"] = exc.detail
    if role not in ASSIGNABLE_ROLES:
        errors["role"] = f"role must be one of {', '.join(ASSIGNABLE_ROLES)}"
    if errors:
        raise FormErrors(errors)
    secret, link_id, now = secrets.token_urlsafe(32), new_id(), now_iso()
    expires = _expiry(INVITATION_TTL)
    async with db.transaction() as tx:
        if await user_store.email_taken(tx, email):
            raise Conflict(f"{email} already has an account", field="email")
        await user_store.revoke_links(tx, tenant_id, "invitation", email=email, at=now)
        await user_store.insert_link(tx, {
            "id": link_id, "tenant_id": tenant_id, "kind": "invitation", "email": email, "role": role,
            "user_id": None, "token_sha256": _digest(secret), "created_by": inviter_id, "created_at": now,
            "expires_at": expires})
        await audit.record(tx, tenant_id, "user.invited", "invitation", link_id, {"email": email, "role": role})
    url = f"{config.base_url.rstrip('/')}/invitations/{secret}"
    mailed = await mail.send_mail(config, email, f"You are invited to {tenant_name} on TMS",
                             f"You have been invited to join {tenant_name} on TMS as {role}.\n\n"
                             f"Accept within 48 hours (the link works once):\n{url}\n")
    return IssuedLink(link_id, url, expires, mailed)


async def pending_invitations(db: Database, tenant_id: str) -> list[Row]:
    """The tenant's invitations not used and not expired, with who created each (the team page)."""
    return await user_store.pending_invitations(db, tenant_id, now_iso())


async def revoke_invitation(db: Database, tenant_id: str, link_id: str) -> None:
    async with db.transaction() as tx:
        if not await user_store.revoke_links(tx, tenant_id, "invitation", link_id=link_id, at=now_iso()):
            raise NotFound(f"invitation {link_id} not found")
        await audit.record(tx, tenant_id, "invitation.revoked", "invitation", link_id)


class FormErrors(InvalidInput):
    """Several wrong fields at once: ``fields`` maps each to its message (``errors`` lists them too)."""

    def __init__(self, errors: dict[str, str]) -> None:
        first = next(iter(errors))
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()), field=first,
                         errors=[{"field": k, "message": v} for k, v in errors.items()])
        self.fields = errors


async def open_link(db: Database, secret: str, kind: str) -> Row:
    """The valid, unused, unexpired link of that kind; anything else is one NotFound (no oracle)."""
    row = await user_store.find_link(db, _digest(secret)) if secret else None
    if (row is None or row["kind"] != kind or row["used_at"] or row["revoked_at"] or row["expires_at"] <= now_iso()
            or row["tenant_status"] != "ACTIVE"):
        raise NotFound("This link is invalid, was already used or has expired. Ask an admin for a new one.")
    return row


def _check_account_fields(name: str, password: str, confirm: str | None = None) -> tuple[str, dict[str, str]]:
    errors: dict[str, str] = {}
    cleaned = name.strip()
    if not cleaned:
        errors["name"] = "Enter your name."
    elif len(cleaned) > 200:
        errors["name"] = "At most 200 characters."
    try:
        accounts.check_password_rules(password)
    except InvalidInput as exc:
        errors["password"] = exc.detail
    if confirm is not None and confirm != password and "password" not in errors:
        errors["password_confirm"] = "The two passwords differ."  # noqa: S105 - a message
    return cleaned, errors


async def accept_invitation(db: Database, secret: str, name: str, password: str, confirm: str | None = None) -> Row:
    """Creates the invited user with the invitation's role; the link is used up in the same transaction."""
    link = await open_link(db, secret, "invitation")
    cleaned, errors = _check_account_fields(name, password, confirm)
    if errors:
        raise FormErrors(errors)
    password_hash = await accounts.hash_password(password)
    user_id, now = new_id(), now_iso()
    async with db.transaction() as tx:
        if not await user_store.use_link(tx, link["id"], now):
            raise NotFound("This link was already used.")
        if await user_store.email_taken(tx, link["email"]):
            raise Conflict(f"{link['email']} already has an account", field="email")
        await user_store.insert_member(tx, user_id, link["tenant_id"], link["email"], cleaned, password_hash,
                                       link["role"], now)
        audit.acting_as(audit.Actor("user", user_id, cleaned))
        await audit.record(tx, link["tenant_id"], "user.joined", "user", user_id,
                           {"email": link["email"], "role": link["role"], "invitation_id": link["id"]})
    return {"id": user_id, "tenant_id": link["tenant_id"]}


def _guard_owner(actor_id: str, target: Row, what: str) -> None:
    if target["role"] == "owner" and target["id"] != actor_id:
        raise Conflict(f"The owner cannot be {what} by anyone else.", field="role")


async def what_is_revoked(db: Database, tenant_id: str, user_id: str) -> Revocation:
    """What deactivating or demoting the member below admin would revoke now (for the confirm page)."""
    await _member(db, tenant_id, user_id)
    links = await user_store.live_links_created_by(db, tenant_id, user_id, now_iso())
    return Revocation(
        tokens=await token_store.live_tokens_created_by(db, tenant_id, user_id),
        invitations=[row for row in links if row["kind"] == "invitation"],
        resets=[row for row in links if row["kind"] == "reset"],
        sessions=await session_store.count_sessions(db, user_id),
    )


async def _withdraw_trust(tx: Transaction, db: Database, tenant_id: str, user_id: str, reason: str) -> None:
    """Revokes what the user issued (tokens, invitations, reset links), one audit entry each."""
    now = now_iso()
    links = await user_store.live_links_created_by(tx, tenant_id, user_id, now)
    await tokens.revoke_created_by(tx, db, tenant_id, user_id, reason)
    if links:
        await user_store.revoke_links_created_by(tx, tenant_id, user_id, now)
        await audit.record_many(tx, tenant_id, [
            audit.Entry(f"{row['kind']}.revoked", row["kind"], row["id"],
                        {"email": row["email"], "issued_by": user_id, "reason": reason})
            for row in links])


async def _end_sessions(tx: Transaction, tenant_id: str, user_id: str, reason: str, *, keep: str | None = None) -> int:
    ended = await session_store.end_sessions(tx, user_id, keep=keep)
    if ended:
        await audit.record(tx, tenant_id, "user.sessions_ended", "user", user_id, {"sessions": ended, "reason": reason})
    return ended


async def change_role(db: Database, tenant_id: str, actor_id: str, user_id: str, role: str, *,
                      keep_session: str | None = None) -> bool:
    """Sets a member's role; True when it changed. The owner's role never changes. A change to a role
    below admin revokes what the member issued and ends their sessions (``keep_session``, the key of
    the session asking, survives when members change their own role: it gets a fresh id instead)."""
    _check_role(role)
    async with db.transaction() as tx:
        target = await _member(tx, tenant_id, user_id)
        _guard_owner(actor_id, target, "demoted")
        if target["role"] == "owner":
            raise Conflict("The owner stays owner: a team always keeps one.", field="role")
        if target["role"] == role:
            return False
        await user_store.update_member(tx, tenant_id, user_id, {"role": role})
        await audit.record(tx, tenant_id, "user.role_changed", "user", user_id, {"role": [target["role"], role]})
        if below_admin(role):
            reason = f"{target['email']} became {role}"
            await _withdraw_trust(tx, db, tenant_id, user_id, reason)
            await _end_sessions(tx, tenant_id, user_id, reason, keep=keep_session if user_id == actor_id else None)
    return True


async def set_active(db: Database, tenant_id: str, actor_id: str, user_id: str, active: bool) -> None:
    """Deactivating revokes what the user issued and ends their sessions; reactivating starts afresh
    (sessions from before the deactivation never come back)."""
    async with db.transaction() as tx:
        target = await _member(tx, tenant_id, user_id)
        _guard_owner(actor_id, target, "deactivated")
        if not active and (target["role"] == "owner" or target["id"] == actor_id):
            raise Conflict("You cannot deactivate yourself; the owner cannot be deactivated.", field="active")
        if bool(target["active"]) == active:
            return
        await user_store.update_member(tx, tenant_id, user_id, {"active": 1 if active else 0})
        await audit.record(tx, tenant_id, "user.reactivated" if active else "user.deactivated", "user", user_id,
                           {"active": [bool(target["active"]), active]})
        reason = f"{target['email']} was {'reactivated' if active else 'deactivated'}"
        if not active:
            await _withdraw_trust(tx, db, tenant_id, user_id, reason)
        await _end_sessions(tx, tenant_id, user_id, reason)


async def issue_reset(db: Database, config: Config, tenant_id: str, actor_id: str, user_id: str) -> IssuedLink:
    """A one-time password-reset link (1 h) for a member; older unused ones stop working."""
    secret, link_id, now = secrets.token_urlsafe(32), new_id(), now_iso()
    expires = _expiry(RESET_TTL)
    async with db.transaction() as tx:
        target = await _member(tx, tenant_id, user_id)
        _guard_owner(actor_id, target, "reset")
        await user_store.revoke_links(tx, tenant_id, "reset", user_id=user_id, at=now)
        await user_store.insert_link(tx, {
            "id": link_id, "tenant_id": tenant_id, "kind": "reset", "email": target["email"], "role": None,
            "user_id": user_id, "token_sha256": _digest(secret), "created_by": actor_id, "created_at": now,
            "expires_at": expires})
        await audit.record(tx, tenant_id, "user.reset_issued", "user", user_id)
    return IssuedLink(link_id, f"{config.base_url.rstrip('/')}/password-reset/{secret}", expires)


async def mail_reset(db: Database, config: Config, email: str, address: str) -> bool:
    """Forgot password: mails the account of ``email`` a one-time reset link (1 h; older unused ones of
    that user stop working). Runs after the answer was sent, which is the same for every address; True
    when a mail went out. Nothing is mailed without ``[smtp] host``, for a deactivated member or a
    suspended tenant, nor, with ``[auth] password_login = false``, to anyone but an owner."""
    if not config.get("smtp.host"):
        log.warning("a password reset was asked for, but [smtp] host is not set: no mail sent")
        return False
    user = await user_store.find_user_by_email(db, email.strip())
    if user is None or not user["active"] or user["tenant_status"] != "ACTIVE":
        return False
    member = await _member(db, user["tenant_id"], user["id"])
    if not config.get("auth.password_login") and member["role"] != "owner":
        return False
    secret, link_id, now = secrets.token_urlsafe(32), new_id(), now_iso()
    async with db.transaction() as tx:
        member_tenant = user["tenant_id"]
        await user_store.revoke_links(tx, member_tenant, "reset", user_id=user["id"], at=now)
        await user_store.insert_link(tx, {
            "id": link_id, "tenant_id": member_tenant, "kind": "reset", "email": member["email"], "role": None,
            "user_id": user["id"], "token_sha256": _digest(secret), "created_by": None, "created_at": now,
            "expires_at": _expiry(RESET_TTL)})
        await audit.record(tx, member_tenant, "user.reset_mailed", "user", user["id"], {"address": address})
    url = f"{config.base_url.rstrip('/')}/password-reset/{secret}"
    return await mail.send_mail(config, member["email"], "Set a new TMS password",
                           "Someone (we hope you) asked to set a new password for your TMS account.\n\n"
                           f"Set it within 1 hour (the link works once):\n{url}\n\n"
                           "If it was not you, ignore this mail: your password stays as it is.\n")


async def use_reset(db: Database, secret: str, password: str, confirm: str | None = None) -> Row:
    link = await open_link(db, secret, "reset")
    _, errors = _check_account_fields("x", password, confirm)
    if errors:
        raise FormErrors(errors)
    password_hash = await accounts.hash_password(password)
    async with db.transaction() as tx:
        if not await user_store.use_link(tx, link["id"], now_iso()):
            raise NotFound("This link was already used.")
        target = await _member(tx, link["tenant_id"], link["user_id"])
        await user_store.update_member(tx, link["tenant_id"], target["id"], {"password_hash": password_hash})
        audit.acting_as(audit.Actor("user", target["id"], target["name"] or target["email"]))
        await audit.record(tx, link["tenant_id"], "user.password_reset", "user", target["id"])
        await _end_sessions(tx, link["tenant_id"], target["id"], "password reset")
    return target


async def update_account(db: Database, tenant_id: str, user_id: str, *, name: str, old_password: str,
                         new_password: str, confirm: str, keep_session: str | None = None) -> dict[str, bool]:
    """The signed-in user's own name and (with the old password) password. Every wrong field at once.
    A new password ends every other session of the user (``keep_session``, the one asking, stays).
    Returns which of name/password changed."""
    errors: dict[str, str] = {}
    cleaned = name.strip()
    if len(cleaned) > 200:
        errors["name"] = "At most 200 characters."
    wants_password = bool(old_password or new_password or confirm)
    member = await _member(db, tenant_id, user_id)
    if wants_password:
        if not await accounts.verify_password(member["password_hash"], old_password):
            errors["old_password"] = "This is not your current password."  # noqa: S105 - a message
        try:
            accounts.check_password_rules(new_password)
        except InvalidInput as exc:
            errors["new_password"] = exc.detail
        if new_password != confirm and "new_password" not in errors:
            errors["confirm"] = "The two passwords differ."
    if errors:
        raise FormErrors(errors)
    changes: dict[str, object] = {}
    if cleaned != member["name"]:
        changes["name"] = cleaned
    if wants_password:
        changes["password_hash"] = await accounts.hash_password(new_password)
    if changes:
        async with db.transaction() as tx:
            await user_store.update_member(tx, tenant_id, user_id, changes)
            diff: dict[str, Any] = {}
            if "name" in changes:
                diff["name"] = [member["name"], cleaned]
            if "password_hash" in changes:
                diff["password"] = ["(old)", "(changed)"]
            await audit.record(tx, tenant_id, "user.updated", "user", user_id, diff)
            if "password_hash" in changes:
                await _end_sessions(tx, tenant_id, user_id, "password changed", keep=keep_session)
    return {"name": "name" in changes, "password": "password_hash" in changes}


async def list_sessions(db: Database, user_id: str) -> list[Row]:
    """The user's own live sessions (``/account/sessions``), most recently used first."""
    return await session_store.sessions_of(db, user_id)


async def end_own_sessions(db: Database, tenant_id: str, user_id: str, handle: str, current_key: str | None) -> int:
    """Ends one of the user's sessions by its handle, or with ``handle="others"`` every one but the
    current; returns how many ended (0 for a handle that names none of theirs)."""
    async with db.transaction() as tx:
        if handle == "others":
            return await _end_sessions(tx, tenant_id, user_id, "ended from the sessions page", keep=current_key)
        for row in await session_store.sessions_of(tx, user_id):
            if row["handle"] == handle:
                ended = await session_store.end_session(tx, user_id, row["key"])
                await audit.record(tx, tenant_id, "user.sessions_ended", "user", user_id,
                                   {"sessions": ended, "reason": "ended from the sessions page",
                                    "device": row["user_agent"]})
                return ended
    return 0


async def get_member(db: Database | Transaction, tenant_id: str, user_id: str) -> Row | None:
    """One user of the tenant (another tenant's id: None), with role and active flag."""
    return await user_store.get_member(db, tenant_id, user_id)
