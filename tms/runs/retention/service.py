"""Retention: unlinked ingested results per tenant or for all, and whole old runs.

Rows are deleted in batches, each in its own short transaction, so a sweep of millions of rows never
holds the single writer long enough to stall ingests. Run summaries (counts) are left as reported
when unlinked results go; a run removed by ``retention.runs_days`` goes with everything it holds.
"""

from __future__ import annotations

import logging

from tms.attachments.collection import delete_attachments_in
from tms.attachments.objects import AttachmentStore
from tms.background import run_periodically
from tms.config import Config
from tms.db import Database
from tms.ids import iso_days_ago, now_iso
from tms.runs import writes
from tms.runs.ingest import idempotency as idempotency_store
from tms.runs.results import store as result_store
from tms.runs.retention import store as run_retention_store
from tms.team.audit import service as audit

log = logging.getLogger(__name__)

BATCH = 5_000
# results of one old run removed per transaction: small enough that an ingest waits a few ms at most
RUN_RESULTS_BATCH = 2_000
RUNS_PER_PASS = 100
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
            count = await writes.sweep_unlinked(tx, tenant_id, before, BATCH)
            if count < BATCH and deleted + count:  # the last batch: one entry with the total
                await audit.record(tx, tenant_id, "retention.swept", "tenant", tenant_id,
                                   {"deleted": deleted + count})
        deleted += count
        if count < BATCH:
            return deleted


async def sweep_all(db: Database, config: Config, store: AttachmentStore) -> int:
    """The daily job: every tenant's unlinked results, plus expired Idempotency-Keys."""
    days = config.get("retention.unlinked_days")
    total = 0
    for tenant_id in await result_store.tenants_with_unlinked_results(db):
        total += await sweep_tenant(db, tenant_id, days)
    async with db.transaction() as tx:
        await idempotency_store.delete_before(tx, iso_days_ago(IDEMPOTENCY_DAYS))
    log.info("retention sweep removed %d unlinked results", total)
    runs_days = config.get("retention.runs_days")
    if runs_days > 0:
        removed = await sweep_old_runs(db, store, runs_days)
        log.info("retention sweep removed %d runs older than %d days", removed, runs_days)
    return total


async def sweep_old_runs(db: Database, store: AttachmentStore, days: int) -> int:
    """Removes every run created more than ``days`` ago with its results and attachment files.

    A run's results go a chunk per transaction (attachment rows with them, files once each chunk has
    committed), then the empty run, with the failure fingerprints' references to it set to NULL: the
    writer is never held for more than one chunk.
    """
    before, removed = iso_days_ago(days), 0
    while True:
        runs = await run_retention_store.runs_created_before(db, before, RUNS_PER_PASS)
        for run in runs:
            await _remove_run(db, store, run["tenant_id"], run["id"])
        removed += len(runs)
        if len(runs) < RUNS_PER_PASS:
            return removed


async def _remove_run(db: Database, store: AttachmentStore, tenant_id: str, run_id: str) -> None:
    while True:
        async with db.transaction() as tx:
            result_ids = await run_retention_store.result_ids_chunk(tx, run_id, RUN_RESULTS_BATCH)
            if not result_ids:
                await run_retention_store.delete_run(tx, tenant_id, run_id)
                return
            await delete_attachments_in(tx, db, tenant_id, result_ids, store)
            await writes.delete_of_run(tx, run_id, result_ids)


async def sweep_daily(db: Database, config: Config, store: AttachmentStore, first_delay: float = 300,
                      period: float = 24 * 3600) -> None:
    """The server's own sweep: a first pass a few minutes after start, then once a day.

    Starting with a pass matters: a server restarted by more frequent deploys than daily would
    otherwise never reach its first sweep. A failing pass is logged and the loop goes on.
    """
    await run_periodically(lambda: sweep_all(db, config, store), period, "retention sweep",
                           first_delay=first_delay, db=db)
