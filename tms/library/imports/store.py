"""SQL of import_previews: a preview's file and form, kept until it is confirmed, for a limited time."""

from __future__ import annotations

from tms.db import Database, Row, Transaction


async def insert(tx: Transaction, token: str, tenant_id: str, user_id: str, meta: str, content: bytes,
                 created_at: str) -> None:
    await tx.execute(
        "INSERT INTO import_previews (token, tenant_id, user_id, meta, content, created_at) VALUES (?, ?, ?, ?, ?, ?)",
        (token, tenant_id, user_id, meta, content, created_at),
    )


async def delete_expired(tx: Transaction, before: str) -> int:
    """Every tenant's previews made before ``before`` (indexed by created_at)."""
    return await tx.execute("DELETE FROM import_previews WHERE created_at < ?", (before,))


async def keep_newest(tx: Transaction, tenant_id: str, user_id: str | None, count: int) -> int:
    """Drops the previews of the user (or, with ``user_id`` None, of the tenant) past the newest ``count``."""
    params: tuple[str, ...]
    if user_id is None:
        where, params = "tenant_id = ?", (tenant_id,)
    else:
        where, params = "tenant_id = ? AND user_id = ?", (tenant_id, user_id)
    return await tx.execute(
        f"DELETE FROM import_previews WHERE {where} AND token NOT IN ("
        f"SELECT token FROM import_previews WHERE {where} ORDER BY created_at DESC, token DESC LIMIT ?)",
        (*params, *params, count),
    )


async def take(tx: Transaction, tenant_id: str, user_id: str, token: str) -> Row | None:
    """The preview, deleted as it is read: of two confirmations at once, one finds nothing."""
    return await tx.fetch_one(
        "DELETE FROM import_previews WHERE token = ? AND tenant_id = ? AND user_id = ? "
        "RETURNING meta, content, created_at",
        (token, tenant_id, user_id),
    )


async def count_for_tenant(db: Database, tenant_id: str) -> int:
    return int(await db.fetch_value("SELECT COUNT(*) FROM import_previews WHERE tenant_id = ?", (tenant_id,)) or 0)
