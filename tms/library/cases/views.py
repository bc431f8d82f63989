"""Read-only queries behind the test-case pages: a case's retest flag and result history.

The list and its search are the API's own (tms.library.cases.search.list_cases with a CaseQuery).
Every query filters on tenant_id.
"""

from __future__ import annotations

from tms.db import Database, Row


async def retest_flag(db: Database, tenant_id: str, case_id: str) -> Row | None:
    """The retest columns of one case (added by migration 0008)."""
    return await db.fetch_one(
        "SELECT needs_retest, retest_reason, retest_bug_key, retest_flagged_at FROM test_cases "
        "WHERE tenant_id = ? AND id = ?",
        (tenant_id, case_id),
    )


async def result_history(db: Database, tenant_id: str, case_id: str, limit: int = 50) -> list[Row]:
    """The case's latest results across runs, newest first, with the run they belong to."""
    return await db.fetch_all(
        "SELECT r.id, r.status, r.duration_ms, r.framework, r.error_message, r.bug_ticket_key, r.bug_ticket_url, "
        "r.executed_at, r.created_at, r.updated_at, u.id AS run_id, u.name AS run_name, u.environment, "
        "u.status AS run_status FROM test_results r JOIN test_runs u ON u.id = r.run_id "
        "WHERE r.tenant_id = ? AND r.test_case_id = ? ORDER BY r.created_at DESC LIMIT ?",
        (tenant_id, case_id, limit),
    )
