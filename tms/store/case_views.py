"""Read-only queries behind the test-case pages: filtered search and a case's result history.

The API's list filters only by project and status; the web list also searches titles and codes and
filters by automation status, priority, layer and tag. Every query filters on tenant_id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tms.db import Database, Row
from tms.store.cases import COLUMNS


@dataclass(frozen=True, slots=True)
class CaseFilters:
    q: str | None = None
    project_id: str | None = None
    status: str | None = None
    automation_status: str | None = None
    priority: str | None = None
    layer: str | None = None
    tag: str | None = None


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _where(tenant_id: str, f: CaseFilters) -> tuple[str, list[Any]]:
    where, params = ["tenant_id = ?"], [tenant_id]
    for column in ("project_id", "status", "automation_status", "priority", "layer"):
        value = getattr(f, column)
        if value:
            where.append(f"{column} = ?")
            params.append(value)
    if f.tag:
        where.append("EXISTS (SELECT 1 FROM json_each(test_cases.tags) WHERE value = ?)")
        params.append(f.tag)
    if f.q:
        where.append("(title LIKE ? ESCAPE '\\' OR code LIKE ? ESCAPE '\\')")
        params += [_like(f.q), _like(f.q)]
    return " AND ".join(where), params


async def search_cases(db: Database, tenant_id: str, filters: CaseFilters, *, limit: int, offset: int
                       ) -> tuple[list[Row], int]:
    """A page, newest first, and the number of cases matching the filters."""
    where, params = _where(tenant_id, filters)
    rows = await db.fetch_all(
        f"SELECT {COLUMNS}, needs_retest FROM test_cases WHERE {where} ORDER BY rowid DESC LIMIT ? OFFSET ?",
        (*params, limit, offset),
    )
    total = await db.fetch_value(f"SELECT COUNT(*) FROM test_cases WHERE {where}", params)
    return rows, int(total)


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


async def matching_ids(db: Database, tenant_id: str, filters: CaseFilters, limit: int) -> list[str]:
    """Every case id matching the filters (oldest first), up to ``limit``: "all matching the filter"."""
    where, params = _where(tenant_id, filters)
    rows = await db.fetch_all(f"SELECT id FROM test_cases WHERE {where} ORDER BY rowid LIMIT ?", (*params, limit))
    return [row["id"] for row in rows]


async def in_run(db: Database, tenant_id: str, run_id: str, case_ids: list[str]) -> set[str]:
    """Which of these cases the run already holds (the picker greys them out)."""
    if not case_ids:
        return set()
    marks = ",".join("?" * len(case_ids))
    rows = await db.fetch_all(
        f"SELECT test_case_id FROM test_results WHERE run_id = ? AND tenant_id = ? AND test_case_id IN ({marks})",
        (run_id, tenant_id, *case_ids))
    return {row["test_case_id"] for row in rows}
