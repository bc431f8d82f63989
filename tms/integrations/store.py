"""Issue-tracker integrations and the deliveries they received (SQL only)."""

from __future__ import annotations

from tms.db import Database, Row, Transaction

_COLUMNS = "id, tenant_id, kind, name, repository, created_at, updated_at, last_delivery_at"


async def insert_integration(
    tx: Transaction,
    *,
    integration_id: str,
    tenant_id: str,
    kind: str,
    name: str,
    repository: str | None,
    secret: str,
    created_at: str,
) -> None:
    await tx.execute(
        "INSERT INTO integrations (id, tenant_id, kind, name, repository, secret, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (integration_id, tenant_id, kind, name, repository, secret, created_at, created_at),
    )


async def list_integrations(db: Database, tenant_id: str) -> list[Row]:
    return await db.fetch_all(
        f"SELECT {_COLUMNS} FROM integrations WHERE tenant_id = ? ORDER BY created_at, id", (tenant_id,)
    )


async def get_integration(db: Database | Transaction, tenant_id: str, integration_id: str) -> Row | None:
    return await db.fetch_one(
        f"SELECT {_COLUMNS} FROM integrations WHERE tenant_id = ? AND id = ?", (tenant_id, integration_id)
    )


async def find_for_inbound(db: Database, integration_id: str) -> Row | None:
    """The integration an inbound call names, with its secret; only for an active tenant.

    The one query without a tenant filter: the caller is a tracker, and the id in the URL is what
    tells us the tenant. The secret check that follows is what makes the call trusted.
    """
    return await db.fetch_one(
        "SELECT i.id, i.tenant_id, i.kind, i.name, i.repository, i.secret FROM integrations i "
        "JOIN tenants t ON t.id = i.tenant_id WHERE i.id = ? AND t.status = 'ACTIVE'",
        (integration_id,),
    )


async def delete_integration(tx: Transaction, tenant_id: str, integration_id: str) -> int:
    return await tx.execute(
        "DELETE FROM integrations WHERE tenant_id = ? AND id = ?", (tenant_id, integration_id)
    )


async def replace_secret(tx: Transaction, tenant_id: str, integration_id: str, secret: str, at: str) -> int:
    return await tx.execute(
        "UPDATE integrations SET secret = ?, updated_at = ? WHERE tenant_id = ? AND id = ?",
        (secret, at, tenant_id, integration_id),
    )


async def delivery_seen(tx: Transaction, integration_id: str, delivery_key: str, payload_sha256: str) -> bool:
    return bool(
        await tx.fetch_value(
            "SELECT 1 FROM integration_deliveries WHERE integration_id = ? AND delivery_key = ? "
            "UNION ALL SELECT 1 FROM integration_deliveries WHERE integration_id = ? AND payload_sha256 = ? "
            "LIMIT 1",
            (integration_id, delivery_key, integration_id, payload_sha256),
        )
    )


async def insert_delivery(
    tx: Transaction,
    *,
    integration_id: str,
    tenant_id: str,
    delivery_key: str,
    payload_sha256: str,
    event: str,
    outcome: str,
    bug_key: str | None,
    cases_linked: int,
    detail: str,
    received_at: str,
) -> None:
    await tx.execute(
        "INSERT INTO integration_deliveries (integration_id, delivery_key, payload_sha256, tenant_id, event, "
        "outcome, bug_key, cases_linked, detail, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (integration_id, delivery_key, payload_sha256, tenant_id, event, outcome, bug_key, cases_linked,
         detail, received_at),
    )
    await tx.execute(
        "UPDATE integrations SET last_delivery_at = ? WHERE id = ? AND tenant_id = ?",
        (received_at, integration_id, tenant_id),
    )


async def prune_deliveries(tx: Transaction, integration_id: str, before: str) -> int:
    """Trackers redeliver within hours or days; older rows only grow the table."""
    return await tx.execute(
        "DELETE FROM integration_deliveries WHERE integration_id = ? AND received_at < ?", (integration_id, before)
    )


async def recent_deliveries(db: Database, tenant_id: str, integration_id: str, limit: int = 10) -> list[Row]:
    return await db.fetch_all(
        "SELECT delivery_key, event, outcome, bug_key, cases_linked, detail, received_at "
        "FROM integration_deliveries WHERE tenant_id = ? AND integration_id = ? "
        "ORDER BY received_at DESC, rowid DESC LIMIT ?",
        (tenant_id, integration_id, limit),
    )
