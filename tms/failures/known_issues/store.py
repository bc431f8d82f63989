"""SQL of known_issues; every query filters on tenant_id."""

from __future__ import annotations

import json
from typing import Any

from tms.db import Database, Row, Transaction
from tms.db.paging import equality_filters, page_in_creation_order

COLUMNS = (
    "id, project_id, fingerprint, pattern, bug_ticket_key, bug_ticket_url, note, status, closed_at, created_at, "
    "updated_at"
)
UPDATABLE = {"fingerprint", "pattern", "bug_ticket_key", "bug_ticket_url", "note", "status", "closed_at",
             "updated_at"}


async def insert(tx: Transaction, row: dict[str, Any]) -> None:
    await tx.execute(
        "INSERT INTO known_issues (id, tenant_id, project_id, fingerprint, pattern, bug_ticket_key, bug_ticket_url, "
        "note, status, created_at, updated_at) VALUES (:id, :tenant_id, :project_id, :fingerprint, :pattern, "
        ":bug_ticket_key, :bug_ticket_url, :note, 'OPEN', :created_at, :created_at)",
        row,
    )


async def get(db: Database | Transaction, tenant_id: str, issue_id: str) -> Row | None:
    return await db.fetch_one(f"SELECT {COLUMNS} FROM known_issues WHERE tenant_id = ? AND id = ?",
                              (tenant_id, issue_id))


async def page(db: Database, tenant_id: str, *, project_id: str | None, status: str | None, limit: int,
               offset: int) -> tuple[list[Row], int]:
    where, params = equality_filters(tenant_id, project_id=project_id, status=status)
    return await page_in_creation_order(db, "known_issues", COLUMNS, where, params, limit, offset)


async def open_for_project(db: Database | Transaction, tenant_id: str, project_id: str) -> list[Row]:
    """The project's open known issues, oldest first (the first that matches a failure wins)."""
    return await db.fetch_all(
        f"SELECT {COLUMNS} FROM known_issues WHERE tenant_id = ? AND project_id = ? AND status = 'OPEN' "
        "ORDER BY rowid",
        (tenant_id, project_id),
    )


async def count_open_patterns(tx: Transaction, tenant_id: str, project_id: str) -> int:
    """Open known issues of the project that have a pattern (tms.failures.known_issues.patterns bounds them)."""
    return int(await tx.fetch_value(
        "SELECT count(*) FROM known_issues WHERE tenant_id = ? AND project_id = ? AND status = 'OPEN' "
        "AND pattern IS NOT NULL",
        (tenant_id, project_id),
    ) or 0)


async def update(tx: Transaction, tenant_id: str, issue_id: str, changes: dict[str, Any]) -> int:
    if set(changes) - UPDATABLE:
        raise ValueError(f"not updatable: {sorted(set(changes) - UPDATABLE)}")
    assignments = ", ".join(f"{column} = ?" for column in changes)
    return await tx.execute(f"UPDATE known_issues SET {assignments} WHERE tenant_id = ? AND id = ?",
                            (*changes.values(), tenant_id, issue_id))


async def delete(tx: Transaction, tenant_id: str, issue_id: str) -> int:
    return await tx.execute("DELETE FROM known_issues WHERE tenant_id = ? AND id = ?", (tenant_id, issue_id))


async def open_with_bug_keys(tx: Transaction, tenant_id: str, keys: list[str]) -> list[Row]:
    """Open known issues naming any of these bug keys (the tracker loop closes them)."""
    return await tx.fetch_all(
        f"SELECT {COLUMNS} FROM known_issues WHERE tenant_id = ? AND status = 'OPEN' "
        "AND bug_ticket_key IN (SELECT value FROM json_each(?))",
        (tenant_id, json.dumps(keys)),
    )


async def close(tx: Transaction, tenant_id: str, ids: list[str], at: str) -> None:
    await tx.executemany(
        "UPDATE known_issues SET status = 'CLOSED', closed_at = ?, updated_at = ? WHERE tenant_id = ? AND id = ?",
        [(at, at, tenant_id, issue_id) for issue_id in ids],
    )
