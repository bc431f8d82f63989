"""SQL of report_schedules (migration 0040); every query of a tenant's rows filters on tenant_id.

``due`` and ``claim`` are the scheduler's: they read across tenants, by the ``report_schedules_due``
index, and ``claim`` is the compare-and-set that makes one replica, and one only, mail a due schedule.
"""

from __future__ import annotations

from typing import Any

from tms.db import Database, Row, Transaction

COLUMNS = ("id, tenant_id, project_id, kind, target_id, cron, recipients, attachment, next_run_at, last_sent_at, "
           "last_error, created_at, updated_at")
UPDATABLE = frozenset({"kind", "target_id", "cron", "recipients", "attachment", "next_run_at", "updated_at"})
_NAMES = [c.strip() for c in COLUMNS.split(",")]


async def list_for_project(db: Database, tenant_id: str, project_id: str) -> list[Row]:
    return await db.fetch_all(
        f"SELECT {COLUMNS} FROM report_schedules WHERE tenant_id = ? AND project_id = ? ORDER BY created_at, id",
        (tenant_id, project_id))


async def list_for_tenant(db: Database, tenant_id: str, limit: int, offset: int) -> tuple[list[Row], int]:
    rows = await db.fetch_all(
        f"SELECT {COLUMNS} FROM report_schedules WHERE tenant_id = ? ORDER BY created_at, id LIMIT ? OFFSET ?",
        (tenant_id, limit, offset))
    total = await db.fetch_value("SELECT count(*) FROM report_schedules WHERE tenant_id = ?", (tenant_id,))
    return rows, int(total or 0)


async def get(db: Database | Transaction, tenant_id: str, schedule_id: str) -> Row | None:
    return await db.fetch_one(f"SELECT {COLUMNS} FROM report_schedules WHERE tenant_id = ? AND id = ?",
                              (tenant_id, schedule_id))


async def count_for_project(db: Database | Transaction, tenant_id: str, project_id: str) -> int:
    value = await db.fetch_value("SELECT count(*) FROM report_schedules WHERE tenant_id = ? AND project_id = ?",
                                 (tenant_id, project_id))
    return int(value or 0)


async def insert(tx: Transaction, row: dict[str, Any]) -> None:
    await tx.execute(f"INSERT INTO report_schedules ({COLUMNS}) VALUES ({', '.join('?' * len(_NAMES))})",
                     [row[name] for name in _NAMES])


async def update(tx: Transaction, tenant_id: str, schedule_id: str, changes: dict[str, Any]) -> None:
    unknown = set(changes) - UPDATABLE
    if unknown:
        raise ValueError(f"not updatable: {sorted(unknown)}")
    assignments = ", ".join(f"{column} = ?" for column in changes)
    await tx.execute(f"UPDATE report_schedules SET {assignments} WHERE tenant_id = ? AND id = ?",
                     (*changes.values(), tenant_id, schedule_id))


async def delete(tx: Transaction, tenant_id: str, schedule_id: str) -> int:
    return await tx.execute("DELETE FROM report_schedules WHERE tenant_id = ? AND id = ?", (tenant_id, schedule_id))


async def due(db: Database, now: str, limit: int) -> list[Row]:
    """Schedules of every tenant due at ``now``, the longest overdue first."""
    return await db.fetch_all(
        f"SELECT {COLUMNS} FROM report_schedules WHERE next_run_at <= ? ORDER BY next_run_at LIMIT ?", (now, limit))


async def claim(tx: Transaction, schedule_id: str, seen: str, now: str, following: str) -> bool:
    """Moves a due schedule on to ``following`` if its next_run_at is still the ``seen`` this replica read:
    True for the one replica whose UPDATE changed the row, False for every other."""
    changed = await tx.execute(
        "UPDATE report_schedules SET next_run_at = ? WHERE id = ? AND next_run_at = ? AND next_run_at <= ?",
        (following, schedule_id, seen, now))
    return changed == 1


async def record_attempt(tx: Transaction, tenant_id: str, schedule_id: str, sent_at: str | None,
                         error: str | None) -> None:
    """After a send: a success sets last_sent_at and clears last_error; a failure keeps last_sent_at."""
    if error is None:
        await tx.execute(
            "UPDATE report_schedules SET last_sent_at = ?, last_error = NULL WHERE tenant_id = ? AND id = ?",
            (sent_at, tenant_id, schedule_id))
    else:
        await tx.execute("UPDATE report_schedules SET last_error = ? WHERE tenant_id = ? AND id = ?",
                         (error, tenant_id, schedule_id))
