"""Periodic jobs of the serving process (token flush, housekeeping, sweeps).

A job given a ``db`` is shared by every replica on that database: each round it runs in one process
only (``db.job_lock``), and only if no process has run it within the last period (a claim recorded
in ``instance_settings``), so N replicas run a daily sweep once a day, not N times.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from tms.db import Database
from tms.db import settings as settings_store
from tms.ids import iso

log = logging.getLogger(__name__)


async def run_periodically(
    job: Callable[[], Awaitable[Any]], period: float, name: str, *, first_delay: float | None = None,
    db: Database | None = None,
) -> None:
    """Runs ``job`` after ``first_delay`` (default: one period), then every ``period`` seconds; with
    ``db``, once per period across all replicas (see the module's docstring).

    A failing run is logged and the loop goes on; cancelling the task stops it.
    """
    delay = period if first_delay is None else first_delay
    while True:
        await asyncio.sleep(delay)
        delay = period
        try:
            if db is None:
                await job()
            else:
                await _run_shared(db, job, period, name)
        except Exception:
            log.exception("background job %s failed", name)


async def _run_shared(db: Database, job: Callable[[], Awaitable[Any]], period: float, name: str) -> None:
    async with db.job_lock(name) as mine:
        if not mine:
            return  # another replica is running it right now
        now = time.time()
        # a little slack: replicas started a few seconds apart must not each skip the other's round
        not_before = iso(datetime.fromtimestamp(now - period * 0.9, UTC))
        async with db.transaction() as tx:
            claimed = await settings_store.claim_job_run(tx, name, iso(datetime.fromtimestamp(now, UTC)), not_before)
        if claimed:
            await job()
