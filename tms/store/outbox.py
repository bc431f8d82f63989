"""The event outbox: events are rows written in the same transaction as the change behind them."""

from __future__ import annotations

from tms.db import Database, Row, Transaction


async def insert_event(
    tx: Transaction, *, event_id: str, tenant_id: str, event: str, body: bytes, created_at: str
) -> None:
    await tx.execute(
        "INSERT INTO events (id, tenant_id, event, body, created_at) VALUES (?, ?, ?, ?, ?)",
        (event_id, tenant_id, event, body, created_at),
    )


async def insert_events(tx: Transaction, rows: list[tuple[str, str, str, bytes, str]]) -> None:
    """Many events at once: (id, tenant_id, event, body, created_at) tuples, one executemany."""
    await tx.executemany(
        "INSERT INTO events (id, tenant_id, event, body, created_at) VALUES (?, ?, ?, ?, ?)", rows
    )


async def list_events(db: Database, tenant_id: str, event: str | None = None, limit: int = 100) -> list[Row]:
    if event is None:
        return await db.fetch_all(
            "SELECT id, event, body, created_at FROM events WHERE tenant_id = ? ORDER BY rowid DESC LIMIT ?",
            (tenant_id, limit),
        )
    return await db.fetch_all(
        "SELECT id, event, body, created_at FROM events WHERE tenant_id = ? AND event = ? "
        "ORDER BY rowid DESC LIMIT ?",
        (tenant_id, event, limit),
    )
