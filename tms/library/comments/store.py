"""SQL of comments (migration 0037), and the tenant's users an ``@email`` names."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tms.db import Database, Row, Transaction

_COLUMNS = ("id, target_kind, target_id, project_id, author_kind, author_id, author_name, body, body_html, "
            "mentions, notified, created_at, updated_at")


async def users_by_email(db: Database | Transaction, tenant_id: str, emails: Sequence[str]) -> list[Row]:
    """The tenant's users with these addresses (one query; emails compare case-insensitively on both
    backends: NOCASE in SQLite, CITEXT in PostgreSQL)."""
    if not emails:
        return []
    marks = ", ".join("?" for _ in emails)
    return await db.fetch_all(f"SELECT id, email, active FROM users WHERE tenant_id = ? AND email IN ({marks})",
                              (tenant_id, *emails))


async def insert(tx: Transaction, row: dict[str, Any]) -> None:
    await tx.execute(
        "INSERT INTO comments (id, tenant_id, project_id, target_kind, target_id, author_kind, author_id, "
        "author_name, body, body_html, mentions, created_at, updated_at) VALUES (:id, :tenant_id, :project_id, "
        ":target_kind, :target_id, :author_kind, :author_id, :author_name, :body, :body_html, :mentions, "
        ":created_at, :updated_at)", row)


async def get(db: Database | Transaction, tenant_id: str, comment_id: str) -> Row | None:
    return await db.fetch_one(f"SELECT {_COLUMNS} FROM comments WHERE id = ? AND tenant_id = ?",
                              (comment_id, tenant_id))


async def page(db: Database, tenant_id: str, target_kind: str, target_id: str, limit: int,
               offset: int) -> tuple[list[Row], int]:
    """A target's comments, oldest first, over the index comments_target."""
    where = "tenant_id = ? AND target_kind = ? AND target_id = ?"
    params = (tenant_id, target_kind, target_id)
    rows = await db.fetch_all(f"SELECT {_COLUMNS} FROM comments WHERE {where} ORDER BY created_at, id LIMIT ? OFFSET ?",
                              (*params, limit, offset))
    total = await db.fetch_value(f"SELECT COUNT(*) FROM comments WHERE {where}", params)
    return rows, int(total)


async def update(tx: Transaction, comment_id: str, body: str, body_html: str, mentions: str, notified: str,
                 updated_at: str) -> None:
    await tx.execute("UPDATE comments SET body = ?, body_html = ?, mentions = ?, notified = ?, updated_at = ? "
                     "WHERE id = ?", (body, body_html, mentions, notified, updated_at, comment_id))


async def delete(tx: Transaction, comment_id: str) -> None:
    await tx.execute("DELETE FROM comments WHERE id = ?", (comment_id,))
