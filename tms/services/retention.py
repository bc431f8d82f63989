"""Retention of unlinked ingested results: the sweep, per tenant or for all.

Rows are deleted in batches, each in its own short transaction, so a sweep of millions of rows never
holds the single writer long enough to stall ingests. Run summaries (counts) are left as reported.
"""

from __future__ import annotations

import logging

from tms.background import run_periodically
from tms.config import Config
from tms.db import Database
from tms.ids import iso_days_ago, now_iso
from tms.store import idempotency as idempotency_store
from tms.store import results as result_store

log = logging.getLogger(__name__)

BATCH = 5_000
# A CI job retries within minutes; a week of Idempotency-Keys is plenty and keeps the table small.
IDEMPOTENCY_DAYS = 7


def cutoff(days: int) -> str:
    """Rows created at or before this instant are swept; 0 days = everything existing now."""
    return now_iso() if days <= 0 else iso_days_ago(days)


async def sweep_tenant(db: Database, tenant_id: str, days: int) -> int:
    """Deletes the tenant's unlinked results older than ``days``; returns how many."""
    before, deleted = cutoff(days), 0
    while True:
        async with db.transaction() as tx:
            count = await result_store.delete_unlinked_before(tx, tenant_id, before, BATCH)
        deleted += count
        if count < BATCH:
            return deleted


async def sweep_all(db: Database, config: Config) -> int:
    """The daily job: every tenant's unlinked results, plus expired Idempotency-Keys."""
    days = int(config.get("retention.unlinked_days"))
    total = 0
    for tenant_id in await result_store.tenants_with_unlinked_results(db):
        total += await sweep_tenant(db, tenant_id, days)
    async with db.transaction() as tx:
        await idempotency_store.delete_before(tx, iso_days_ago(IDEMPOTENCY_DAYS))
    log.info("retention sweep removed %d unlinked results", total)
    return total


async def sweep_daily(db: Database, config: Config, first_delay: float = 300, period: float = 24 * 3600) -> None:
    """The server's own sweep: a first pass a few minutes after start, then once a day.

    Starting with a pass matters: a server restarted by more frequent deploys than daily would
    otherwise never reach its first sweep. A failing pass is logged and the loop goes on.
    """
    await run_periodically(lambda: sweep_all(db, config), period, "retention sweep", first_delay=first_delay)
