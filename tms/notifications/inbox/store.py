"""SQL of the inbox: the ``notifications`` table and each user's mail switch (migration 0037)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tms.db import Database, Row, Transaction

_COLUMNS = "id, kind, title, link, actor_id, created_at, read_at"


async def recipients(tx: Transaction, tenant_id: str, user_ids: Sequence[str]) -> list[Row]:
    """The active users of the tenant among ``user_ids`` (one query), with their address and switch."""
    if not user_ids:
        return []
    marks = ", ".join("?" for _ in user_ids)
    return await tx.fetch_all(
        f"SELECT id, email, notify_mail FROM users WHERE tenant_id = ? AND active = 1 AND id IN ({marks})",
        (tenant_id, *user_ids),
    )


async def insert(tx: Transaction, rows: list[tuple[Any, ...]]) -> None:
    await tx.insert_rows(
        "notifications", ("id", "tenant_id", "user_id", "kind", "title", "link", "actor_id", "created_at"), rows)


async def page(db: Database, tenant_id: str, user_id: str, *, unread_only: bool, limit: int,
               offset: int) -> tuple[list[Row], int]:
    where = "tenant_id = ? AND user_id = ?" + (" AND read_at IS NULL" if unread_only else "")
    rows = await db.fetch_all(
        f"SELECT {_COLUMNS} FROM notifications WHERE {where} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
        (tenant_id, user_id, limit, offset))
    total = await db.fetch_value(f"SELECT COUNT(*) FROM notifications WHERE {where}", (tenant_id, user_id))
    return rows, int(total)


async def unread_count(db: Database, user_id: str) -> int:
    """The bell: one count over the partial index ``notifications_unread``."""
    return int(await db.fetch_value(
        "SELECT COUNT(*) FROM notifications WHERE user_id = ? AND read_at IS NULL", (user_id,)))


async def get(db: Database | Transaction, tenant_id: str, user_id: str, notification_id: str) -> Row | None:
    return await db.fetch_one(
        f"SELECT {_COLUMNS} FROM notifications WHERE id = ? AND tenant_id = ? AND user_id = ?",
        (notification_id, tenant_id, user_id))


async def set_read(tx: Transaction, notification_id: str, read_at: str | None) -> None:
    await tx.execute("UPDATE notifications SET read_at = ? WHERE id = ?", (read_at, notification_id))


async def mark_all_read(tx: Transaction, tenant_id: str, user_id: str, read_at: str) -> int:
    """One statement over the unread partial index; the number of notifications it marked."""
    count = await tx.fetch_value(
        "SELECT COUNT(*) FROM notifications WHERE user_id = ? AND read_at IS NULL AND tenant_id = ?",
        (user_id, tenant_id))
    await tx.execute(
        "UPDATE notifications SET read_at = ? WHERE user_id = ? AND read_at IS NULL AND tenant_id = ?",
        (read_at, user_id, tenant_id))
    return int(count)


async def mail_switch(db: Database | Transaction, user_id: str) -> bool:
    return bool(await db.fetch_value("SELECT notify_mail FROM users WHERE id = ?", (user_id,)))


async def set_mail_switch(tx: Transaction, tenant_id: str, user_id: str, on: bool) -> None:
    await tx.execute("UPDATE users SET notify_mail = ? WHERE id = ? AND tenant_id = ?",
                     (1 if on else 0, user_id, tenant_id))


async def delete_older(tx: Transaction, before: str, limit: int, *, read_only: bool) -> int:
    """Deletes up to ``limit`` notifications created before ``before`` (``read_only``: read ones alone),
    oldest first, over the index notifications_age (notifications_read_age); how many it deleted."""
    where = "created_at < ?" + (" AND read_at IS NOT NULL" if read_only else "")
    return await tx.execute(
        f"DELETE FROM notifications WHERE id IN (SELECT id FROM notifications WHERE {where} "
        "ORDER BY created_at LIMIT ?)", (before, limit))
