"""SQL behind failure intelligence: fingerprints first seen, daily counts, a run's failures, two runs'
outcomes for a comparison, the outcomes of the last runs for flaky tests. Tenant-filtered.

A run's failures are read through the partial indexes on (run_id, fingerprint) of both result tables:
only failed rows are in them, so a 20,000-result run with 1,600 failures reads 1,600 index entries.
Flaky tests and comparisons read the partial index test_results_marks (linked results that are not a
plain pass) and probe (run_id, test_case_id) only for the tests they can report; bulk answers travel
as one JSON array or one short row per test, never one Python row per result.
"""

from __future__ import annotations

import json

import msgspec

from tms.db import Database, Row, Transaction
from tms.failures.fingerprints import EMPTY

_outcomes = msgspec.json.Decoder(list[tuple[str | None, str | None, str]])


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
        "last_seen_at = excluded.last_seen_at, "
        "occurrences = failure_fingerprints.occurrences + excluded.occurrences",
        rows,
    )
    day = at[:10]
    await tx.executemany(
        "INSERT INTO failure_daily (tenant_id, project_id, day, fingerprint, failures) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (tenant_id, project_id, day, fingerprint) DO UPDATE SET "
        "failures = failure_daily.failures + excluded.failures",
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
    """Every automated FAILED/BROKEN result of the run: id, test_case_code, title, fingerprint,
    error_message (clusters are about automated results: a manual failure's cause is its tester's note)."""
    linked = await db.fetch_all(
        "SELECT id, test_case_code, title, fingerprint, error_message, status FROM test_results "
        "WHERE run_id = ? AND fingerprint IS NOT NULL AND tenant_id = ? AND source = 'automated' ORDER BY rowid",
        (run_id, tenant_id),
    )
    unlinked = await db.fetch_all(
        "SELECT id, NULL AS test_case_code, title, fingerprint, error_message, status "
        "FROM unlinked_test_results "  # +tenant_id: through the partial index, not every row of the run
        "WHERE run_id = ? AND fingerprint IS NOT NULL AND +tenant_id = ? AND source = 'automated' ORDER BY rowid",
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

    Linked tests are matched by case, and only the ones a comparison can report are read: those added
    or missing (two merges of the runs' unique (run_id, test_case_id) index ranges, read in order, index
    only) and those failing in either run (the partial index ``test_results_marks``); each is then one
    probe per run. Unlinked ones are matched by title through an index SQLite builds on the base run's
    titles (the last row of a title counts). One JSON array back: two runs of 20,000 mostly passing tests
    return a few thousand rows and read about as many.
    """
    packed = await db.fetch_value(
        f"WITH base_unlinked AS MATERIALIZED ({_last_of_each_title(db, 'base')}),"
        f" run_unlinked AS MATERIALIZED ({_last_of_each_title(db, 'run')}),"
        # ORDER BY makes each a merge of two sorted index ranges instead of a temporary b-tree of one run;
        # LIMIT -1 keeps the planner from dropping that ORDER BY when the result is joined
        " added(id) AS MATERIALIZED (SELECT test_case_id FROM test_results WHERE run_id = :run"
        "  EXCEPT SELECT test_case_id FROM test_results WHERE run_id = :base ORDER BY 1 LIMIT -1),"
        " missing(id) AS MATERIALIZED (SELECT test_case_id FROM test_results WHERE run_id = :base"
        "  EXCEPT SELECT test_case_id FROM test_results WHERE run_id = :run ORDER BY 1 LIMIT -1),"
        " reported(id) AS MATERIALIZED (SELECT id FROM added"
        "  UNION SELECT test_case_id FROM test_results WHERE run_id = :run"
        "   AND (status <> 'PASSED' OR passed_on_retry = 1) AND status IN ('FAILED', 'BROKEN')"
        "  UNION SELECT test_case_id FROM test_results WHERE run_id = :base"
        "   AND (status <> 'PASSED' OR passed_on_retry = 1) AND status IN ('FAILED', 'BROKEN') ORDER BY 1)"
        " SELECT json_group_array(json_array(kind, code, title, status, base_status)) FROM ("
        "  SELECT CASE WHEN b.id IS NULL THEN 'added' ELSE 'both' END AS kind, a.test_case_code AS code, a.title,"
        "   a.status, b.status AS base_status"
        "  FROM reported AS k CROSS JOIN test_results AS a ON a.run_id = :run AND a.test_case_id = k.id"
        "  LEFT JOIN test_results AS b ON b.run_id = :base AND b.test_case_id = k.id"
        "  WHERE a.tenant_id = :tenant"
        "  UNION ALL SELECT 'missing', b.test_case_code, b.title, NULL, b.status"
        "  FROM missing AS k CROSS JOIN test_results AS b ON b.run_id = :base AND b.test_case_id = k.id"
        "  WHERE b.tenant_id = :tenant"
        "  UNION ALL SELECT CASE WHEN b.title IS NULL THEN 'added' ELSE 'both' END, NULL, a.title, a.status,"
        "   b.status FROM run_unlinked a LEFT JOIN base_unlinked b ON b.title = a.title"
        "  WHERE b.title IS NULL OR a.status IN ('FAILED', 'BROKEN') OR b.status IN ('FAILED', 'BROKEN')"
        "  UNION ALL SELECT 'missing', NULL, b.title, NULL, b.status FROM base_unlinked b"
        "  WHERE NOT EXISTS (SELECT 1 FROM run_unlinked a WHERE a.title = b.title))",
        {"run": run_id, "base": base_id, "tenant": tenant_id},
    )
    return _CHANGES.decode(packed or "[]")


def _last_of_each_title(db: Database, run: str) -> str:
    """Title and status of the last unlinked row of each title in run ``:<run>``."""
    if db.dialect == "postgres":
        return ("SELECT DISTINCT ON (title) title, status FROM unlinked_test_results "
                f"WHERE run_id = :{run} AND tenant_id = :tenant ORDER BY title, rowid DESC")
    # SQLite: a bare column beside max() is read from the row holding the maximum
    return (f"SELECT title, status, max(rowid) FROM unlinked_test_results WHERE run_id = :{run} "
            "AND tenant_id = :tenant GROUP BY title")


async def run_outcomes(db: Database, tenant_id: str, run_id: str) -> list[tuple[str | None, str | None, str]]:
    """(test_case_code, title, status) of every result of the run, linked and unlinked."""
    packed = await db.fetch_value(
        "SELECT json_group_array(json_array(code, title, status)) FROM ("
        " SELECT test_case_code AS code, title, status FROM test_results WHERE run_id = ?1 AND tenant_id = ?2"
        " UNION ALL SELECT NULL, title, status FROM unlinked_test_results WHERE run_id = ?1 AND tenant_id = ?2)",
        (run_id, tenant_id),
    )
    return _outcomes.decode(packed or "[]")


# A run's kind, from the counts every write of results keeps (migration 0027): automated when no result
# of it was set by hand, manual when all were (a run pre-populated for testers), mixed otherwise.
KIND = ("CASE WHEN {t}.results_manual = 0 THEN 'automated' WHEN {t}.results_manual >= {t}.results_total "
        "THEN 'manual' ELSE 'mixed' END")


async def previous_run(db: Database, tenant_id: str, run: Row) -> Row | None:
    """The run created just before this one in the same project and environment, of the same kind."""
    return await db.fetch_one(
        "SELECT t.id, t.project_id, t.environment FROM test_runs AS t WHERE t.tenant_id = ?1 AND t.project_id = ?2 "
        "AND t.environment IS ?3 AND t.rowid < (SELECT r.rowid FROM test_runs AS r WHERE r.id = ?4) "
        f"AND {KIND.format(t='t')} = (SELECT {KIND.format(t='r')} FROM test_runs AS r WHERE r.id = ?4) "
        "ORDER BY t.rowid DESC LIMIT 1",
        (tenant_id, run["project_id"], run["environment"], run["id"]),
    )


async def failing_in(db: Database, tenant_id: str, run_id: str, tests: list[Row]
                     ) -> set[tuple[str | None, str | None]]:
    """Which of these tests (rows with test_case_code and title) failed or broke in run ``run_id``:
    (code, None) for a linked one, (None, title) for an unlinked one. Through the partial failures
    indexes of the run, for these tests only."""
    codes = [row["test_case_code"] for row in tests if row["test_case_code"]]
    titles = [row["title"] for row in tests if not row["test_case_code"]]
    rows = await db.fetch_all(
        "SELECT test_case_code AS code, NULL AS title FROM test_results WHERE run_id = ?1 AND fingerprint IS NOT NULL"
        " AND +tenant_id = ?2 AND source = 'automated' AND test_case_code IN (SELECT value FROM json_each(?3))"
        " UNION ALL SELECT NULL, title FROM unlinked_test_results WHERE run_id = ?1 AND fingerprint IS NOT NULL"
        " AND +tenant_id = ?2 AND source = 'automated' AND title IN (SELECT value FROM json_each(?4))",
        (run_id, tenant_id, json.dumps(codes), json.dumps(titles)),
    )
    return {(row["code"], row["title"]) for row in rows}


async def base_candidates(db: Database, tenant_id: str, run: Row, limit: int) -> tuple[list[Row], list[Row]]:
    """Up to ``limit`` runs of the run's project and environment, and up to ``limit`` of its other
    environments, newest first, never the run itself: id, name, environment, created_at."""
    columns = "id, name, environment, created_at"
    same = await db.fetch_all(
        f"SELECT {columns} FROM test_runs WHERE tenant_id = ? AND project_id = ? AND environment IS ? AND id <> ? "
        "ORDER BY rowid DESC LIMIT ?",
        (tenant_id, run["project_id"], run["environment"], run["id"], limit),
    )
    others = await db.fetch_all(
        f"SELECT {columns} FROM test_runs WHERE tenant_id = ? AND project_id = ? AND environment IS NOT ? "
        "ORDER BY rowid DESC LIMIT ?",
        (tenant_id, run["project_id"], run["environment"], limit),
    )
    return same, others


async def run_window(db: Database, tenant_id: str, project_id: str, count: int) -> list[Row]:
    """id, updated_at and environment of the project's last ``count`` runs holding automated results
    (newest first, off the project index): flaky tests and the dashboard's latest run leave manual runs out."""
    return await db.fetch_all(
        "SELECT id, updated_at, environment FROM test_runs AS t WHERE tenant_id = ? AND project_id = ? "
        f"AND {KIND.format(t='t')} <> 'manual' ORDER BY rowid DESC LIMIT ?",
        (tenant_id, project_id, count),
    )


async def last_runs(db: Database, tenant_id: str, project_id: str, count: int) -> list[str]:
    """Ids of the project's last ``count`` runs, oldest first (read backwards off the project index)."""
    return [row["id"] for row in reversed(await run_window(db, tenant_id, project_id, count))]


# One letter per outcome: F failed, B broken, S skipped, U unknown, P passed, R passed only on a retry.
_LETTER = ("CASE {t}.status WHEN 'FAILED' THEN 'F' WHEN 'BROKEN' THEN 'B' WHEN 'SKIPPED' THEN 'S' "
           "WHEN 'PASSED' THEN CASE WHEN {t}.passed_on_retry = 1 THEN 'R' ELSE 'P' END ELSE 'U' END")
# a linked result's letter in flaky detection: a manual one is no automated outcome, as if absent
_MARK = f"CASE WHEN r.source = 'manual' THEN '-' ELSE {_LETTER.format(t='r')} END"
# the window's runs with their position (0 = oldest), each looked up by primary key and checked for the tenant
_WINDOW = ("runs(id, pos) AS MATERIALIZED (SELECT t.id, j.key FROM json_each(:runs) AS j "
           "CROSS JOIN test_runs AS t ON t.id = j.value WHERE t.tenant_id = :tenant)")


async def flaky_linked(db: Database, tenant_id: str, run_ids: list[str]) -> tuple[list[Row], list[Row]]:
    """The linked tests that failed (or passed only on a retry) in at least one of these runs (oldest
    first), and how many of them each run holds.

    Candidates, one row each: ``key`` (case id), ``marks`` (``"<pos><letter>,..."``: every outcome in the
    window that is not a plain pass) and ``rid`` (rowid of its latest such result). Runs, one row each:
    ``pos`` and ``held`` (how many candidates it holds). A run holding a candidate without a mark is a
    plain pass; when a run holds fewer than all candidates, ``absences`` says which.

    Read from indexes only: the marks from ``test_results_marks`` (the ~10% of results that are not plain
    passes), the presence by one probe of the unique (run_id, test_case_id) index per run and candidate
    (but for candidates marked in every run); so the cost follows the window's candidates, never the
    project's history or the passing tests.
    """
    if not run_ids:
        return [], []
    rows = await db.fetch_all(
        f"WITH {_WINDOW}, "
        "marks AS MATERIALIZED ("
        f" SELECT r.rowid AS rid, p.pos, r.test_case_id AS key, r.status, r.passed_on_retry, r.source, {_MARK}"
        "  AS letter FROM runs AS p CROSS JOIN test_results AS r ON r.run_id = p.id"
        # the partial index's own condition (0033): manual results are in it, read as "-" (no outcome here)
        "  WHERE (r.status <> 'PASSED' OR r.passed_on_retry = 1 OR r.source = 'manual')),"
        " candidates AS MATERIALIZED ("
        "  SELECT key, group_concat(pos || letter) AS marks, max(rid) AS rid, count(*) AS marked FROM marks"
        "  GROUP BY key"
        "  HAVING sum(CASE WHEN source = 'automated' AND (status IN ('FAILED', 'BROKEN') OR passed_on_retry = 1)"
        "   THEN 1 ELSE 0 END) > 0)"
        " SELECT key, marks, rid, NULL AS pos, NULL AS held FROM candidates"
        # a candidate with a mark in every run is in every run: only the others are probed
        " UNION ALL SELECT NULL, NULL, NULL, p.pos, (SELECT count(*) FROM test_results AS r"
        "  WHERE r.run_id = p.id AND r.test_case_id IN (SELECT key FROM candidates WHERE marked < :count))"
        "  + (SELECT count(*) FROM candidates WHERE marked = :count) FROM runs AS p",
        {"runs": json.dumps(run_ids), "tenant": tenant_id, "count": len(run_ids)},
    )
    return [row for row in rows if row["pos"] is None], [row for row in rows if row["pos"] is not None]


async def absences(db: Database, tenant_id: str, run_ids: list[str], keys: list[str]) -> list[Row]:
    """(run_id, key) of each of these cases that each of these runs holds no result of: one probe of the
    unique (run_id, test_case_id) index per pair, in one statement."""
    return await db.fetch_all(
        "SELECT p.value AS run_id, c.value AS key FROM json_each(?) AS p CROSS JOIN json_each(?) AS c "
        "WHERE NOT EXISTS (SELECT 1 FROM test_results AS r WHERE r.run_id = p.value AND r.test_case_id = c.value "
        "AND +r.tenant_id = ?)",
        (json.dumps(run_ids), json.dumps(keys), tenant_id),
    )


async def flaky_unlinked(db: Database, tenant_id: str, run_ids: list[str]) -> list[Row]:
    """The unlinked tests (by title) that failed or passed only on a retry in at least one of these runs:
    ``key`` (the title) and ``outcomes`` (``"<pos><letter>,..."``, one per result, passes included).

    Candidates come from the partial indexes (failed and retried rows); their outcomes from the runs'
    unlinked rows, matched by title.
    """
    if not run_ids:
        return []
    return await db.fetch_all(
        f"WITH {_WINDOW}, "
        "titles(title) AS MATERIALIZED ("
        "  SELECT n.title FROM runs AS p CROSS JOIN unlinked_test_results AS n ON n.run_id = p.id"
        "  WHERE n.fingerprint IS NOT NULL AND n.source = 'automated'"
        "  UNION SELECT n.title FROM runs AS p CROSS JOIN unlinked_test_results AS n ON n.run_id = p.id"
        "  WHERE n.passed_on_retry = 1 AND n.source = 'automated')"
        f" SELECT n.title AS key, group_concat(p.pos || {_LETTER.format(t='n')}) AS outcomes"
        " FROM runs AS p CROSS JOIN unlinked_test_results AS n ON n.run_id = p.id"
        " WHERE EXISTS (SELECT 1 FROM titles) AND n.tenant_id = :tenant AND n.source = 'automated'"
        " AND n.title IN (SELECT title FROM titles)"
        " GROUP BY n.title",
        {"runs": json.dumps(run_ids), "tenant": tenant_id},
    )


async def result_names(db: Database, tenant_id: str, rowids: list[int]) -> dict[int, Row]:
    """rowid -> {test_case_code, title} of a few linked results (the flaky tests' latest marks)."""
    if not rowids:
        return {}
    rows = await db.fetch_all(
        "SELECT rowid AS rid, test_case_code, title FROM test_results "
        "WHERE rowid IN (SELECT CAST(value AS INTEGER) FROM json_each(?)) AND +tenant_id = ?",
        (json.dumps(rowids), tenant_id),
    )
    return {row["rid"]: row for row in rows}


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
        "SELECT f.fingerprint, SUM(d.failures) AS failures, f.error_message, f.first_seen_at, f.last_run_id "
        "FROM failure_daily d JOIN failure_fingerprints f ON f.tenant_id = d.tenant_id "
        "AND f.project_id = d.project_id AND f.fingerprint = d.fingerprint "
        # EMPTY (failures without any text: tms.failures.fingerprints) is no cause; rows of it written
        # before it stopped being counted are left out
        "WHERE d.tenant_id = ? AND d.project_id = ? AND d.day >= ? AND d.fingerprint <> ? "
        # grouped by f's primary key, so f's other columns are single-valued (PostgreSQL checks that)
        "GROUP BY f.tenant_id, f.project_id, f.fingerprint ORDER BY failures DESC LIMIT ?",
        (tenant_id, project_id, since_day, EMPTY, limit),
    )
