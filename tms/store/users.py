from __future__ import annotations

import sqlite3

from tms.db import Database, Row, Transaction

_ANY_USER = "SELECT EXISTS (SELECT 1 FROM users)"


async def insert_user(
    tx: Transaction, user_id: str, tenant_id: str, email: str, password_hash: str, created_at: str,
    role: str | None = None,
) -> None:
    """Inserts a user; without a role, the tenant's first user becomes its owner and later ones admins."""
    await tx.execute(
        "INSERT INTO users (id, tenant_id, email, password_hash, created_at, role) VALUES (?, ?, ?, ?, ?, "
        "COALESCE(?, CASE WHEN EXISTS (SELECT 1 FROM users WHERE tenant_id = ?) THEN 'admin' ELSE 'owner' END))",
        (user_id, tenant_id, email, password_hash, created_at, role, tenant_id),
    )


async def find_user_by_email(db: Database, email: str) -> Row | None:
    return await db.fetch_one(
        "SELECT u.id, u.tenant_id, u.email, u.password_hash, u.active, t.status AS tenant_status "
        "FROM users u JOIN tenants t ON t.id = u.tenant_id WHERE u.email = ?",
        (email,),
    )


async def get_user(db: Database, user_id: str) -> Row | None:
    return await db.fetch_one(
        "SELECT u.id, u.tenant_id, u.email, u.name, u.role, u.active, t.name AS tenant_name, "
        "t.status AS tenant_status FROM users u JOIN tenants t ON t.id = u.tenant_id WHERE u.id = ?",
        (user_id,),
    )


async def any_user_exists(db: Database | Transaction) -> bool:
    return await db.fetch_value(_ANY_USER) == 1


def any_user_in_file(conn: sqlite3.Connection) -> bool:
    """The same question on a plain sqlite3 connection (the CLI asks before the app starts)."""
    return bool(conn.execute(_ANY_USER).fetchone()[0])


async def email_taken(db: Database | Transaction, email: str) -> bool:
    return bool(await db.fetch_value("SELECT 1 FROM users WHERE email = ?", (email,)))


async def record_login(tx: Transaction, user_id: str, at: str, new_hash: str | None) -> None:
    if new_hash is None:
        await tx.execute("UPDATE users SET last_login_at = ? WHERE id = ?", (at, user_id))
    else:
        await tx.execute(
            "UPDATE users SET last_login_at = ?, password_hash = ? WHERE id = ?", (at, new_hash, user_id)
        )
