"""Traceability reads (SQL only): requirements graded in one aggregate, then the page's cases.

A requirement is a ticket key (its ``source`` and the key upper-cased) named in the ``tickets`` of the
project's cases; DEPRECATED cases do not cover anything. A case's *latest* result in an environment is
its result in the newest run of that environment (runs ordered by ``created_at``); a case is failing
when one of its latest results is FAILED or BROKEN, passing when none is and one is PASSED, untested
otherwise. The requirement's coverage: ``none`` without cases, ``failed`` when a case fails,
``untested`` when a case is untested, else ``passed``.

Titles and statuses come from ``tracker_issues``, the cache the integrations' refresh job writes (read
here in the same join; never fetched on a read).
"""

from __future__ import annotations

import json
import re

from tms.db import Database, Row

NO_ENVIRONMENT = "(none)"

# the project's ticket references: a row per (case, requirement), or more when a case names a key twice
# (no DISTINCT: its sort cost a third of the query, and a repeat changes no grade: they compare counts to 0)
_TICKETS = """
tickets AS (
  SELECT c.id AS case_id, c.status AS case_status,
         coalesce(json_extract(t.value, '$.source'), 'OTHER') AS source,
         upper(json_extract(t.value, '$.key')) AS issue_key,
         json_extract(t.value, '$.key') AS key
  FROM test_cases c, json_each(c.tickets) t
  WHERE c.tenant_id = :tenant AND c.project_id = :project AND c.tickets != '[]'
)"""

# a case's status in the newest run of each environment; SQLite takes the bare columns of the row holding
# max(); PostgreSQL takes the status off max(created_at|status) (DISTINCT ON sorted 40,000 rows to disk
# where this is one hash aggregate; created_at is ISO text, so the max is the newest run). Over every
# result of the project's runs in one pass (probing the (run_id, test_case_id) index for each ticketed
# case measured slower).
_LATEST_SQLITE = """
latest AS (
  SELECT r.test_case_id AS case_id, coalesce(ru.environment, :none) AS environment, r.status AS status,
         max(ru.created_at) AS run_at
  FROM test_runs ru JOIN test_results r ON r.run_id = ru.id
  WHERE ru.tenant_id = :tenant AND ru.project_id = :project
  GROUP BY r.test_case_id, coalesce(ru.environment, :none)
)"""
_LATEST_POSTGRES = """
latest AS (
  SELECT r.test_case_id AS case_id, coalesce(ru.environment, :none) AS environment,
         split_part(max(ru.created_at || '|' || r.status), '|', 2) AS status
  FROM test_runs ru JOIN test_results r ON r.run_id = ru.id
  WHERE ru.tenant_id = :tenant AND ru.project_id = :project
  GROUP BY r.test_case_id, coalesce(ru.environment, :none)
)"""
# PostgreSQL reads the tickets with its own JSON functions: the shared json_each(text) hands each element
# back as text, which ->> would parse a second and a third time
_TICKETS_POSTGRES = """
tickets AS (
  SELECT c.id AS case_id, c.status AS case_status,
         coalesce(t.value ->> 'source', 'OTHER') AS source,
         upper(t.value ->> 'key') AS issue_key,
         t.value ->> 'key' AS key
  FROM test_cases c, json_array_elements(c.tickets::json) t
  WHERE c.tenant_id = :tenant AND c.project_id = :project AND c.tickets != '[]'
)"""

_GRADED = """
case_state AS (
  SELECT case_id,
         SUM(CASE WHEN status IN ('FAILED', 'BROKEN') THEN 1 ELSE 0 END) AS failing,
         SUM(CASE WHEN status = 'PASSED' THEN 1 ELSE 0 END) AS passing
  FROM latest GROUP BY case_id
),
requirements AS (
  SELECT k.source, k.issue_key, min(k.key) AS key,
         SUM(CASE WHEN k.case_status != 'DEPRECATED' THEN 1 ELSE 0 END) AS cases,
         SUM(CASE WHEN k.case_status != 'DEPRECATED' AND coalesce(s.failing, 0) > 0 THEN 1 ELSE 0 END) AS failing,
         SUM(CASE WHEN k.case_status != 'DEPRECATED' AND coalesce(s.failing, 0) = 0
                   AND coalesce(s.passing, 0) = 0 THEN 1 ELSE 0 END) AS untested
  FROM tickets k LEFT JOIN case_state s ON s.case_id = k.case_id
  WHERE (CAST(:source AS TEXT) IS NULL OR k.source = :source)
  GROUP BY k.source, k.issue_key
),
graded AS (
  SELECT source, issue_key, key,
         CASE WHEN cases = 0 THEN 'none' WHEN failing > 0 THEN 'failed' WHEN untested > 0 THEN 'untested'
              ELSE 'passed' END AS coverage
  FROM requirements
)"""


# the page's rows: its requirements, their cases and the cases' latest results
_PAGE_ROWS_SQLITE = """
SELECT p.*, c.code AS case_code, c.title AS case_title, l.environment, l.status AS result_status
FROM page p
LEFT JOIN page_cases k ON k.source = p.source AND k.issue_key = p.issue_key
LEFT JOIN test_cases c ON c.id = k.case_id
LEFT JOIN latest l ON l.case_id = k.case_id
ORDER BY p.source, p.issue_key, c.code, l.environment"""
# PostgreSQL joins the page's cases to their latest results once, then to the page: joined to `page`
# directly, a plan that expects one page row re-scanned all of `latest` (30,000 rows) for each of the
# page's 100 rows. PostgreSQL expects one row when the OFFSET of a late page lies beyond the number of
# requirements it estimates, as it does until autoanalyze has seen a large ingest: the last page took
# 2.3 times the first (bench/README.md). SQLite's plan does not depend on such estimates, and this shape
# measured twice as slow there for pages of 500 (the CSV's).
_PAGE_ROWS_POSTGRES = """,
page_latest AS MATERIALIZED (
  SELECT k.source, k.issue_key, c.code AS case_code, c.title AS case_title, l.environment,
         l.status AS result_status
  FROM page_cases k JOIN test_cases c ON c.id = k.case_id LEFT JOIN latest l ON l.case_id = k.case_id
)
SELECT p.*, k.case_code, k.case_title, k.environment, k.result_status
FROM page p LEFT JOIN page_latest k ON k.source = p.source AND k.issue_key = p.issue_key
ORDER BY p.source, p.issue_key, k.case_code, k.environment"""


def _latest(db: Database) -> str:
    return _LATEST_POSTGRES if db.dialect == "postgres" else _LATEST_SQLITE


def _tickets(db: Database) -> str:
    return _TICKETS_POSTGRES if db.dialect == "postgres" else _TICKETS


async def requirements_page(
    db: Database, tenant_id: str, project_id: str, source: str | None, coverages: list[str], limit: int, offset: int
) -> list[Row]:
    """The page's requirements in key order, each with its coverage and cached tracker fields, and its
    cases (``case_code``, ``case_title``) with their latest results (``environment``, ``result_status``):
    a row per requirement, case and environment (case columns null: no active case; environment null:
    no result). On every row ``total`` (matching the coverage filter) and ``n_<coverage>`` (before it).

    One statement: ``tickets`` and ``latest`` are computed once and read twice (grading, then the page's
    cases); a second query for the cases measured a third slower (the JSON scan and the results again)."""
    sql = (
        f"WITH {_tickets(db)},{_latest(db)},{_GRADED},\n"
        "page AS ("
        " SELECT x.*, COUNT(*) OVER () AS total FROM ("
        "  SELECT g.source, g.issue_key, g.key, g.coverage, i.title, i.status, i.url, i.error, i.fetched_at,"
        "   SUM(CASE WHEN g.coverage = 'passed' THEN 1 ELSE 0 END) OVER () AS n_passed,"
        "   SUM(CASE WHEN g.coverage = 'failed' THEN 1 ELSE 0 END) OVER () AS n_failed,"
        "   SUM(CASE WHEN g.coverage = 'untested' THEN 1 ELSE 0 END) OVER () AS n_untested,"
        "   SUM(CASE WHEN g.coverage = 'none' THEN 1 ELSE 0 END) OVER () AS n_none"
        "  FROM graded g LEFT JOIN tracker_issues i"
        "   ON i.tenant_id = :tenant AND i.source = g.source AND i.issue_key = g.issue_key"
        " ) x WHERE x.coverage IN (SELECT value FROM json_each(:coverages))"
        " ORDER BY x.source, x.issue_key LIMIT :limit OFFSET :offset"
        "),\n"
        # the page's cases: one pass over `tickets` against the page's keys (joining `tickets` to each page
        # row instead scanned all of it per row)
        "page_cases AS MATERIALIZED ("
        " SELECT k.source, k.issue_key, k.case_id FROM tickets k"
        " WHERE k.case_status != 'DEPRECATED' AND (k.source, k.issue_key) IN (SELECT source, issue_key FROM page)"
        ")"
        + (_PAGE_ROWS_POSTGRES if db.dialect == "postgres" else _PAGE_ROWS_SQLITE)
    )
    params: dict[str, str | int | None] = {"tenant": tenant_id, "project": project_id, "source": source,
                                           "none": NO_ENVIRONMENT, "coverages": json.dumps(coverages),
                                           "limit": limit, "offset": offset}
    if db.dialect == "postgres":
        return await db.fetch_all(_inlined(sql, params))
    return await db.fetch_all(sql, params)


_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


def _inlined(sql: str, params: dict[str, str | int | None]) -> str:
    """The statement with its values written in: PostgreSQL switches a prepared statement to a generic
    plan after five runs, and this one's generic plan measured 4-7 times slower than the custom one (its
    estimates cannot see how many cases and results the project has). Every value here was checked
    before (ids of rows read from the database, choices from fixed lists, integers), and each is quoted
    as a SQL literal all the same."""

    def literal(match: re.Match[str]) -> str:
        value = params[match.group(1)]
        if value is None:
            return "NULL"
        if isinstance(value, int):
            return str(int(value))
        return "'" + value.replace("'", "''") + "'"

    return _NAMED.sub(literal, sql)
