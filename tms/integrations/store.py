"""Issue-tracker integrations and the deliveries they received (SQL only)."""

from __future__ import annotations

import json

from tms.db import Database, Row, Transaction

_COLUMNS = ("id, tenant_id, kind, name, repository, created_at, updated_at, last_delivery_at, api_url, api_user, "
            "project_path, project_key, CASE WHEN api_token_encrypted IS NULL THEN 0 ELSE 1 END AS api_token_set")
# what the settings may change, in the order of the UPDATE
SETTINGS = ("name", "repository", "api_url", "api_user", "api_token_encrypted", "project_path", "project_key")


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
    outbound: dict[str, str | None] | None = None,
) -> None:
    out = outbound or {}
    await tx.execute(
        "INSERT INTO integrations (id, tenant_id, kind, name, repository, secret, created_at, updated_at, "
        "api_url, api_user, api_token_encrypted, project_path, project_key) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (integration_id, tenant_id, kind, name, repository, secret, created_at, created_at, out.get("api_url"),
         out.get("api_user"), out.get("api_token_encrypted"), out.get("project_path"), out.get("project_key")),
    )


async def update_settings(tx: Transaction, tenant_id: str, integration_id: str, changes: dict[str, str | None],
                          at: str) -> int:
    """``changes``: columns of ``SETTINGS`` to their new values."""
    columns = [column for column in SETTINGS if column in changes]
    assignments = "".join(f"{column} = ?, " for column in columns)
    return await tx.execute(
        f"UPDATE integrations SET {assignments}updated_at = ? WHERE tenant_id = ? AND id = ?",
        (*(changes[column] for column in columns), at, tenant_id, integration_id),
    )


async def get_outbound(db: Database | Transaction, tenant_id: str, integration_id: str) -> Row | None:
    """The integration with its encrypted API token, for a call to the tracker."""
    return await db.fetch_one(
        f"SELECT {_COLUMNS}, api_token_encrypted FROM integrations WHERE tenant_id = ? AND id = ?",
        (tenant_id, integration_id),
    )


async def outbound_integrations(db: Database) -> list[Row]:
    """Every integration of an active tenant that can call its tracker (the refresh job's work list)."""
    return await db.fetch_all(
        "SELECT i.id, i.tenant_id, i.kind, i.name, i.repository, i.api_url, i.api_user, i.project_path, "
        "i.project_key, i.api_token_encrypted "
        "FROM integrations i JOIN tenants t ON t.id = i.tenant_id "
        "WHERE t.status = 'ACTIVE' AND i.api_token_encrypted IS NOT NULL AND i.api_url IS NOT NULL "
        "ORDER BY i.tenant_id, i.created_at, i.id",
    )


# --- defect creations in flight ------------------------------------------------------------------


async def claim_defect(tx: Transaction, tenant_id: str, result_id: str, integration_id: str, at: str,
                       stale_before: str) -> bool:
    """Takes the result's claim; False when another creation holds a fresh one."""
    await tx.execute("DELETE FROM defect_requests WHERE result_id = ? AND started_at < ?", (result_id, stale_before))
    inserted = await tx.execute(
        "INSERT OR IGNORE INTO defect_requests (result_id, tenant_id, integration_id, started_at) VALUES (?, ?, ?, ?)",
        (result_id, tenant_id, integration_id, at),
    )
    return inserted > 0


async def release_defect(tx: Transaction, tenant_id: str, result_id: str) -> None:
    await tx.execute("DELETE FROM defect_requests WHERE tenant_id = ? AND result_id = ?", (tenant_id, result_id))


# --- the cache of tracker issues (requirements' titles and statuses) -----------------------------


async def save_issues(tx: Transaction, rows: list[tuple[str, str, str, str, str | None, str | None, str | None,
                                                        str | None, str]]) -> None:
    """Rows of (tenant_id, source, issue_key, integration_id, title, status, url, error, fetched_at); an
    error keeps the title, status and URL fetched before (a tracker down for an hour blanks nothing)."""
    await tx.executemany(
        "INSERT INTO tracker_issues (tenant_id, source, issue_key, integration_id, title, status, url, error, "
        "fetched_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id, source, issue_key) DO UPDATE SET "
        "integration_id = excluded.integration_id, "
        "title = CASE WHEN excluded.error IS NULL THEN excluded.title ELSE tracker_issues.title END, "
        "status = CASE WHEN excluded.error IS NULL THEN excluded.status ELSE tracker_issues.status END, "
        "url = CASE WHEN excluded.error IS NULL THEN excluded.url ELSE tracker_issues.url END, "
        "error = excluded.error, fetched_at = excluded.fetched_at",
        rows,
    )


async def keys_to_refresh(db: Database, tenant_id: str, sources: list[str], fresh_after: str,
                          limit: int) -> list[Row]:
    """Requirement keys (as cases name them, with their source) of the tenant whose cached entry is
    missing or older than ``fresh_after``, oldest first."""
    return await db.fetch_all(
        "SELECT k.source, k.issue_key, min(k.key) AS key FROM ("
        " SELECT coalesce(json_extract(t.value, '$.source'), 'OTHER') AS source,"
        "  upper(json_extract(t.value, '$.key')) AS issue_key, json_extract(t.value, '$.key') AS key"
        " FROM test_cases c, json_each(c.tickets) t WHERE c.tenant_id = :tenant AND c.tickets != '[]') k"
        " LEFT JOIN tracker_issues i ON i.tenant_id = :tenant AND i.source = k.source AND i.issue_key = k.issue_key"
        " WHERE k.source IN (SELECT value FROM json_each(:sources))"
        "  AND (i.fetched_at IS NULL OR i.fetched_at < :fresh)"
        " GROUP BY k.source, k.issue_key ORDER BY min(i.fetched_at) IS NOT NULL, min(i.fetched_at), k.issue_key"
        " LIMIT :limit",
        {"tenant": tenant_id, "sources": json.dumps(sources), "fresh": fresh_after, "limit": limit},
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
