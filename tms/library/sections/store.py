"""SQL of the sections table (the library's folder tree); every query filters on tenant_id.

A section's ``path`` lists the ids from the root down to it, ``/root/child/it/``: a subtree is the
index range ``[path, path-with-its-last-"/"-raised)``, so subtree reads and moves are one statement.
"""

from __future__ import annotations

import json
from typing import Any

from tms.db import Database, Row, Transaction

COLUMNS = "id, project_id, parent_id, name, description, position, path, created_at, updated_at"


def subtree_bounds(path: str) -> tuple[str, str]:
    """[low, high) of the paths inside the subtree rooted at ``path`` (itself included)."""
    return path, path[:-1] + "0"  # "0" sorts right after "/"


async def list_for_project(db: Database | Transaction, tenant_id: str, project_id: str) -> list[Row]:
    return await db.fetch_all(
        f"SELECT {COLUMNS} FROM sections WHERE tenant_id = ? AND project_id = ? ORDER BY path",
        (tenant_id, project_id),
    )


async def case_counts(db: Database | Transaction, tenant_id: str, project_id: str) -> dict[str | None, int]:
    """Cases per section of a project (None = not filed): the per-section counters that triggers keep
    (migration 0023), at most one row per section, instead of a grouped pass over the project's cases."""
    rows = await db.fetch_all(
        "SELECT section_key, cases FROM section_case_counts WHERE tenant_id = ? AND project_id = ? AND cases > 0",
        (tenant_id, project_id),
    )
    return {row["section_key"] or None: row["cases"] for row in rows}


async def get_section(db: Database | Transaction, tenant_id: str, section_id: str) -> Row | None:
    return await db.fetch_one(
        f"SELECT {COLUMNS} FROM sections WHERE tenant_id = ? AND id = ?", (tenant_id, section_id)
    )


async def get_many(db: Database | Transaction, tenant_id: str, section_ids: list[str]) -> list[Row]:
    if not section_ids:
        return []
    return await db.fetch_all(
        f"SELECT {COLUMNS} FROM sections WHERE tenant_id = ? AND id IN (SELECT value FROM json_each(?))",
        (tenant_id, json.dumps(section_ids)),
    )


async def subtree_ids(db: Database | Transaction, tenant_id: str, project_id: str, path: str) -> list[str]:
    low, high = subtree_bounds(path)
    rows = await db.fetch_all(
        "SELECT id FROM sections WHERE tenant_id = ? AND project_id = ? AND path >= ? AND path < ?",
        (tenant_id, project_id, low, high),
    )
    return [row["id"] for row in rows]


async def sibling_named(
    db: Database | Transaction, tenant_id: str, project_id: str, parent_id: str | None, name: str
) -> str | None:
    value: str | None = await db.fetch_value(
        "SELECT id FROM sections WHERE tenant_id = ? AND project_id = ? AND coalesce(parent_id, '') = ? "
        "AND name = ?",
        (tenant_id, project_id, parent_id or "", name),
    )
    return value


async def next_position(tx: Transaction, tenant_id: str, project_id: str, parent_id: str | None) -> int:
    value = await tx.fetch_value(
        "SELECT coalesce(MAX(position) + 1, 0) FROM sections WHERE tenant_id = ? AND project_id = ? "
        "AND coalesce(parent_id, '') = ?",
        (tenant_id, project_id, parent_id or ""),
    )
    return int(value)


async def insert_sections(tx: Transaction, rows: list[Row]) -> None:
    """Rows as dicts with every column; one executemany."""
    if not rows:
        return
    await tx.executemany(
        "INSERT INTO sections (id, tenant_id, project_id, parent_id, name, description, position, path, "
        "created_at, updated_at) VALUES (:id, :tenant_id, :project_id, :parent_id, :name, :description, "
        ":position, :path, :created_at, :updated_at)",
        rows,
    )


async def update_fields(tx: Transaction, tenant_id: str, section_id: str, changes: dict[str, Any]) -> None:
    allowed = {"name", "description", "position", "parent_id", "updated_at"}
    if set(changes) - allowed:
        raise ValueError(f"not updatable: {sorted(set(changes) - allowed)}")
    assignments = ", ".join(f"{column} = ?" for column in changes)
    await tx.execute(
        f"UPDATE sections SET {assignments} WHERE tenant_id = ? AND id = ?",
        (*changes.values(), tenant_id, section_id),
    )


async def rebase_paths(tx: Transaction, tenant_id: str, project_id: str, old_prefix: str, new_prefix: str) -> None:
    """Every path starting with ``old_prefix`` starts with ``new_prefix`` instead (a subtree moves)."""
    low, high = subtree_bounds(old_prefix)
    await tx.execute(
        "UPDATE sections SET path = ? || substr(path, ?) "
        "WHERE tenant_id = ? AND project_id = ? AND path >= ? AND path < ?",
        (new_prefix, len(old_prefix) + 1, tenant_id, project_id, low, high),
    )


async def reparent_children(tx: Transaction, tenant_id: str, section_id: str, parent_id: str | None) -> None:
    await tx.execute(
        "UPDATE sections SET parent_id = ? WHERE tenant_id = ? AND parent_id = ?", (parent_id, tenant_id, section_id)
    )


async def delete_section(tx: Transaction, tenant_id: str, section_id: str) -> None:
    await tx.execute("DELETE FROM sections WHERE tenant_id = ? AND id = ?", (tenant_id, section_id))


async def case_ids_in(tx: Transaction, tenant_id: str, section_id: str) -> list[str]:
    rows = await tx.fetch_all(
        "SELECT id FROM test_cases WHERE section_id = ? AND tenant_id = ?", (section_id, tenant_id)
    )
    return [row["id"] for row in rows]


async def list_for_tenant(db: Database, tenant_id: str) -> list[Row]:
    return await db.fetch_all(f"SELECT {COLUMNS} FROM sections WHERE tenant_id = ? ORDER BY path", (tenant_id,))


async def counts_in(db: Database | Transaction, tenant_id: str, section_ids: list[str]) -> dict[str, int]:
    """Cases filed directly in each of these sections."""
    rows = await db.fetch_all(
        "SELECT section_id, COUNT(*) AS n FROM test_cases WHERE section_id IN (SELECT value FROM json_each(?)) "
        "AND tenant_id = ? GROUP BY section_id",
        (json.dumps(section_ids), tenant_id),
    )
    return {row["section_id"]: row["n"] for row in rows}


async def children_of(db: Database | Transaction, tenant_id: str, section_id: str) -> list[Row]:
    return await db.fetch_all(
        f"SELECT {COLUMNS} FROM sections WHERE tenant_id = ? AND parent_id = ?", (tenant_id, section_id)
    )
