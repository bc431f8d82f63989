"""SQL of quarantine; every query filters on tenant_id. An entry applies while expires_at is NULL or later
than now: expiry needs no job, every read compares with the current time."""

from __future__ import annotations

import json
from typing import Any

from tms.db import Database, Row, Transaction
from tms.db.paging import equality_filters, page_in_creation_order

COLUMNS = "id, project_id, test_case_code, title, reason, expires_at, created_at, updated_at"


async def insert(tx: Transaction, row: dict[str, Any]) -> None:
    await tx.execute(
        "INSERT INTO quarantine (id, tenant_id, project_id, test_case_code, title, reason, expires_at, created_at, "
        "updated_at) VALUES (:id, :tenant_id, :project_id, :test_case_code, :title, :reason, :expires_at, "
        ":created_at, :created_at)",
        row,
    )


async def get(db: Database | Transaction, tenant_id: str, entry_id: str) -> Row | None:
    return await db.fetch_one(f"SELECT {COLUMNS} FROM quarantine WHERE tenant_id = ? AND id = ?",
                              (tenant_id, entry_id))


async def page(db: Database, tenant_id: str, *, project_id: str | None, limit: int, offset: int
               ) -> tuple[list[Row], int]:
    where, params = equality_filters(tenant_id, project_id=project_id)
    return await page_in_creation_order(db, "quarantine", COLUMNS, where, params, limit, offset)


async def delete(tx: Transaction, tenant_id: str, entry_id: str) -> int:
    return await tx.execute("DELETE FROM quarantine WHERE tenant_id = ? AND id = ?", (tenant_id, entry_id))


async def active_for_project(db: Database | Transaction, tenant_id: str, project_id: str, now: str) -> list[Row]:
    """Entries of the project that apply now (one short range of the project index)."""
    return await db.fetch_all(
        f"SELECT {COLUMNS} FROM quarantine WHERE tenant_id = ? AND project_id = ? "
        "AND (expires_at IS NULL OR expires_at > ?)",
        (tenant_id, project_id, now),
    )


async def count_active(db: Database, tenant_id: str, project_id: str, now: str) -> int:
    return int(await db.fetch_value(
        "SELECT COUNT(*) FROM quarantine WHERE tenant_id = ? AND project_id = ? "
        "AND (expires_at IS NULL OR expires_at > ?)",
        (tenant_id, project_id, now),
    ))


async def known_codes(db: Database, tenant_id: str, codes: list[str]) -> set[str]:
    rows = await db.fetch_all(
        "SELECT code FROM test_cases WHERE tenant_id = ? AND code IN (SELECT value FROM json_each(?))",
        (tenant_id, json.dumps(codes)),
    )
    return {row["code"] for row in rows}


async def known_titles(db: Database, tenant_id: str, project_id: str, titles: list[str]) -> set[str]:
    """Titles among ``titles`` that a case of the project or a result of its latest run carries."""
    rows = await db.fetch_all(
        "WITH wanted(title) AS (SELECT value FROM json_each(:titles)), "
        "latest(id) AS (SELECT id FROM test_runs WHERE tenant_id = :tenant AND project_id = :project "
        "               ORDER BY rowid DESC LIMIT 1) "
        "SELECT title FROM test_cases WHERE tenant_id = :tenant AND project_id = :project "
        "  AND title IN (SELECT title FROM wanted) "
        "UNION SELECT title FROM unlinked_test_results WHERE run_id IN (SELECT id FROM latest) "
        "  AND title IN (SELECT title FROM wanted) "
        "UNION SELECT title FROM test_results WHERE run_id IN (SELECT id FROM latest) "
        "  AND title IN (SELECT title FROM wanted)",
        {"titles": json.dumps(titles), "tenant": tenant_id, "project": project_id},
    )
    return {row["title"] for row in rows}
