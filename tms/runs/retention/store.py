"""Removal of whole old runs (retention.runs_days), a chunk of results per short transaction."""

from __future__ import annotations

from tms.db import Database, Row, Transaction


async def runs_created_before(db: Database, before: str, limit: int) -> list[Row]:
    return await db.fetch_all(
        "SELECT id, tenant_id FROM test_runs WHERE created_at < ? ORDER BY created_at LIMIT ?", (before, limit)
    )


async def result_ids_chunk(tx: Transaction, run_id: str, limit: int) -> list[str]:
    """Up to ``limit`` result ids of the run, linked and unlinked (each through its run index)."""
    rows = await tx.fetch_all(
        "SELECT id FROM (SELECT id FROM test_results WHERE run_id = ? LIMIT ?) "
        "UNION ALL SELECT id FROM (SELECT id FROM unlinked_test_results WHERE run_id = ? LIMIT ?)",
        (run_id, limit, run_id, limit),
    )
    return [row["id"] for row in rows]


async def delete_run(tx: Transaction, tenant_id: str, run_id: str) -> None:
    """Deletes the (emptied) run and clears the failure fingerprints' references to it: a fingerprint
    first or last seen in a removed run keeps its times and counts, with no run to link to (NULL).
    Both through the fingerprints' run indexes, in the transaction that removes the run."""
    for column in ("first_run_id", "last_run_id"):
        await tx.execute(
            f"UPDATE failure_fingerprints SET {column} = NULL WHERE {column} = ? AND tenant_id = ?", (run_id, tenant_id)
        )
    await tx.execute("DELETE FROM test_runs WHERE id = ?", (run_id,))
