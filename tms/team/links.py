"""One-time links of a team: invitations (48 hours) and password resets (1 hour).

A link is ``<base_url>/invitations/<secret>`` or ``/password-reset/<secret>``: the secret is 256 random
bits, only its SHA-256 digest is stored (``user_links``; a high-entropy secret needs no slow hash, as for
API tokens), and a link works once. A newer link of the same kind to the same address or member replaces
the older ones. Using a reset link ends every session of its member. What deactivating or demoting a
member revokes of the links they issued is in ``tms.team.service``.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from tms.config import Config
from tms.db import Database, Row
from tms.errors import Conflict, InvalidInput, NotFound
from tms.ids import iso, new_id, now_iso
from tms.notifications import mail
from tms.team import accounts
from tms.team import store as user_store
from tms.team.audit import service as audit
from tms.team.service import ASSIGNABLE_ROLES, FormErrors, end_sessions, guard_owner, require_member

log = logging.getLogger(__name__)
INVITATION_TTL = timedelta(hours=48)
RESET_TTL = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class IssuedLink:
    id: str
    url: str
    expires_at: str
    mailed: bool = False


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


def _expiry(ttl: timedelta) -> str:
    return iso(datetime.now(UTC) + ttl)


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


async def issue_reset(db: Database, config: Config, tenant_id: str, actor_id: str, user_id: str) -> IssuedLink:
    """A one-time password-reset link (1 h) for a member; older unused ones stop working."""
    secret, link_id, now = secrets.token_urlsafe(32), new_id(), now_iso()
    expires = _expiry(RESET_TTL)
    async with db.transaction() as tx:
        target = await require_member(tx, tenant_id, user_id)
        guard_owner(actor_id, target, "reset")
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
    member = await require_member(db, user["tenant_id"], user["id"])
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
        target = await require_member(tx, link["tenant_id"], link["user_id"])
        await user_store.update_member(tx, link["tenant_id"], target["id"], {"password_hash": password_hash})
        audit.acting_as(audit.Actor("user", target["id"], target["name"] or target["email"]))
        await audit.record(tx, link["tenant_id"], "user.password_reset", "user", target["id"])
        await end_sessions(tx, link["tenant_id"], target["id"], "password reset")
    return target
