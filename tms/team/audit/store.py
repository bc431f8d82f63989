"""The audit log: appended inside the transaction of the write it records, read newest first."""

from __future__ import annotations

from typing import Any

from tms.db import Database, Row, Transaction

_COLUMNS = "id, actor_type, actor_id, actor_name, action, entity_type, entity_id, changes, created_at"


async def insert_entries(tx: Transaction, rows: list[dict[str, Any]]) -> None:
    await tx.executemany(
        "INSERT INTO audit_log (id, tenant_id, actor_type, actor_id, actor_name, action, entity_type, entity_id, "
        "changes, created_at) VALUES (:id, :tenant_id, :actor_type, :actor_id, :actor_name, :action, "
        ":entity_type, :entity_id, :changes, :created_at)",
        rows,
    )


async def list_entries(
    db: Database,
    tenant_id: str,
    *,
    entity_type: str | None,
    entity_id: str | None,
    action: str | None,
    actor_id: str | None,
    limit: int,
    offset: int,
) -> tuple[list[Row], int]:
    """One page newest first and the total; each filter combination walks one of the two indexes."""
    where, params = ["tenant_id = ?"], [tenant_id]
    for column, value in (("entity_type", entity_type), ("entity_id", entity_id), ("action", action),
                          ("actor_id", actor_id)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    condition = " AND ".join(where)
    rows = await db.fetch_all(
        f"SELECT {_COLUMNS} FROM audit_log WHERE {condition} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
        (*params, limit, offset),
    )
    total = await db.fetch_value(f"SELECT COUNT(*) FROM audit_log WHERE {condition}", params)
    return rows, int(total)
