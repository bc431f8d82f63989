"""Periodic jobs shared by every process on a database run once per period (tms.background)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.conftest import ServerProcess, run_admin
from tms.background import _run_shared


def test_a_shared_job_runs_once_per_period_whoever_asks(start_server: Callable[..., ServerProcess]) -> None:
    server = start_server()
    runs: list[str] = []

    async def job() -> None:
        runs.append("ran")

    async def three_replicas_ask(db: Any) -> None:
        for _ in range(3):  # three processes reaching the same round of a daily job
            await _run_shared(db, job, 24 * 3600, "test job")
        await _run_shared(db, job, 24 * 3600, "another job")  # a different job has its own claim

    run_admin(server.db_path, three_replicas_ask)
    assert runs == ["ran", "ran"]

    async def a_short_period_later(db: Any) -> None:
        await _run_shared(db, job, 0.001, "test job")  # the period has passed: the next round runs

    run_admin(server.db_path, a_short_period_later)
    assert runs == ["ran", "ran", "ran"]
