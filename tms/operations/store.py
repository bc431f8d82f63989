"""Queries of the operations endpoints: readiness and the outbox backlog."""

from __future__ import annotations

from tms.db import Database


async def applied_migration_versions(db: Database) -> set[int]:
    rows = await db.fetch_all("SELECT version FROM schema_migrations")
    return {int(row["version"]) for row in rows}


async def pending_delivery_count(db: Database) -> int:
    # walks the partial index webhook_deliveries_due, which holds pending deliveries only
    return int(await db.fetch_value("SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'pending'"))
