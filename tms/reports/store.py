"""SQL of reports and run exports; every query filters on tenant_id.

Reports aggregate in SQL (GROUP BY) and read the run summaries (``test_runs.results_*``) for totals:
no query returns one row per result except the failures list (``LIMIT``ed) and the export batches
(keyset pages). ``runs`` below is always a JSON array of run ids already checked for the tenant.
"""

from __future__ import annotations

import json

from tms.db import Database, Row
from tms.runs.statuses import RESULT_STATUSES

_RUN_COLUMNS = ("id, name, project_id, environment, status, created_at, completed_at, milestone_id, plan_id, "
                "results_total AS total, results_passed AS passed, results_failed AS failed, "
                "results_broken AS broken, results_skipped AS skipped, results_unknown AS unknown")
# one status column per count, added natively on both backends (see docs/DEVELOPING.md)
_STATUS_SUMS = ", ".join(
    f"SUM(CASE WHEN status = '{status}' THEN 1 ELSE 0 END) AS {status.lower()}"
    for status in RESULT_STATUSES
)
_IN_RUNS = "run_id IN (SELECT value FROM json_each(:runs))"
RUNS_LISTED = 500  # a plan's or milestone's report lists its newest runs, up to this many


# ---- what a report is about -------------------------------------------------------------------------

async def run(db: Database, tenant_id: str, run_id: str) -> Row | None:
    return await db.fetch_one(f"SELECT {_RUN_COLUMNS} FROM test_runs WHERE tenant_id = ? AND id = ?",
                              (tenant_id, run_id))


async def plan(db: Database, tenant_id: str, plan_id: str) -> Row | None:
    return await db.fetch_one(
        "SELECT id, project_id, milestone_id, name, description, created_at FROM test_plans "
        "WHERE tenant_id = ? AND id = ?", (tenant_id, plan_id))


async def milestone(db: Database, tenant_id: str, milestone_id: str) -> Row | None:
    return await db.fetch_one(
        "SELECT id, project_id, name, description, due_on, status, created_at FROM milestones "
        "WHERE tenant_id = ? AND id = ?", (tenant_id, milestone_id))


async def project_name(db: Database, tenant_id: str, project_id: str) -> str | None:
    value = await db.fetch_value("SELECT name FROM projects WHERE tenant_id = ? AND id = ?", (tenant_id, project_id))
    return None if value is None else str(value)


async def runs_of(db: Database, tenant_id: str, column: str, owner_id: str) -> list[Row]:
    """The runs of a plan (``column`` plan_id) or a milestone (milestone_id), newest first, at most
    RUNS_LISTED of them, with their summaries."""
    assert column in ("plan_id", "milestone_id")
    return await db.fetch_all(
        f"SELECT {_RUN_COLUMNS} FROM test_runs WHERE {column} = ? AND tenant_id = ? ORDER BY rowid DESC LIMIT ?",
        (owner_id, tenant_id, RUNS_LISTED),
    )


async def run_ids(db: Database, tenant_id: str, column: str, owner_id: str) -> list[str]:
    """Every run id of a plan or a milestone (ids alone: what the aggregates below are scoped to)."""
    assert column in ("plan_id", "milestone_id")
    rows = await db.fetch_all(f"SELECT id FROM test_runs WHERE {column} = ? AND tenant_id = ?", (owner_id, tenant_id))
    return [row["id"] for row in rows]


async def environments(db: Database, tenant_id: str, runs: str) -> list[Row]:
    """Runs and summed run summaries per environment (NULL: no environment)."""
    sums = ", ".join(f"COALESCE(SUM(results_{name}), 0) AS {name}"
                     for name in ("total", "passed", "failed", "broken", "skipped", "unknown"))
    return await db.fetch_all(
        f"SELECT environment, COUNT(*) AS runs, {sums} FROM test_runs "
        "WHERE id IN (SELECT value FROM json_each(:runs)) AND tenant_id = :tenant GROUP BY environment",
        {"runs": runs, "tenant": tenant_id},
    )


# ---- aggregates -------------------------------------------------------------------------------------

async def by_section(db: Database, tenant_id: str, runs: str) -> list[Row]:
    """Linked results per section of their case (NULL: no section, or the case is gone)."""
    return await db.fetch_all(
        f"SELECT c.section_id AS section_id, COUNT(*) AS total, {_prefixed_sums('r')} "
        "FROM test_results AS r LEFT JOIN test_cases AS c ON c.id = r.test_case_id AND c.tenant_id = r.tenant_id "
        f"WHERE r.{_IN_RUNS} AND r.tenant_id = :tenant GROUP BY c.section_id",
        {"runs": runs, "tenant": tenant_id},
    )


async def unlinked_counts(db: Database, tenant_id: str, runs: str) -> Row | None:
    """Results naming no case, by status (they belong to no section and no assignee)."""
    return await db.fetch_one(
        f"SELECT COUNT(*) AS total, {_STATUS_SUMS} FROM unlinked_test_results "
        f"WHERE {_IN_RUNS} AND tenant_id = :tenant",
        {"runs": runs, "tenant": tenant_id},
    )


async def by_assignee(db: Database, tenant_id: str, runs: str) -> list[Row]:
    """Linked results per assignee (NULL: unassigned), with the assignee's name and e-mail."""
    return await db.fetch_all(
        "SELECT g.assignee_id AS assignee_id, u.name AS name, u.email AS email, g.total AS total, g.passed AS passed, "
        "g.failed AS failed, g.broken AS broken, g.skipped AS skipped, g.unknown AS unknown FROM ("
        f" SELECT assignee_id, COUNT(*) AS total, {_STATUS_SUMS} FROM test_results"
        f" WHERE {_IN_RUNS} AND tenant_id = :tenant GROUP BY assignee_id) AS g"
        " LEFT JOIN users AS u ON u.id = g.assignee_id AND u.tenant_id = :tenant",
        {"runs": runs, "tenant": tenant_id},
    )


async def sections(db: Database, tenant_id: str, project_id: str) -> list[Row]:
    """id, name and path of the project's sections: the names of a section's path, for its label."""
    return await db.fetch_all("SELECT id, name, path FROM sections WHERE tenant_id = ? AND project_id = ?",
                              (tenant_id, project_id))


def _prefixed_sums(alias: str) -> str:
    return ", ".join(
        f"SUM(CASE WHEN {alias}.status = '{status}' THEN 1 ELSE 0 END) AS {status.lower()}"
        for status in RESULT_STATUSES
    )


# Failed and blocked results carry a fingerprint (set at write time); the partial indexes
# test_results_failures / unlinked_results_failures hold exactly those rows. Clusters follow the rule of
# tms.failures (issue 24): automated results only (a manual failure's cause is its tester's note), and a
# failure that says nothing (:empty, tms.failures.fingerprints.EMPTY) groups with nothing.
_FAILING = (
    "SELECT fingerprint, error_message, bug_ticket_key, bug_ticket_url FROM test_results"
    f" WHERE {_IN_RUNS} AND fingerprint IS NOT NULL AND tenant_id = :tenant AND source = 'automated'"
    " AND fingerprint <> :empty"
    " UNION ALL SELECT fingerprint, error_message, bug_ticket_key, bug_ticket_url FROM unlinked_test_results"
    f" WHERE {_IN_RUNS} AND fingerprint IS NOT NULL AND +tenant_id = :tenant AND source = 'automated'"
    " AND fingerprint <> :empty"
)


async def clusters(db: Database, tenant_id: str, project_id: str, runs: str, first_run: str | None,
                   limit: int, empty: str) -> tuple[list[Row], int]:
    """The largest ``limit`` failure clusters (fingerprint, count, a message, first seen, new in
    ``first_run``), and how many clusters there are in all."""
    rows = await db.fetch_all(
        "SELECT g.fingerprint AS fingerprint, g.failures AS failures, g.error_message AS error_message,"
        " f.first_seen_at AS first_seen_at, CASE WHEN f.first_run_id = :first THEN 1 ELSE 0 END AS new FROM ("
        f" SELECT fingerprint, COUNT(*) AS failures, MIN(error_message) AS error_message FROM ({_FAILING}) AS x"
        "  GROUP BY fingerprint ORDER BY COUNT(*) DESC, fingerprint LIMIT :limit) AS g"
        " LEFT JOIN failure_fingerprints AS f ON f.tenant_id = :tenant AND f.project_id = :project"
        "  AND f.fingerprint = g.fingerprint ORDER BY g.failures DESC, g.fingerprint",
        {"runs": runs, "tenant": tenant_id, "project": project_id, "first": first_run or "", "limit": limit,
         "empty": empty},
    )
    total = await db.fetch_value(
        f"SELECT COUNT(DISTINCT fingerprint) FROM ({_FAILING}) AS x",
        {"runs": runs, "tenant": tenant_id, "empty": empty})
    return rows, int(total or 0)


async def cluster_bugs(db: Database, tenant_id: str, runs: str, fingerprints: list[str], empty: str) -> list[Row]:
    """The distinct bug links (key, URL) on the failures of these clusters."""
    if not fingerprints:
        return []
    return await db.fetch_all(
        f"SELECT DISTINCT fingerprint, bug_ticket_key, bug_ticket_url FROM ({_FAILING}) AS x "
        "WHERE bug_ticket_key IS NOT NULL AND fingerprint IN (SELECT value FROM json_each(:fps)) "
        "ORDER BY fingerprint, bug_ticket_key",
        {"runs": runs, "tenant": tenant_id, "fps": json.dumps(fingerprints), "empty": empty},
    )


async def failures(db: Database, tenant_id: str, runs: str, limit: int) -> list[Row]:
    """Up to ``limit`` failed or broken results, linked ones first, each with its run's name and
    environment; messages cut to 1,000 characters (the full text is on the result's page)."""
    columns = ("x.id AS result_id, x.run_id AS run_id, t.name AS run_name, t.environment AS environment, "
               "x.code AS test_case_code, x.title AS title, x.status AS status, x.error_message AS error_message, "
               "x.fingerprint AS fingerprint, x.bug_ticket_key AS bug_ticket_key, x.bug_ticket_url AS bug_ticket_url")
    return await db.fetch_all(
        f"SELECT {columns} FROM ("
        " SELECT * FROM (SELECT id, run_id, test_case_code AS code, title, status,"
        "  substr(error_message, 1, 1000) AS error_message, fingerprint, bug_ticket_key, bug_ticket_url,"
        "  0 AS part, rowid AS seq FROM test_results"
        f"  WHERE {_IN_RUNS} AND fingerprint IS NOT NULL AND tenant_id = :tenant ORDER BY rowid LIMIT :limit) AS a"
        " UNION ALL SELECT * FROM (SELECT id, run_id, NULL, title, status, substr(error_message, 1, 1000),"
        "  fingerprint, bug_ticket_key, bug_ticket_url, 1, rowid FROM unlinked_test_results"
        f"  WHERE {_IN_RUNS} AND fingerprint IS NOT NULL AND +tenant_id = :tenant ORDER BY rowid LIMIT :limit) AS b"
        ") AS x JOIN test_runs AS t ON t.id = x.run_id ORDER BY x.part, x.seq LIMIT :limit",
        {"runs": runs, "tenant": tenant_id, "limit": limit},
    )


# ---- the trend of a run -----------------------------------------------------------------------------

async def history(db: Database, tenant_id: str, run: Row, count: int) -> list[Row]:
    """This run and up to ``count - 1`` runs before it of the same project and environment, newest
    first, with their summaries (the first one after this run is the previous run)."""
    return await db.fetch_all(
        f"SELECT {_RUN_COLUMNS} FROM test_runs WHERE tenant_id = ? AND project_id = ? AND environment IS ? "
        "AND rowid <= (SELECT rowid FROM test_runs WHERE id = ? AND tenant_id = ?) ORDER BY rowid DESC LIMIT ?",
        (tenant_id, run["project_id"], run["environment"], run["id"], tenant_id, count),
    )


async def changes(db: Database, tenant_id: str, run_id: str, base_id: str) -> Row | None:
    """Linked tests failing now that were not failing in the base run (new failures), and failing in
    the base run that pass now (fixed): each side read off the partial failures index."""
    return await db.fetch_one(
        "SELECT (SELECT COUNT(*) FROM test_results AS a WHERE a.run_id = :run AND a.fingerprint IS NOT NULL"
        "  AND a.tenant_id = :tenant AND NOT EXISTS (SELECT 1 FROM test_results AS b WHERE b.run_id = :base"
        "  AND b.test_case_id = a.test_case_id AND b.status IN ('FAILED', 'BROKEN'))) AS new_failures,"
        " (SELECT COUNT(*) FROM test_results AS b WHERE b.run_id = :base AND b.fingerprint IS NOT NULL"
        "  AND b.tenant_id = :tenant AND EXISTS (SELECT 1 FROM test_results AS a WHERE a.run_id = :run"
        "  AND a.test_case_id = b.test_case_id AND a.status = 'PASSED')) AS fixed",
        {"run": run_id, "base": base_id, "tenant": tenant_id},
    )


# ---- run export: keyset pages -----------------------------------------------------------------------

_EXPORT_COLUMNS = ("title, status, comment, bug_ticket_key, bug_ticket_url, duration_ms, framework, error_message, "
                   "error_stack, executed_at")


async def linked_page(db: Database, tenant_id: str, run_id: str, after: str, limit: int) -> list[Row]:
    """The run's linked results after case id ``after``, in case id order (the run's unique index)."""
    return await db.fetch_all(
        f"SELECT test_case_id, test_case_code, {_EXPORT_COLUMNS} FROM test_results "
        "WHERE run_id = ? AND test_case_id > ? AND tenant_id = ? ORDER BY test_case_id LIMIT ?",
        (run_id, after, tenant_id, limit),
    )


async def unlinked_page(db: Database, tenant_id: str, run_id: str, after: int, limit: int) -> list[Row]:
    """The run's unlinked results after ``after`` (a rowid), in the order they were stored."""
    return await db.fetch_all(
        f"SELECT rowid AS seq, NULL AS test_case_code, {_EXPORT_COLUMNS} FROM unlinked_test_results "
        "WHERE run_id = ? AND tenant_id = ? AND rowid > ? ORDER BY rowid LIMIT ?",
        (run_id, tenant_id, after, limit),
    )


async def frameworks(db: Database, tenant_id: str, run_id: str) -> list[str | None]:
    """Up to two distinct frameworks of the run's results (NULL included): one means all share it."""
    rows = await db.fetch_all(
        "SELECT DISTINCT framework FROM (SELECT framework FROM test_results WHERE run_id = ?1 AND tenant_id = ?2"
        " UNION ALL SELECT framework FROM unlinked_test_results WHERE run_id = ?1 AND tenant_id = ?2) AS x LIMIT 2",
        (run_id, tenant_id),
    )
    return [row["framework"] for row in rows]
