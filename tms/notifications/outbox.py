"""The event outbox: events are rows written in the same transaction as the change behind them."""

from __future__ import annotations

from tms.db import Transaction


async def insert_events(tx: Transaction, rows: list[tuple[str, str, str, bytes, str]]) -> None:
    """Many events at once: (id, tenant_id, event, body, created_at) tuples, through the backend's bulk
    path (an ingest writes one event per failed result: 10,000 for a 100,000-result run)."""
    await tx.insert_rows("events", ("id", "tenant_id", "event", "body", "created_at"), rows)
