"""How stored objects leave the attachment store: after the commit of the transaction that deleted
their rows (``forget_after_commit``: objects no row references any more), for the results a
deletion takes (``delete_attachments_in``), and the periodic ``sweep_orphans`` that catches what a
crash left (rows of deleted results, objects no row references, objects with no row at all)."""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from typing import Any

from tms.attachments import store as attachment_store
from tms.attachments.objects import AttachmentStore
from tms.db import Database, Transaction
from tms.ids import now_iso

log = logging.getLogger(__name__)

# an object in the store without a row is only a stray once no upload can still be writing it; an
# upload's claim on a key it is publishing lasts as long
STRAY_GRACE_SECONDS = 3600


# after-commit work holds its task here, so the event loop does not drop it half-way
_PENDING: set[asyncio.Task[Any]] = set()
# after-commit collections running at once in one process: a sweep commits a chunk of results after
# another without waiting for their objects, so the store sees at most this many deletions in flight
COLLECTORS = 4
# objects collected per round: one transaction marks them, one call of the store deletes them (S3:
# DeleteObjects of 1,000 keys a request), one transaction forgets them
COLLECT_BATCH = 2_000
_GATES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()


def _gate() -> asyncio.Semaphore:
    """This event loop's semaphore (tests and admin commands run several loops, one after another)."""
    loop = asyncio.get_running_loop()
    gate = _GATES.get(loop)
    if gate is None:
        gate = _GATES[loop] = asyncio.Semaphore(COLLECTORS)
    return gate


def forget_after_commit(tx: Transaction, db: Database, store: AttachmentStore, object_keys: list[str]) -> None:
    """In the transaction that deleted attachment rows: once it commits, the objects those rows named
    leave the store unless another attachment still references them (never on rollback).

    Runs in the background of this process; an object it misses (the store down, the process
    stopped) is collected by ``sweep_orphans``.
    """
    keys = list(dict.fromkeys(k for k in object_keys if k))
    if not keys:
        return
    def collect_soon() -> None:
        task = asyncio.get_running_loop().create_task(_collect_logged(db, store, keys))
        _PENDING.add(task)
        task.add_done_callback(_PENDING.discard)

    tx.after_commit(collect_soon)


async def settle_pending() -> None:
    """Waits for the after-commit collections of this process (tests, shutdown)."""
    while _PENDING:
        await asyncio.gather(*list(_PENDING), return_exceptions=True)


async def _collect_logged(db: Database, store: AttachmentStore, keys: list[str]) -> None:
    try:
        async with _gate():
            await collect(db, store, keys)
    except Exception as exc:  # the sweep retries; a deletion never fails the write that asked for it
        log.warning("removing %d attachment objects failed (the orphan sweep retries): %s", len(keys), exc)


async def collect(db: Database, store: AttachmentStore, keys: list[str]) -> int:
    """Deletes those of these objects that no attachment references and no upload claims; returns
    how many. The rows are marked first, so an upload of the same bytes waits instead of racing."""
    removed = 0
    for start in range(0, len(keys), COLLECT_BATCH):
        chunk = keys[start : start + COLLECT_BATCH]
        async with db.transaction() as tx:
            marked = await attachment_store.mark_deleting(tx, chunk, now_iso())
        if not marked:
            continue
        try:
            await store.delete(marked)
        except Exception:
            async with db.transaction() as tx:
                await attachment_store.finish_deleting(tx, marked, deleted=False)
            raise
        async with db.transaction() as tx:
            await attachment_store.finish_deleting(tx, marked, deleted=True)
        removed += len(marked)
    return removed


async def delete_attachment_files_for(
    db: Database, tenant_id: str, result_ids: list[str], store: AttachmentStore
) -> int:
    """Deletes the attachments (rows, then unreferenced objects) of results that were deleted;
    returns how many attachment rows went.

    Optional: the periodic ``sweep_orphans`` finds the same attachments; calling this right after
    deleting results only frees the space sooner.
    """
    if not result_ids:
        return 0
    async with db.transaction() as tx:
        keys, count = await attachment_store.delete_for_results_counted(tx, tenant_id, result_ids)
    # objects only after the commit: a rolled-back delete must not lose them
    await collect(db, store, keys)
    return count


async def delete_attachments_in(tx: Transaction, db: Database, tenant_id: str, result_ids: list[str],
                                store: AttachmentStore) -> None:
    """The same inside the caller's transaction that deletes the results: rows go with it, the
    objects no other attachment references once it commits (never on rollback)."""
    keys = await attachment_store.delete_for_results(tx, tenant_id, result_ids)
    forget_after_commit(tx, db, store, keys)


async def sweep_orphans(db: Database, store: AttachmentStore) -> int:
    """Periodic: removes attachments whose result is gone, objects no attachment references, and
    objects in the store that no row names (a crash between writing and committing, a tenant's
    removal). Returns the number of objects removed from the store.

    Deleting runs, projects or unlinked results cascades in SQL, but the attachments table has no
    foreign key to the two result tables, so its rows are collected here.
    """
    removed = 0
    while ids := await attachment_store.find_orphans(db):
        async with db.transaction() as tx:
            keys = await attachment_store.delete_orphans(tx, ids)
        removed += await collect(db, store, keys)
        if not keys:
            break
    while keys := await attachment_store.unreferenced_objects(db, now_iso()):
        collected = await collect(db, store, keys)
        removed += collected
        if not collected:
            break
    removed += await _sweep_strays(db, store)
    if removed:
        log.info("attachment sweep removed %d objects", removed)
    return removed


async def _sweep_strays(db: Database, store: AttachmentStore) -> int:
    before = time.time() - STRAY_GRACE_SECONDS
    removed = 0
    batch: list[str] = []

    async def flush() -> int:
        known = await attachment_store.known_object_keys(db, batch)
        strays = [key for key in batch if key not in known]
        if strays:
            await store.delete(strays)
        batch.clear()
        return len(strays)

    async for info in store.listing():
        # an upload in flight keeps writing its incoming object; a row is written after the object
        if info.modified < before:
            batch.append(info.key)
            if len(batch) >= attachment_store.IN_CHUNK:
                removed += await flush()
    if batch:
        removed += await flush()
    return removed


async def usage_by_tenant(db: Database) -> list[tuple[str, int, int]]:
    """(tenant id, objects, bytes) of every tenant with stored attachments (shared objects once)."""
    return [(row["tenant_id"], int(row["objects"]), int(row["bytes"]))
            for row in await attachment_store.usage_by_tenant(db)]
