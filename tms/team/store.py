from __future__ import annotations

from tms.db import Database, Row, Transaction

_ANY_USER = "SELECT EXISTS (SELECT 1 FROM users)"


async def insert_user(
    tx: Transaction, user_id: str, tenant_id: str, email: str, password_hash: str, created_at: str,
    role: str | None = None,
) -> None:
    """Inserts a user; the tenant's first user is always its owner, later ones get ``role`` (admin without)."""
    await tx.execute(
        "INSERT INTO users (id, tenant_id, email, password_hash, created_at, role) VALUES (?, ?, ?, ?, ?, "
        "CASE WHEN EXISTS (SELECT 1 FROM users WHERE tenant_id = ?) THEN COALESCE(?, 'admin') ELSE 'owner' END)",
        (user_id, tenant_id, email, password_hash, created_at, tenant_id, role),
    )


async def find_user_by_email(db: Database, email: str) -> Row | None:
    return await db.fetch_one(
        "SELECT u.id, u.tenant_id, u.email, u.password_hash, u.active, t.status AS tenant_status "
        "FROM users u JOIN tenants t ON t.id = u.tenant_id WHERE u.email = ?",
        (email,),
    )


async def get_user(db: Database | Transaction, user_id: str) -> Row | None:
    return await db.fetch_one(
        "SELECT u.id, u.tenant_id, u.email, u.name, u.role, u.active, t.name AS tenant_name, "
        "t.status AS tenant_status FROM users u JOIN tenants t ON t.id = u.tenant_id WHERE u.id = ?",
        (user_id,),
    )


async def any_user_exists(db: Database | Transaction) -> bool:
    return bool(await db.fetch_value(_ANY_USER))


async def email_taken(db: Database | Transaction, email: str) -> bool:
    return bool(await db.fetch_value("SELECT 1 FROM users WHERE email = ?", (email,)))


async def record_login(tx: Transaction, user_id: str, at: str, new_hash: str | None) -> None:
    if new_hash is None:
        await tx.execute("UPDATE users SET last_login_at = ? WHERE id = ?", (at, user_id))
    else:
        await tx.execute(
            "UPDATE users SET last_login_at = ?, password_hash = ? WHERE id = ?", (at, new_hash, user_id)
        )


_LIST = "id, email, name, role, active, created_at, last_login_at"


async def list_users(db: Database, tenant_id: str) -> list[Row]:
    return await db.fetch_all(f"SELECT {_LIST} FROM users WHERE tenant_id = ? ORDER BY created_at, id",
                              (tenant_id,))


async def get_member(db: Database | Transaction, tenant_id: str, user_id: str) -> Row | None:
    return await db.fetch_one(f"SELECT {_LIST}, password_hash FROM users WHERE tenant_id = ? AND id = ?",
                              (tenant_id, user_id))


async def update_member(tx: Transaction, tenant_id: str, user_id: str, changes: dict[str, object]) -> None:
    allowed = {"name", "role", "active", "password_hash"}
    if set(changes) - allowed:
        raise ValueError(f"not updatable: {sorted(set(changes) - allowed)}")
    assignments = ", ".join(f"{column} = ?" for column in changes)
    await tx.execute(f"UPDATE users SET {assignments} WHERE tenant_id = ? AND id = ?",
                     (*changes.values(), tenant_id, user_id))


async def insert_member(tx: Transaction, user_id: str, tenant_id: str, email: str, name: str, password_hash: str,
                        role: str, created_at: str) -> None:
    await tx.execute(
        "INSERT INTO users (id, tenant_id, email, name, password_hash, role, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (user_id, tenant_id, email, name, password_hash, role, created_at),
    )


async def insert_link(tx: Transaction, row: dict[str, object]) -> None:
    await tx.execute(
        "INSERT INTO user_links (id, tenant_id, kind, email, role, user_id, token_sha256, created_by, created_at, "
        "expires_at) VALUES (:id, :tenant_id, :kind, :email, :role, :user_id, :token_sha256, :created_by, "
        ":created_at, :expires_at)",
        row,
    )


async def find_link(db: Database | Transaction, token_sha256: bytes) -> Row | None:
    return await db.fetch_one(
        "SELECT l.id, l.tenant_id, l.kind, l.email, l.role, l.user_id, l.expires_at, l.used_at, l.revoked_at, "
        "t.name AS tenant_name, t.status AS tenant_status FROM user_links l JOIN tenants t ON t.id = l.tenant_id "
        "WHERE l.token_sha256 = ?",
        (token_sha256,),
    )


async def use_link(tx: Transaction, link_id: str, at: str) -> int:
    """Marks the link used; 0 when it was used or revoked meanwhile (single use under races)."""
    return await tx.execute(
        "UPDATE user_links SET used_at = ? WHERE id = ? AND used_at IS NULL AND revoked_at IS NULL", (at, link_id))


async def revoke_links(tx: Transaction, tenant_id: str, kind: str, *, email: str | None = None,
                       user_id: str | None = None, link_id: str | None = None, at: str) -> int:
    where, params = ["tenant_id = ?", "kind = ?", "used_at IS NULL", "revoked_at IS NULL"], [tenant_id, kind]
    for column, value in (("email", email), ("user_id", user_id), ("id", link_id)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    return await tx.execute(f"UPDATE user_links SET revoked_at = ? WHERE {' AND '.join(where)}", (at, *params))


async def pending_invitations(db: Database, tenant_id: str, now: str) -> list[Row]:
    return await db.fetch_all(
        "SELECT l.id, l.email, l.role, l.created_at, l.expires_at, u.email AS created_by_email "
        "FROM user_links l LEFT JOIN users u ON u.id = l.created_by WHERE l.tenant_id = ? AND l.kind = 'invitation' "
        "AND l.used_at IS NULL AND l.revoked_at IS NULL AND l.expires_at > ? ORDER BY l.created_at DESC",
        (tenant_id, now),
    )


async def live_links_created_by(db: Database | Transaction, tenant_id: str, user_id: str, now: str) -> list[Row]:
    """Unused, unrevoked, unexpired invitations and reset links a user issued (``email`` is the invitee's
    or, for a reset, the address of the account it resets)."""
    return await db.fetch_all(
        "SELECT id, kind, email, role, user_id, created_at, expires_at FROM user_links WHERE tenant_id = ? "
        "AND created_by = ? AND used_at IS NULL AND revoked_at IS NULL AND expires_at > ? ORDER BY kind, created_at",
        (tenant_id, user_id, now),
    )


async def revoke_links_created_by(tx: Transaction, tenant_id: str, user_id: str, at: str) -> int:
    """Revokes every unused link the user issued (expired ones too: nothing of theirs stays usable)."""
    return await tx.execute(
        "UPDATE user_links SET revoked_at = ? WHERE tenant_id = ? AND created_by = ? AND used_at IS NULL "
        "AND revoked_at IS NULL", (at, tenant_id, user_id))
