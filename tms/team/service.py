"""The team of a tenant: members and roles, deactivation, own account and sessions. The one-time
invitation and password-reset links are ``tms.team.links``.

The owner (the tenant's first user) cannot be demoted, deactivated or reset by anyone else, so a team
can never lose its last way in.

Trust ends with the change that withdraws it: deactivating a member or demoting them below admin
revokes the API tokens they created and the invitations and reset links they issued (one audit entry
each), and ends their sessions; a password change ends the user's other sessions, a reset every one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tms.db import Database, Row, Transaction
from tms.errors import Conflict, InvalidInput, NotFound
from tms.ids import now_iso
from tms.team import accounts
from tms.team import store as user_store
from tms.team.audit import service as audit
from tms.team.signin import sessions as session_store
from tms.team.tokens import service as tokens
from tms.team.tokens import store as token_store

ROLES = ("owner", "admin", "tester", "viewer")
ASSIGNABLE_ROLES = ("admin", "tester", "viewer")


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


def user_dict(row: Row) -> dict[str, Any]:
    return {"id": row["id"], "email": row["email"], "name": row["name"], "role": row["role"],
            "active": bool(row["active"]), "created_at": row["created_at"]}


async def list_users(db: Database, tenant_id: str) -> list[Row]:
    return await user_store.list_users(db, tenant_id)


async def require_member(db: Any, tenant_id: str, user_id: str) -> Row:
    row = await user_store.get_member(db, tenant_id, user_id)
    if row is None:
        raise NotFound(f"user {user_id} not found")
    return row


def _check_role(role: str, field: str = "role") -> None:
    if role not in ASSIGNABLE_ROLES:
        raise InvalidInput(f"role must be one of {', '.join(ASSIGNABLE_ROLES)}", field=field)


class FormErrors(InvalidInput):
    """Several wrong fields at once: ``fields`` maps each to its message (``errors`` lists them too)."""

    def __init__(self, errors: dict[str, str]) -> None:
        first = next(iter(errors))
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()), field=first,
                         errors=[{"field": k, "message": v} for k, v in errors.items()])
        self.fields = errors


def guard_owner(actor_id: str, target: Row, what: str) -> None:
    if target["role"] == "owner" and target["id"] != actor_id:
        raise Conflict(f"The owner cannot be {what} by anyone else.", field="role")


async def what_is_revoked(db: Database, tenant_id: str, user_id: str) -> Revocation:
    """What deactivating or demoting the member below admin would revoke now (for the confirm page)."""
    await require_member(db, tenant_id, user_id)
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


async def end_sessions(tx: Transaction, tenant_id: str, user_id: str, reason: str, *, keep: str | None = None) -> int:
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
        target = await require_member(tx, tenant_id, user_id)
        guard_owner(actor_id, target, "demoted")
        if target["role"] == "owner":
            raise Conflict("The owner stays owner: a team always keeps one.", field="role")
        if target["role"] == role:
            return False
        await user_store.update_member(tx, tenant_id, user_id, {"role": role})
        await audit.record(tx, tenant_id, "user.role_changed", "user", user_id, {"role": [target["role"], role]})
        if below_admin(role):
            reason = f"{target['email']} became {role}"
            await _withdraw_trust(tx, db, tenant_id, user_id, reason)
            await end_sessions(tx, tenant_id, user_id, reason, keep=keep_session if user_id == actor_id else None)
    return True


async def set_active(db: Database, tenant_id: str, actor_id: str, user_id: str, active: bool) -> None:
    """Deactivating revokes what the user issued and ends their sessions; reactivating starts afresh
    (sessions from before the deactivation never come back)."""
    async with db.transaction() as tx:
        target = await require_member(tx, tenant_id, user_id)
        guard_owner(actor_id, target, "deactivated")
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
        await end_sessions(tx, tenant_id, user_id, reason)


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
    member = await require_member(db, tenant_id, user_id)
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
                await end_sessions(tx, tenant_id, user_id, "password changed", keep=keep_session)
    return {"name": "name" in changes, "password": "password_hash" in changes}


async def list_sessions(db: Database, user_id: str) -> list[Row]:
    """The user's own live sessions (``/account/sessions``), most recently used first."""
    return await session_store.sessions_of(db, user_id)


async def end_own_sessions(db: Database, tenant_id: str, user_id: str, handle: str, current_key: str | None) -> int:
    """Ends one of the user's sessions by its handle, or with ``handle="others"`` every one but the
    current; returns how many ended (0 for a handle that names none of theirs)."""
    async with db.transaction() as tx:
        if handle == "others":
            return await end_sessions(tx, tenant_id, user_id, "ended from the sessions page", keep=current_key)
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
