"""SQL behind failure intelligence: fingerprints first seen, daily counts, a run's failures, two runs'
outcomes for a comparison, the outcomes of the last runs for flaky tests. Tenant-filtered.

A run's failures are read through the partial indexes on (run_id, fingerprint) of both result tables:
only failed rows are in them, so a 20,000-result run with 1,600 failures reads 1,600 index entries.
Bulk outcomes travel as one JSON array built by SQLite (no Python row per result).
"""

from __future__ import annotations

import json

import msgspec

from tms.db import Database, Row, Transaction

_outcomes = msgspec.json.Decoder(list[tuple[str | None, str | None, str]])
_flaky_rows = msgspec.json.Decoder(list[tuple[str, str, str | None, str | None, str, int]])


async def record_fingerprints(
    tx: Transaction, tenant_id: str, project_id: str, run_id: str, at: str, seen: dict[str, tuple[int, str | None]]
) -> None:
    """Upserts first/last seen and occurrences per fingerprint, and today's failure counts.

    ``seen`` maps a fingerprint to (failures in this write, a representative message). Two statements,
    one row per distinct fingerprint: a run with 8,000 failures in 300 clusters writes 600 rows.
    """
    if not seen:
        return
    rows = [
        (tenant_id, project_id, fingerprint, run_id, at, count, (message or "")[:2000] or None)
        for fingerprint, (count, message) in seen.items()
    ]
    await tx.executemany(
        "INSERT INTO failure_fingerprints (tenant_id, project_id, fingerprint, first_run_id, first_seen_at, "
        "last_run_id, last_seen_at, occurrences, error_message) VALUES (?1, ?2, ?3, ?4, ?5, ?4, ?5, ?6, ?7) "
        "ON CONFLICT (tenant_id, project_id, fingerprint) DO UPDATE SET last_run_id = excluded.last_run_id, "
        "last_seen_at = excluded.last_seen_at, occurrences = occurrences + excluded.occurrences",
        rows,
    )
    day = at[:10]
    await tx.executemany(
        "INSERT INTO failure_daily (tenant_id, project_id, day, fingerprint, failures) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (tenant_id, project_id, day, fingerprint) DO UPDATE SET failures = failures + excluded.failures",
        [(tenant_id, project_id, day, fingerprint, count) for fingerprint, (count, _) in seen.items()],
    )


async def first_seen(db: Database | Transaction, tenant_id: str, project_id: str, fingerprints: list[str]
                     ) -> dict[str, Row]:
    """fingerprint -> {first_run_id, first_seen_at, error_message}: one primary-key lookup each."""
    rows = await db.fetch_all(
        "SELECT fingerprint, first_run_id, first_seen_at, error_message FROM failure_fingerprints "
        "WHERE tenant_id = ? AND project_id = ? AND fingerprint IN (SELECT value FROM json_each(?))",
        (tenant_id, project_id, json.dumps(fingerprints)),
    )
    return {row["fingerprint"]: row for row in rows}


async def run_failures(db: Database, tenant_id: str, run_id: str) -> list[Row]:
    """Every FAILED/BROKEN result of the run: id, test_case_code, title, fingerprint, error_message."""
    linked = await db.fetch_all(
        "SELECT id, test_case_code, title, fingerprint, error_message, status FROM test_results "
        "WHERE run_id = ? AND fingerprint IS NOT NULL AND tenant_id = ? ORDER BY rowid",
        (run_id, tenant_id),
    )
    unlinked = await db.fetch_all(
        "SELECT id, NULL AS test_case_code, title, fingerprint, error_message, status "
        "FROM unlinked_test_results "  # +tenant_id: through the partial index, not every row of the run
        "WHERE run_id = ? AND fingerprint IS NOT NULL AND +tenant_id = ? ORDER BY rowid",
        (run_id, tenant_id),
    )
    return linked + unlinked


async def stacks_of(db: Database, tenant_id: str, result_ids: list[str]) -> dict[str, str | None]:
    """error_stack of a few results (the clusters' representatives), by primary key."""
    if not result_ids:
        return {}
    ids = json.dumps(result_ids)
    rows = await db.fetch_all(
        # by primary key: "+tenant_id" keeps the planner off the tenant indexes (a walk over every row)
        "SELECT id, substr(error_stack, 1, 4000) AS error_stack FROM test_results "
        "WHERE +tenant_id = ? AND id IN (SELECT value FROM json_each(?)) "
        "UNION ALL SELECT id, substr(error_stack, 1, 4000) FROM unlinked_test_results "
        "WHERE +tenant_id = ? AND id IN (SELECT value FROM json_each(?))",
        (tenant_id, ids, tenant_id, ids),
    )
    return {row["id"]: row["error_stack"] for row in rows}


_CHANGES = msgspec.json.Decoder(list[tuple[str, str | None, str | None, str | None, str | None]])


async def compare_runs(db: Database, tenant_id: str, run_id: str, base_id: str
                       ) -> list[tuple[str, str | None, str | None, str | None, str | None]]:
    """(kind, test_case_code, title, status, base_status) of every test of the two runs that is not
    simply passing (or skipped) in both: kind ``both`` (in both runs), ``added`` or ``missing``.

    Linked tests are matched by case through the unique (run_id, test_case_id) index; unlinked ones by
    title through an index SQLite builds on the base run's titles (the last row of a title counts).
    One JSON array back, with only the rows a comparison reports: two runs of 20,000 mostly passing
    tests return a few thousand.
    """
    packed = await db.fetch_value(
        "WITH base_unlinked AS MATERIALIZED ("
        "  SELECT title, status, max(rowid) FROM unlinked_test_results WHERE run_id = :base AND tenant_id = :tenant"
        "  GROUP BY title),"
        " run_unlinked AS MATERIALIZED ("
        "  SELECT title, status, max(rowid) FROM unlinked_test_results WHERE run_id = :run AND tenant_id = :tenant"
        "  GROUP BY title)"
        " SELECT json_group_array(json_array(kind, code, title, status, base_status)) FROM ("
        "  SELECT CASE WHEN b.id IS NULL THEN 'added' ELSE 'both' END AS kind, a.test_case_code AS code, a.title,"
        "   a.status, b.status AS base_status"
        "  FROM test_results a LEFT JOIN test_results b ON b.run_id = :base AND b.test_case_id = a.test_case_id"
        "  WHERE a.run_id = :run AND a.tenant_id = :tenant AND (b.id IS NULL OR a.status IN ('FAILED', 'BROKEN')"
        "   OR b.status IN ('FAILED', 'BROKEN'))"
        "  UNION ALL SELECT 'missing', b.test_case_code, b.title, NULL, b.status FROM test_results b"
        "  WHERE b.run_id = :base AND b.tenant_id = :tenant AND NOT EXISTS ("
        "   SELECT 1 FROM test_results a WHERE a.run_id = :run AND a.test_case_id = b.test_case_id)"
        "  UNION ALL SELECT CASE WHEN b.title IS NULL THEN 'added' ELSE 'both' END, NULL, a.title, a.status,"
        "   b.status FROM run_unlinked a LEFT JOIN base_unlinked b ON b.title = a.title"
        "  WHERE b.title IS NULL OR a.status IN ('FAILED', 'BROKEN') OR b.status IN ('FAILED', 'BROKEN')"
        "  UNION ALL SELECT 'missing', NULL, b.title, NULL, b.status FROM base_unlinked b"
        "  WHERE NOT EXISTS (SELECT 1 FROM run_unlinked a WHERE a.title = b.title))",
        {"run": run_id, "base": base_id, "tenant": tenant_id},
    )
    return _CHANGES.decode(packed or "[]")


async def run_outcomes(db: Database, tenant_id: str, run_id: str) -> list[tuple[str | None, str | None, str]]:
    """(test_case_code, title, status) of every result of the run, linked and unlinked."""
    packed = await db.fetch_value(
        "SELECT json_group_array(json_array(code, title, status)) FROM ("
        " SELECT test_case_code AS code, title, status FROM test_results WHERE run_id = ?1 AND tenant_id = ?2"
        " UNION ALL SELECT NULL, title, status FROM unlinked_test_results WHERE run_id = ?1 AND tenant_id = ?2)",
        (run_id, tenant_id),
    )
    return _outcomes.decode(packed or "[]")


async def previous_run(db: Database, tenant_id: str, run: Row) -> Row | None:
    """The run created just before this one in the same project and environment."""
    return await db.fetch_one(
        "SELECT id, project_id, environment FROM test_runs WHERE tenant_id = ? AND project_id = ? "
        "AND environment IS ? AND rowid < (SELECT rowid FROM test_runs WHERE id = ?) ORDER BY rowid DESC LIMIT 1",
        (tenant_id, run["project_id"], run["environment"], run["id"]),
    )


async def last_runs(db: Database, tenant_id: str, project_id: str, count: int) -> list[str]:
    """Ids of the project's last ``count`` runs, oldest first (read backwards off the project index)."""
    rows = await db.fetch_all(
        "SELECT id FROM test_runs WHERE tenant_id = ? AND project_id = ? ORDER BY rowid DESC LIMIT ?",
        (tenant_id, project_id, count),
    )
    return [row["id"] for row in reversed(rows)]


async def flaky_outcomes(db: Database, tenant_id: str, run_ids: list[str], *, linked_only: bool = False
                         ) -> list[tuple[str, str, str | None, str | None, str, int]]:
    """(run_id, key, test_case_code, title, status, passed_on_retry) for every result, in these runs, of
    a test that failed or passed only on retry in at least one of them. A linked test's key is its case
    id, an unlinked one's its title.

    Candidates come from the partial indexes (failed and retried rows only); their outcomes in each run
    are then one lookup of the unique (run_id, test_case_id) index per run and candidate. Unlinked
    candidates are matched by title within each run's rows.
    """
    if not run_ids:
        return []
    runs = json.dumps(run_ids)

    packed = await db.fetch_value(
        "WITH runs(id) AS (SELECT value FROM json_each(:runs)), "
        "cases(id) AS ("
        "  SELECT test_case_id FROM test_results WHERE run_id IN (SELECT id FROM runs) AND fingerprint IS NOT NULL"
        "  UNION SELECT test_case_id FROM test_results WHERE run_id IN (SELECT id FROM runs) AND passed_on_retry = 1"
        # the automation status concerns cases only: its evaluation leaves the unlinked rows out
        "), titles(title) AS ("
        "  SELECT title FROM unlinked_test_results WHERE :unlinked AND run_id IN (SELECT id FROM runs)"
        "  AND fingerprint IS NOT NULL"
        "  UNION SELECT title FROM unlinked_test_results WHERE :unlinked AND run_id IN (SELECT id FROM runs) "
        "  AND passed_on_retry = 1"
        ") SELECT json_group_array(json_array(run_id, key, code, title, status, passed_on_retry)) FROM ("
        "  SELECT r.run_id, r.test_case_id AS key, r.test_case_code AS code, r.title, r.status, r.passed_on_retry"
        "  FROM runs JOIN cases JOIN test_results r ON r.run_id = runs.id AND r.test_case_id = cases.id"
        "  WHERE r.tenant_id = :tenant"
        "  UNION ALL SELECT n.run_id, n.title, NULL, n.title, n.status, n.passed_on_retry"
        "  FROM unlinked_test_results n WHERE EXISTS (SELECT 1 FROM titles) AND n.run_id IN (SELECT id FROM runs)"
        "  AND n.tenant_id = :tenant AND n.title IN (SELECT title FROM titles))",
        {"runs": runs, "tenant": tenant_id, "unlinked": 0 if linked_only else 1},
    )
    return _flaky_rows.decode(packed or "[]")


async def link_bug(tx: Transaction, tenant_id: str, run_id: str, fingerprint: str, key: str, url: str | None
                   ) -> int:
    """Sets the bug on the run's results of this fingerprint that name none yet."""
    changed = 0
    for table in ("test_results", "unlinked_test_results"):
        changed += await tx.execute(
            f"UPDATE {table} SET bug_ticket_key = ?, bug_ticket_url = ? WHERE run_id = ? AND fingerprint = ? "
            "AND +tenant_id = ? AND bug_ticket_key IS NULL",
            (key, url, run_id, fingerprint, tenant_id),
        )
    return changed


async def last_run_of(db: Database | Transaction, tenant_id: str, project_id: str, fingerprint: str) -> str | None:
    value: str | None = await db.fetch_value(
        "SELECT last_run_id FROM failure_fingerprints WHERE tenant_id = ? AND project_id = ? AND fingerprint = ?",
        (tenant_id, project_id, fingerprint),
    )
    return value


async def cases_failing_with(tx: Transaction, tenant_id: str, run_id: str, fingerprint: str) -> list[str]:
    rows = await tx.fetch_all(
        "SELECT test_case_id FROM test_results WHERE run_id = ? AND fingerprint = ? AND +tenant_id = ?",
        (run_id, fingerprint, tenant_id),
    )
    return [row["test_case_id"] for row in rows]


async def top_fingerprints(db: Database, tenant_id: str, project_id: str, since_day: str, limit: int
                           ) -> list[Row]:
    """The project's most frequent failures since ``since_day`` from the daily roll-up."""
    return await db.fetch_all(
        "SELECT d.fingerprint, SUM(d.failures) AS failures, f.error_message, f.first_seen_at, f.last_run_id "
        "FROM failure_daily d JOIN failure_fingerprints f ON f.tenant_id = d.tenant_id "
        "AND f.project_id = d.project_id AND f.fingerprint = d.fingerprint "
        "WHERE d.tenant_id = ? AND d.project_id = ? AND d.day >= ? "
        "GROUP BY d.fingerprint ORDER BY failures DESC LIMIT ?",
        (tenant_id, project_id, since_day, limit),
    )
