"""SQL of the test_runs table; every query filters on tenant_id."""

from __future__ import annotations

from typing import Any, NamedTuple

from tms.db import Database, Row, Transaction
from tms.db.paging import equality_filters, page_in_creation_order
from tms.runs.models import RunKind

COLUMNS = (
    "id, project_id, name, environment, status, created_at, updated_at, completed_at, results_total, "
    "results_passed, results_failed, results_broken, results_skipped, results_unknown, milestone_id, plan_id, summary, "
    "results_manual"
)
COUNT_COLUMNS = ("results_total", "results_passed", "results_failed", "results_broken", "results_skipped",
                 "results_unknown", "results_manual")


class RunCounts(NamedTuple):
    """A run's stored counts (``test_runs.results_*``), or a change to them: every result by status, and
    those whose source is manual (migration 0027; the run's kind is read from it). Made by
    ``tms.runs.writes``; the API's shape is ``tms.runs.models.RunCounts``."""

    total: int = 0
    passed: int = 0
    failed: int = 0
    broken: int = 0
    skipped: int = 0
    unknown: int = 0
    manual: int = 0


NO_RESULTS = RunCounts()


def run_kind(run: Row) -> RunKind:
    """A run's kind (issue 24) from its stored counts: manual when every result is, automated when none."""
    total, manual = run["results_total"], run["results_manual"]
    if not manual:
        return "automated"
    return "manual" if manual >= total else "mixed"


async def get_run(db: Database | Transaction, tenant_id: str, run_id: str) -> Row | None:
    return await db.fetch_one(f"SELECT {COLUMNS} FROM test_runs WHERE tenant_id = ? AND id = ?",
                              (tenant_id, run_id))


async def list_runs(
    db: Database, tenant_id: str, *, project_id: str | None, status: str | None, limit: int, offset: int,
    milestone_id: str | None = None, plan_id: str | None = None,
) -> tuple[list[Row], int]:
    """One page of runs in creation order, and the total matching the filters."""
    where, params = equality_filters(tenant_id, project_id=project_id, status=status, milestone_id=milestone_id,
                                     plan_id=plan_id)
    return await page_in_creation_order(db, "test_runs", COLUMNS, where, params, limit, offset)


async def insert_run(
    tx: Transaction,
    *,
    run_id: str,
    tenant_id: str,
    project_id: str,
    name: str,
    environment: str | None,
    status: str,
    created_at: str,
    counts: RunCounts = NO_RESULTS,
    milestone_id: str | None = None,
    plan_id: str | None = None,
) -> None:
    completed_at = created_at if status == "COMPLETED" else None
    await tx.execute(
        f"INSERT INTO test_runs (id, tenant_id, project_id, name, environment, status, created_at, updated_at, "
        f"completed_at, {', '.join(COUNT_COLUMNS)}, milestone_id, plan_id) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (run_id, tenant_id, project_id, name, environment, status, created_at, created_at, completed_at, *counts,
         milestone_id, plan_id),
    )


async def update_run(tx: Transaction, tenant_id: str, run_id: str, changes: dict[str, Any]) -> int:
    allowed = {"name", "environment", "status", "updated_at", "completed_at", "milestone_id", "summary"}
    if set(changes) - allowed:
        raise ValueError(f"not updatable: {sorted(set(changes) - allowed)}")
    assignments = ", ".join(f"{column} = ?" for column in changes)
    return await tx.execute(
        f"UPDATE test_runs SET {assignments} WHERE tenant_id = ? AND id = ?",
        (*changes.values(), tenant_id, run_id),
    )


_ADD = ", ".join(f"{column} = {column} + ?" for column in COUNT_COLUMNS)


async def add_results(tx: Transaction, tenant_id: str, run_id: str, deltas: RunCounts, at: str) -> None:
    """Adds to the run's counts after a write of results; the first results move PENDING to IN_PROGRESS."""
    await tx.execute(
        f"UPDATE test_runs SET {_ADD}, updated_at = ?, "
        "status = CASE status WHEN 'PENDING' THEN 'IN_PROGRESS' ELSE status END "
        "WHERE tenant_id = ? AND id = ?",
        (*deltas, at, tenant_id, run_id),
    )


async def shift_counts(tx: Transaction, tenant_id: str, run_id: str, deltas: RunCounts, at: str) -> None:
    """Adds to the run's counts without touching its status (cases added to or removed from a run)."""
    await tx.execute(
        f"UPDATE test_runs SET {_ADD}, updated_at = ? WHERE tenant_id = ? AND id = ?",
        (*deltas, at, tenant_id, run_id),
    )
