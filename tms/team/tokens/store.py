from __future__ import annotations

from collections.abc import Iterable

from tms.db import Database, Row, Transaction


async def insert_token(
    tx: Transaction,
    *,
    token_id: str,
    tenant_id: str,
    created_by: str | None,
    name: str,
    prefix: str,
    secret_sha256: bytes,
    scopes: str,
    created_at: str,
) -> None:
    await tx.execute(
        "INSERT INTO api_tokens (id, tenant_id, created_by, name, prefix, secret_sha256, scopes, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (token_id, tenant_id, created_by, name, prefix, secret_sha256, scopes, created_at),
    )


async def prefix_taken(db: Database | Transaction, prefix: str) -> bool:
    return bool(await db.fetch_value("SELECT 1 FROM api_tokens WHERE prefix = ?", (prefix,)))


async def token_exists(db: Database | Transaction, tenant_id: str, token_id: str) -> bool:
    return bool(await db.fetch_value("SELECT 1 FROM api_tokens WHERE tenant_id = ? AND id = ?",
                                     (tenant_id, token_id)))


async def find_token_by_prefix(db: Database, prefix: str) -> Row | None:
    """The token with its tenant, for Bearer verification: one indexed lookup per request."""
    return await db.fetch_one(
        "SELECT k.id, k.name, k.tenant_id, k.secret_sha256, k.scopes, k.revoked_at, "
        "t.name AS tenant_name, t.status AS tenant_status "
        "FROM api_tokens k JOIN tenants t ON t.id = k.tenant_id WHERE k.prefix = ?",
        (prefix,),
    )


async def list_tokens(db: Database, tenant_id: str) -> list[Row]:
    return await db.fetch_all(
        "SELECT t.id, t.name, t.prefix, t.scopes, t.created_at, t.last_used_at, t.revoked_at, t.created_by, "
        "COALESCE(NULLIF(u.name, ''), u.email) AS created_by_name FROM api_tokens t "
        "LEFT JOIN users u ON u.id = t.created_by "
        "WHERE t.tenant_id = ? ORDER BY t.revoked_at IS NOT NULL, t.created_at DESC",
        (tenant_id,),
    )


async def revoke_token(tx: Transaction, tenant_id: str, token_id: str, at: str) -> int:
    return await tx.execute(
        "UPDATE api_tokens SET revoked_at = ? WHERE tenant_id = ? AND id = ? AND revoked_at IS NULL",
        (at, tenant_id, token_id),
    )


async def touch_tokens(tx: Transaction, last_used: Iterable[tuple[str, str]]) -> None:
    """Writes the batched last-used times: (used_at, token_id) pairs."""
    await tx.executemany(
        "UPDATE api_tokens SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)",
        [(used_at, token_id, used_at) for used_at, token_id in last_used],
    )


async def live_tokens_created_by(db: Database | Transaction, tenant_id: str, user_id: str) -> list[Row]:
    return await db.fetch_all(
        "SELECT id, name, prefix, scopes, created_at, last_used_at FROM api_tokens WHERE tenant_id = ? "
        "AND created_by = ? AND revoked_at IS NULL ORDER BY created_at", (tenant_id, user_id))


async def revoke_tokens_created_by(tx: Transaction, tenant_id: str, user_id: str, at: str) -> int:
    return await tx.execute(
        "UPDATE api_tokens SET revoked_at = ? WHERE tenant_id = ? AND created_by = ? AND revoked_at IS NULL",
        (at, tenant_id, user_id))


async def creator_of(db: Database | Transaction, tenant_id: str, token_id: str) -> str | None:
    """The user who created the token (None for one made by `tms admin` or whose creator is gone)."""
    value = await db.fetch_value("SELECT created_by FROM api_tokens WHERE tenant_id = ? AND id = ?",
                                 (tenant_id, token_id))
    return None if value is None else str(value)
