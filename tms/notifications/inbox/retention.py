"""The inbox's retention: notifications do not pile up for ever.

The policy (what mail clients and trackers do): a notification read more than
``notifications.read_days`` ago — counted from when it was made — has served its purpose and goes;
every notification, read or not, goes after ``notifications.keep_days`` (an account nobody reads).
0 keeps them. A pass deletes oldest first, ``BATCH`` rows per short transaction (the single writer
is never held long), at most ``PASS_BATCHES`` batches (the next day's pass goes on); each batch is an
index range of notifications_age or notifications_read_age (migration 0044).
"""

from __future__ import annotations

import logging

from tms.background import run_periodically
from tms.config import Config
from tms.db import Database
from tms.ids import iso_days_ago
from tms.notifications.inbox import store

log = logging.getLogger(__name__)

BATCH = 5_000
PASS_BATCHES = 200  # 1,000,000 notifications a pass at most
PERIOD_SECONDS = 24 * 3600
FIRST_DELAY_SECONDS = 600  # a first pass soon after start: frequent deploys must not postpone it for ever


async def prune(db: Database, config: Config) -> int:
    """One pass of the policy over every tenant; the number of notifications removed."""
    removed, batches = 0, 0
    for days, read_only in ((config.get("notifications.keep_days"), False),
                            (config.get("notifications.read_days"), True)):
        if days <= 0:
            continue
        before = iso_days_ago(days)
        while batches < PASS_BATCHES:
            async with db.transaction() as tx:
                count = await store.delete_older(tx, before, BATCH, read_only=read_only)
            removed, batches = removed + count, batches + 1
            if count < BATCH:
                break
    if removed:
        log.info("notification retention removed %d notifications", removed)
    return removed


async def prune_daily(db: Database, config: Config, first_delay: float = FIRST_DELAY_SECONDS,
                      period: float = PERIOD_SECONDS) -> None:
    """The server's own pass: soon after start, then daily, once per period across replicas."""
    await run_periodically(lambda: prune(db, config), period, "notification retention", first_delay=first_delay,
                           db=db)
