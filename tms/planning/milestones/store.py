"""SQL of milestones, and the run totals that make their progress; every query filters on tenant_id."""

from __future__ import annotations

import json
from typing import Any

from tms.db import Database, Row, Transaction
from tms.db.paging import equality_filters, page_in_creation_order

COLUMNS = "id, project_id, name, description, due_on, status, completed_at, created_at, updated_at"
# the sums of the run summaries (test_runs.results_*), never an aggregate over results
_TOTALS = "COUNT(*) AS runs_count, " + ", ".join(
    f"COALESCE(SUM(results_{name}), 0) AS {name}"
    for name in ("total", "passed", "failed", "broken", "skipped", "unknown")
)


async def get_milestone(db: Database | Transaction, tenant_id: str, milestone_id: str) -> Row | None:
    return await db.fetch_one(f"SELECT {COLUMNS} FROM milestones WHERE tenant_id = ? AND id = ?",
                              (tenant_id, milestone_id))


async def list_milestones(
    db: Database, tenant_id: str, *, project_id: str | None, status: str | None, limit: int, offset: int
) -> tuple[list[Row], int]:
    where, params = equality_filters(tenant_id, project_id=project_id, status=status)
    return await page_in_creation_order(db, "milestones", COLUMNS, where, params, limit, offset)


async def run_totals(db: Database | Transaction, tenant_id: str, milestone_ids: list[str]) -> dict[str, Row]:
    """milestone id -> runs_count and summed counts, for a page of milestones in one query."""
    if not milestone_ids:
        return {}
    rows = await db.fetch_all(
        f"SELECT milestone_id, {_TOTALS} FROM test_runs "
        "WHERE milestone_id IN (SELECT value FROM json_each(?)) AND tenant_id = ? GROUP BY milestone_id",
        (json.dumps(milestone_ids), tenant_id),
    )
    return {row["milestone_id"]: row for row in rows}


async def insert_milestone(tx: Transaction, row: dict[str, Any]) -> None:
    await tx.execute(
        "INSERT INTO milestones (id, tenant_id, project_id, name, description, due_on, status, completed_at, "
        "created_at, updated_at) VALUES (:id, :tenant_id, :project_id, :name, :description, :due_on, 'OPEN', "
        "NULL, :created_at, :created_at)",
        row,
    )


async def update_milestone(tx: Transaction, tenant_id: str, milestone_id: str, changes: dict[str, Any]) -> int:
    allowed = {"name", "description", "due_on", "status", "completed_at", "updated_at"}
    if set(changes) - allowed:
        raise ValueError(f"not updatable: {sorted(set(changes) - allowed)}")
    assignments = ", ".join(f"{column} = ?" for column in changes)
    return await tx.execute(
        f"UPDATE milestones SET {assignments} WHERE tenant_id = ? AND id = ?",
        (*changes.values(), tenant_id, milestone_id),
    )


async def delete_milestone(tx: Transaction, tenant_id: str, milestone_id: str) -> int:
    """Deletes the milestone and keeps its runs and plans, unlinked; returns how many runs it had."""
    runs = await tx.execute(
        "UPDATE test_runs SET milestone_id = NULL WHERE milestone_id = ? AND tenant_id = ?", (milestone_id, tenant_id)
    )
    await tx.execute("UPDATE test_plans SET milestone_id = NULL WHERE milestone_id = ? AND tenant_id = ?",
                     (milestone_id, tenant_id))
    await tx.execute("DELETE FROM milestones WHERE tenant_id = ? AND id = ?", (tenant_id, milestone_id))
    return runs
