"""SQL of shared_steps and their links (migration 0036); every query filters on tenant_id.

shared_step_uses: the shared steps a case's text names itself; shared_step_nesting: those another
shared step's steps name. The cases using a shared step, directly or through others, are found by
walking shared_step_nesting upwards from it (a few rows: shared steps are few and shallow), then
shared_step_uses by its primary key: index reads, never a scan of the cases' text.
"""

from __future__ import annotations

import json
from typing import Any

from tms.db import Database, Row, Transaction

COLUMNS = "id, tenant_id, project_id, name, steps, version, created_at, updated_at"
UPDATABLE = frozenset({"name", "steps", "version", "updated_at"})
# the shared step itself and every shared step using it, directly or through others
_UPWARDS = ("WITH RECURSIVE up (id) AS (SELECT CAST(? AS TEXT) UNION SELECT n.parent_id FROM shared_step_nesting n "
            "JOIN up ON n.shared_step_id = up.id WHERE n.tenant_id = ?) ")


async def list_for_project(db: Database, tenant_id: str, project_id: str, limit: int,
                           offset: int) -> tuple[list[Row], int]:
    rows = await db.fetch_all(
        f"SELECT {COLUMNS} FROM shared_steps WHERE tenant_id = ? AND project_id = ? ORDER BY name LIMIT ? OFFSET ?",
        (tenant_id, project_id, limit, offset),
    )
    total = await db.fetch_value("SELECT COUNT(*) FROM shared_steps WHERE tenant_id = ? AND project_id = ?",
                                 (tenant_id, project_id))
    return rows, int(total or 0)


async def names_for_project(db: Database, tenant_id: str, project_id: str, limit: int) -> list[str]:
    rows = await db.fetch_all("SELECT name FROM shared_steps WHERE tenant_id = ? AND project_id = ? "
                              "ORDER BY name LIMIT ?", (tenant_id, project_id, limit))
    return [row["name"] for row in rows]


async def get_step(db: Database | Transaction, tenant_id: str, step_id: str) -> Row | None:
    return await db.fetch_one(f"SELECT {COLUMNS} FROM shared_steps WHERE tenant_id = ? AND id = ?",
                              (tenant_id, step_id))


async def by_names(db: Database | Transaction, tenant_id: str, project_id: str, names: list[str]) -> list[Row]:
    """The project's shared steps with these names (one index probe each)."""
    if not names:
        return []
    return await db.fetch_all(
        f"SELECT {COLUMNS} FROM shared_steps WHERE tenant_id = ? AND project_id = ? "
        "AND name IN (SELECT value FROM json_each(?))",
        (tenant_id, project_id, json.dumps(names)),
    )


async def name_taken(db: Database | Transaction, tenant_id: str, project_id: str, name: str) -> bool:
    row = await db.fetch_one("SELECT 1 AS one FROM shared_steps WHERE tenant_id = ? AND project_id = ? AND name = ?",
                             (tenant_id, project_id, name))
    return row is not None


async def insert_step(tx: Transaction, row: dict[str, Any]) -> None:
    names = [c.strip() for c in COLUMNS.split(",")]
    await tx.execute(f"INSERT INTO shared_steps ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                     [row[name] for name in names])


async def update_step(tx: Transaction, tenant_id: str, step_id: str, changes: dict[str, Any]) -> None:
    unknown = set(changes) - UPDATABLE
    if unknown:
        raise ValueError(f"not updatable: {sorted(unknown)}")
    assignments = ", ".join(f"{column} = ?" for column in changes)
    await tx.execute(f"UPDATE shared_steps SET {assignments} WHERE tenant_id = ? AND id = ?",
                     (*changes.values(), tenant_id, step_id))


async def delete_step(tx: Transaction, tenant_id: str, step_id: str) -> int:
    return await tx.execute("DELETE FROM shared_steps WHERE tenant_id = ? AND id = ?", (tenant_id, step_id))


async def set_nesting(tx: Transaction, tenant_id: str, parent_id: str, used_ids: list[str]) -> None:
    """The shared steps ``parent_id``'s steps name, replacing what was recorded."""
    await tx.execute("DELETE FROM shared_step_nesting WHERE parent_id = ? AND tenant_id = ?", (parent_id, tenant_id))
    if used_ids:
        await tx.executemany(
            "INSERT INTO shared_step_nesting (tenant_id, shared_step_id, parent_id) VALUES (?, ?, ?)",
            [(tenant_id, used, parent_id) for used in used_ids],
        )


async def parents_of(db: Database | Transaction, tenant_id: str, step_id: str) -> list[Row]:
    """The shared steps whose steps name this one directly (id, name, steps, version)."""
    return await db.fetch_all(
        "SELECT s.id, s.name, s.steps, s.version FROM shared_step_nesting n JOIN shared_steps s ON s.id = n.parent_id "
        "WHERE n.shared_step_id = ? AND n.tenant_id = ? ORDER BY s.name",
        (step_id, tenant_id),
    )


async def set_case_links(tx: Transaction, tenant_id: str, case_ids: list[str], links: list[tuple[str, str]]) -> None:
    """Replaces the links of these cases by ``links`` ((shared step id, case id)): two statements."""
    if not case_ids:
        return
    await tx.execute("DELETE FROM shared_step_uses WHERE case_id IN (SELECT value FROM json_each(?)) "
                     "AND tenant_id = ?", (json.dumps(case_ids), tenant_id))
    if links:
        await tx.executemany("INSERT INTO shared_step_uses (tenant_id, shared_step_id, case_id) VALUES (?, ?, ?)",
                             [(tenant_id, step_id, case_id) for step_id, case_id in links])


async def linked_cases(db: Database | Transaction, tenant_id: str, case_ids: list[str]) -> set[str]:
    """Which of these cases have links now (a case whose text no longer names any loses them)."""
    if not case_ids:
        return set()
    rows = await db.fetch_all("SELECT DISTINCT case_id FROM shared_step_uses WHERE case_id IN "
                              "(SELECT value FROM json_each(?)) AND tenant_id = ?", (json.dumps(case_ids), tenant_id))
    return {row["case_id"] for row in rows}


async def direct_case_ids(db: Database | Transaction, tenant_id: str, step_id: str) -> list[str]:
    rows = await db.fetch_all("SELECT case_id FROM shared_step_uses WHERE shared_step_id = ? AND tenant_id = ?",
                              (step_id, tenant_id))
    return [row["case_id"] for row in rows]


_USER_IDS = (_UPWARDS + "SELECT DISTINCT u.case_id FROM shared_step_uses u JOIN up ON u.shared_step_id = up.id "
             "WHERE u.tenant_id = ?")


async def user_case_ids(db: Database | Transaction, tenant_id: str, step_id: str) -> list[str]:
    """Every case using the shared step, directly or through other shared steps."""
    rows = await db.fetch_all(_USER_IDS, (step_id, tenant_id, tenant_id))
    return [row["case_id"] for row in rows]


async def users(db: Database | Transaction, tenant_id: str, step_id: str, limit: int) -> tuple[list[Row], int]:
    """(id, code, title) of the cases using the shared step (oldest first, at most ``limit``), and how many."""
    rows = await db.fetch_all(
        _UPWARDS + "SELECT c.id, c.code, c.title FROM test_cases c WHERE c.id IN (SELECT u.case_id FROM "
        "shared_step_uses u JOIN up ON u.shared_step_id = up.id WHERE u.tenant_id = ?) AND c.tenant_id = ? "
        "ORDER BY c.created_at, c.id LIMIT ?",
        (step_id, tenant_id, tenant_id, tenant_id, limit),
    )
    total = len(rows) if len(rows) < limit else int(await db.fetch_value(
        "SELECT COUNT(*) FROM (" + _USER_IDS + ") t", (step_id, tenant_id, tenant_id)) or 0)
    return rows, total
