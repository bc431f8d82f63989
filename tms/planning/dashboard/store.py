"""Read-only aggregates for the dashboard of one project. Every query filters on tenant_id.

Each is bounded by an index: runs by (tenant_id, project_id) in rowid order, results by the
(run_id, test_case_id) unique index, the retest queue by its partial index, unlinked results by
(tenant_id, project_id). None scans the whole library.
"""

from __future__ import annotations

from tms.db import Database, Row


async def failing_and_unstable(db: Database, tenant_id: str, run_ids: list[str], limit: int
                               ) -> tuple[list[Row], list[Row]]:
    """Over the given runs: the cases failing most often (FAILED or BROKEN), and the cases that both
    passed and failed (flaky in fact, whatever their label). One aggregate pass serves both lists.

    The aggregate reads the runs' results through the (run_id, test_case_id) index; ``+r.tenant_id``
    keeps the planner off the tenant-wide case-history index, which would read every result of the
    tenant. The few rows kept are joined to the library by primary key. The counts are spelled
    ``SUM(CASE ...)``, which both backends add natively (PostgreSQL's ``SUM(boolean)`` stand-in is a SQL
    function called per row: most of this query's time there).
    """
    if not run_ids:
        return [], []
    marks = ",".join("?" * len(run_ids))
    rows = await db.fetch_all(
        "WITH agg AS MATERIALIZED ("
        " SELECT r.test_case_id, MAX(r.test_case_code) AS test_case_code,"
        " SUM(CASE WHEN r.status = 'PASSED' THEN 1 ELSE 0 END) AS passes,"
        " SUM(CASE WHEN r.status IN ('FAILED', 'BROKEN') THEN 1 ELSE 0 END) AS failures,"
        " SUM(CASE WHEN r.status != 'UNKNOWN' THEN 1 ELSE 0 END) AS executions"
        f" FROM test_results r WHERE r.run_id IN ({marks}) AND +r.tenant_id = ? GROUP BY r.test_case_id), "
        "picked AS ("
        " SELECT * FROM (SELECT 'failing' AS list, * FROM agg WHERE failures > 0"
        "  ORDER BY failures DESC, executions ASC, test_case_code LIMIT ?)"
        " UNION ALL SELECT * FROM (SELECT 'unstable' AS list, * FROM agg WHERE passes > 0 AND failures > 0"
        "  ORDER BY MIN(passes, failures) DESC, test_case_code LIMIT ?)) "
        "SELECT p.*, c.title, c.automation_status FROM picked p "
        "LEFT JOIN test_cases c ON c.id = p.test_case_id AND +c.tenant_id = ?",
        (*run_ids, tenant_id, limit, limit, tenant_id),
    )
    failing = sorted((r for r in rows if r["list"] == "failing"),
                     key=lambda r: (-r["failures"], r["executions"], r["test_case_code"]))
    unstable = sorted((r for r in rows if r["list"] == "unstable"),
                      key=lambda r: (-min(r["passes"], r["failures"]), r["test_case_code"]))
    return failing, unstable


async def flaky_cases(db: Database, tenant_id: str, project_id: str, limit: int) -> tuple[list[Row], int]:
    rows = await db.fetch_all(
        "SELECT id, code, title, priority, updated_at FROM test_cases "
        "WHERE tenant_id = ? AND project_id = ? AND automation_status = 'FLAKY' ORDER BY rowid DESC LIMIT ?",
        (tenant_id, project_id, limit),
    )
    total = await db.fetch_value(
        "SELECT COUNT(*) FROM test_cases WHERE tenant_id = ? AND project_id = ? AND automation_status = 'FLAKY'",
        (tenant_id, project_id),
    )
    return rows, int(total)


async def case_count(db: Database, tenant_id: str, project_id: str) -> int:
    return int(await db.fetch_value(
        "SELECT COUNT(*) FROM test_cases WHERE tenant_id = ? AND project_id = ?", (tenant_id, project_id)))


async def run_count(db: Database, tenant_id: str, project_id: str) -> int:
    return int(await db.fetch_value(
        "SELECT COUNT(*) FROM test_runs WHERE tenant_id = ? AND project_id = ?", (tenant_id, project_id)))


async def retest_queue(db: Database, tenant_id: str, project_id: str, limit: int) -> tuple[list[Row], int]:
    rows = await db.fetch_all(
        "SELECT id, code, title, retest_reason, retest_bug_key, retest_flagged_at FROM test_cases "
        "WHERE tenant_id = ? AND project_id = ? AND needs_retest = 1 ORDER BY retest_flagged_at, code LIMIT ?",
        (tenant_id, project_id, limit),
    )
    total = await db.fetch_value(
        "SELECT COUNT(*) FROM test_cases WHERE tenant_id = ? AND project_id = ? AND needs_retest = 1",
        (tenant_id, project_id),
    )
    return rows, int(total)
