"""Read-only queries behind the run pages: the newest runs first (the API lists oldest first)."""

from __future__ import annotations

from tms.db import Database, Row
from tms.runs.store import COLUMNS


async def list_runs_newest(db: Database, tenant_id: str, *, project_id: str | None, status: str | None,
                           limit: int, offset: int) -> tuple[list[Row], int]:
    where, params = ["tenant_id = ?"], [tenant_id]
    if project_id:
        where.append("project_id = ?")
        params.append(project_id)
    if status:
        where.append("status = ?")
        params.append(status)
    condition = " AND ".join(where)
    # the tenant/project/status indexes keep rowid order, so this reads one page off an index backwards
    rows = await db.fetch_all(
        f"SELECT {COLUMNS} FROM test_runs WHERE rowid IN (SELECT rowid FROM test_runs WHERE {condition} "
        "ORDER BY rowid DESC LIMIT ? OFFSET ?) ORDER BY rowid DESC",
        (*params, limit, offset),
    )
    total = await db.fetch_value(f"SELECT COUNT(*) FROM test_runs WHERE {condition}", params)
    return rows, int(total)


async def newest_runs(db: Database, tenant_id: str, project_id: str, limit: int) -> list[Row]:
    """The project's newest runs, newest first (the dashboard's)."""
    return await db.fetch_all(
        f"SELECT {COLUMNS} FROM test_runs WHERE tenant_id = ? AND project_id = ? ORDER BY rowid DESC LIMIT ?",
        (tenant_id, project_id, limit),
    )


_RESULT_COLUMNS = (
    "id, test_case_id, test_case_code, title, status, comment, bug_ticket_key, bug_ticket_url, duration_ms, "
    "framework, error_message, error_stack, executed_at, created_at, updated_at, fingerprint, "
    "location_file AS file, location_line AS line"
)
_UNLINKED_COLUMNS = _RESULT_COLUMNS.replace("test_case_id, test_case_code", "NULL AS test_case_id, "
                                          "NULL AS test_case_code")


async def result_page(db: Database, tenant_id: str, run_id: str, *, unlinked: bool, status: str | None,
                      limit: int, offset: int, assignee: str | None = None) -> list[Row]:
    """One page of a run's linked (or unlinked) results in stored order, optionally of one status and
    (linked only) one assignee: a user id, or "none" for the unassigned.

    A full-library nightly has tens of thousands of rows; the page reads only the ones it shows.
    """
    table, columns = ("unlinked_test_results", _UNLINKED_COLUMNS) if unlinked else ("test_results", _RESULT_COLUMNS)
    if not unlinked:
        columns += ", assignee_id"
    where, params = "run_id = ? AND tenant_id = ?", [run_id, tenant_id]
    if status:
        where += " AND status = ?"
        params.append(status)
    if assignee and not unlinked:
        if assignee == "none":
            where += " AND assignee_id IS NULL"
        else:
            where += " AND assignee_id = ?"
            params.append(assignee)
    return await db.fetch_all(
        f"SELECT {columns} FROM {table} WHERE {where} ORDER BY rowid LIMIT ? OFFSET ?", (*params, limit, offset))


async def linked_counts(db: Database, tenant_id: str, run_id: str
                        ) -> tuple[dict[str, int], dict[str | None, int], dict[tuple[str, str | None], int]]:
    """The run's linked rows counted per status, per assignee, and per (status, assignee): one scan."""
    rows = await db.fetch_all(
        "SELECT status, assignee_id, COUNT(*) AS n FROM test_results WHERE run_id = ? AND tenant_id = ? "
        "GROUP BY status, assignee_id", (run_id, tenant_id))
    by_status: dict[str, int] = {}
    by_assignee: dict[str | None, int] = {}
    for row in rows:
        by_status[row["status"]] = by_status.get(row["status"], 0) + row["n"]
        by_assignee[row["assignee_id"]] = by_assignee.get(row["assignee_id"], 0) + row["n"]
    return by_status, by_assignee, {(row["status"], row["assignee_id"]): row["n"] for row in rows}


async def unlinked_status_counts(db: Database, tenant_id: str, run_id: str) -> dict[str, int]:
    rows = await db.fetch_all(
        "SELECT status, COUNT(*) AS n FROM unlinked_test_results WHERE run_id = ? AND tenant_id = ? GROUP BY status",
        (run_id, tenant_id))
    return {r["status"]: r["n"] for r in rows}


async def status_counts(db: Database, tenant_id: str, run_id: str) -> tuple[dict[str, int], dict[str, int]]:
    """Rows of the run per status as stored now: (linked, unlinked). The run's summary counters may
    differ for unlinked results after the retention sweep, so the filter tabs count the rows."""
    linked = await db.fetch_all(
        "SELECT status, COUNT(*) AS n FROM test_results WHERE run_id = ? AND tenant_id = ? GROUP BY status",
        (run_id, tenant_id))
    unlinked = await db.fetch_all(
        "SELECT status, COUNT(*) AS n FROM unlinked_test_results WHERE run_id = ? AND tenant_id = ? GROUP BY status",
        (run_id, tenant_id))
    return {r["status"]: r["n"] for r in linked}, {r["status"]: r["n"] for r in unlinked}
