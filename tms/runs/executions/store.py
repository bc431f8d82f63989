"""SQL behind executing one result by hand: read/update one row, bulk assignment, "My work"."""

from __future__ import annotations

import json

from tms.db import Database, Row, Transaction

_LINKED = (
    "id, run_id, test_case_id, test_case_code, title, status, comment, bug_ticket_key, bug_ticket_url, "
    "duration_ms, framework, error_message, error_stack, executed_at, created_at, updated_at, assignee_id, "
    "step_results, updated_by, case_version, fingerprint, source, custom_fields, location_file AS file, "
    "location_line AS line"
)
_UNLINKED = _LINKED.replace("test_case_id, test_case_code", "NULL AS test_case_id, NULL AS test_case_code").replace(
    "assignee_id, step_results, updated_by, case_version",
    "NULL AS assignee_id, NULL AS step_results, NULL AS updated_by, NULL AS case_version")
async def get_result(db: Database | Transaction, tenant_id: str, result_id: str) -> tuple[Row, bool] | None:
    """(row, linked) of a linked or unlinked result of the tenant."""
    row = await db.fetch_one(f"SELECT {_LINKED} FROM test_results WHERE id = ? AND tenant_id = ?",
                             (result_id, tenant_id))
    if row is not None:
        return row, True
    row = await db.fetch_one(f"SELECT {_UNLINKED} FROM unlinked_test_results WHERE id = ? AND tenant_id = ?",
                             (result_id, tenant_id))
    return (row, False) if row is not None else None


async def count_in_run(db: Database | Transaction, tenant_id: str, run_id: str, result_ids: list[str]) -> int:
    return int(await db.fetch_value(
        "SELECT COUNT(*) FROM test_results WHERE run_id = ? AND tenant_id = ? "
        "AND id IN (SELECT value FROM json_each(?))",
        (run_id, tenant_id, json.dumps(result_ids)),
    ))


async def my_work(db: Database, tenant_id: str, user_id: str, limit: int, offset: int) -> tuple[list[Row], int]:
    """Untested (UNKNOWN) results assigned to the user in runs still open, oldest run first."""
    condition = ("r.tenant_id = ? AND r.assignee_id = ? AND r.status = 'UNKNOWN' "
                 "AND t.status IN ('PENDING', 'IN_PROGRESS')")
    rows = await db.fetch_all(
        "SELECT r.id, r.run_id, r.test_case_code, r.title, r.status, r.updated_at, t.name AS run_name, "
        "t.environment FROM test_results r JOIN test_runs t ON t.id = r.run_id "
        f"WHERE {condition} ORDER BY t.created_at, r.rowid LIMIT ? OFFSET ?",
        (tenant_id, user_id, limit, offset),
    )
    total = await db.fetch_value(
        f"SELECT COUNT(*) FROM test_results r JOIN test_runs t ON t.id = r.run_id WHERE {condition}",
        (tenant_id, user_id),
    )
    return rows, int(total)


async def next_untested(db: Database, tenant_id: str, run_id: str, after_id: str,
                        assignee_id: str | None) -> str | None:
    """The id of the next UNKNOWN result of the run after ``after_id`` (in stored order), wrapping
    around to the start; optionally only those assigned to one user."""
    extra, params = "", [run_id, tenant_id]
    if assignee_id is not None:
        extra = " AND assignee_id = ?"
        params.append(assignee_id)
    base = f"SELECT id FROM test_results WHERE run_id = ? AND tenant_id = ? AND status = 'UNKNOWN'{extra}"
    after = await db.fetch_value(f"{base} AND rowid > (SELECT rowid FROM test_results WHERE id = ?) "
                                 "ORDER BY rowid LIMIT 1", (*params, after_id))
    if after is not None:
        return str(after)
    first = await db.fetch_value(f"{base} AND id != ? ORDER BY rowid LIMIT 1", (*params, after_id))
    return None if first is None else str(first)


async def neighbours(db: Database, tenant_id: str, run_id: str, result_id: str) -> tuple[int, int]:
    """(position of the result in the run, 1-based; number of linked results in the run)."""
    row = await db.fetch_one(
        "SELECT (SELECT COUNT(*) FROM test_results WHERE run_id = ? AND rowid <= "
        "(SELECT rowid FROM test_results WHERE id = ?)) AS position, "
        "(SELECT COUNT(*) FROM test_results WHERE run_id = ?) AS total",
        (run_id, result_id, run_id),
    )
    assert row is not None
    return int(row["position"]), int(row["total"])
