"""Periodic jobs of the serving process (token flush, housekeeping, sweeps)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)


async def run_periodically(
    job: Callable[[], Awaitable[Any]], period: float, name: str, *, first_delay: float | None = None
) -> None:
    """Runs ``job`` after ``first_delay`` (default: one period), then every ``period`` seconds.

    A failing run is logged and the loop goes on; cancelling the task stops it.
    """
    delay = period if first_delay is None else first_delay
    while True:
        await asyncio.sleep(delay)
        delay = period
        try:
            await job()
        except Exception:
            log.exception("background job %s failed", name)
