"""SQL of idempotency_keys: the first answer to an ingest, kept per (tenant, Idempotency-Key)."""

from __future__ import annotations

from tms.db import Database, Row, Transaction


async def get_answer(db: Database | Transaction, tenant_id: str, key: str) -> Row | None:
    return await db.fetch_one(
        "SELECT request_sha256, response_status, response_body FROM idempotency_keys "
        "WHERE tenant_id = ? AND key = ?",
        (tenant_id, key),
    )


async def save_answer(
    tx: Transaction, tenant_id: str, key: str, request_sha256: str, status: int, body: bytes, created_at: str
) -> None:
    await tx.execute(
        "INSERT INTO idempotency_keys (tenant_id, key, request_sha256, response_status, response_body, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (tenant_id, key, request_sha256, status, body, created_at),
    )


async def delete_before(tx: Transaction, cutoff: str) -> int:
    return await tx.execute("DELETE FROM idempotency_keys WHERE created_at < ?", (cutoff,))
