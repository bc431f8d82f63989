from __future__ import annotations

from tms.db import Database, Row, Transaction


async def insert_tenant(tx: Transaction, tenant_id: str, name: str, created_at: str) -> None:
    await tx.execute(
        "INSERT INTO tenants (id, name, status, created_at) VALUES (?, ?, 'ACTIVE', ?)",
        (tenant_id, name, created_at),
    )


async def get_tenant(db: Database, tenant_id: str) -> Row | None:
    return await db.fetch_one("SELECT id, name, status, created_at FROM tenants WHERE id = ?", (tenant_id,))


async def tenant_exists(db: Database | Transaction, tenant_id: str) -> bool:
    return bool(await db.fetch_value("SELECT 1 FROM tenants WHERE id = ?", (tenant_id,)))


async def set_tenant_status(tx: Transaction, tenant_id: str, status: str) -> int:
    return await tx.execute("UPDATE tenants SET status = ? WHERE id = ?", (status, tenant_id))


async def next_case_numbers(tx: Transaction, tenant_id: str, count: int) -> int:
    """Reserves ``count`` TC-<n> numbers; returns the first. Numbers are never handed out twice."""
    first = await tx.fetch_value(
        "UPDATE tenants SET case_seq = case_seq + ? WHERE id = ? RETURNING case_seq - ? + 1",
        (count, tenant_id, count),
    )
    return int(first)
