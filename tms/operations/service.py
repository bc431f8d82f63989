"""What the operations endpoints ask the database: the migrations applied (readiness) and the outbox backlog."""

from __future__ import annotations

from tms.db import Database
from tms.operations import store as operations_store


async def applied_migration_versions(db: Database) -> set[int]:
    """The versions in schema_migrations: readiness compares them with the migrations this build ships."""
    return await operations_store.applied_migration_versions(db)


async def pending_delivery_count(db: Database) -> int:
    """Webhook deliveries waiting in the outbox (the tms_outbox_backlog gauge)."""
    return await operations_store.pending_delivery_count(db)
