"""Webhook subscriptions, deliveries and their attempt log: SQL only.

Management queries filter on ``tenant_id``. The dispatcher's queries (fan-out, due deliveries,
recording attempts) work across tenants on purpose: one dispatcher serves the whole instance, and
every row it writes is derived from a tenant-owned event or delivery.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tms.db import Database, Row, Transaction

_SUBSCRIPTION_COLUMNS = (
    "id, url, events, secret IS NOT NULL AS has_secret, active, format, filters, created_at, updated_at"
)
_DELIVERY_COLUMNS = (
    "id, subscription_id, event_id, event, status, attempts, last_status_code, last_error, "
    "next_attempt_at, created_at, delivered_at"
)


def _marks(count: int) -> str:
    return ", ".join("?" * count)


# --- subscriptions -------------------------------------------------------------------------------


async def list_subscriptions(db: Database, tenant_id: str) -> list[Row]:
    return await db.fetch_all(
        f"SELECT {_SUBSCRIPTION_COLUMNS} FROM webhook_subscriptions WHERE tenant_id = ? ORDER BY created_at, id",
        (tenant_id,),
    )


async def get_subscription(db: Database | Transaction, tenant_id: str, subscription_id: str) -> Row | None:
    return await db.fetch_one(
        f"SELECT {_SUBSCRIPTION_COLUMNS} FROM webhook_subscriptions WHERE tenant_id = ? AND id = ?",
        (tenant_id, subscription_id),
    )


async def insert_subscription(
    tx: Transaction,
    *,
    subscription_id: str,
    tenant_id: str,
    url: str,
    events_json: str,
    secret: str | None,
    active: bool,
    chat_format: str,
    filters_json: str,
    created_at: str,
) -> None:
    await tx.execute(
        "INSERT INTO webhook_subscriptions (id, tenant_id, url, events, secret, active, format, filters, "
        "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (subscription_id, tenant_id, url, events_json, secret, int(active), chat_format, filters_json,
         created_at, created_at),
    )


_UPDATABLE = ("url", "events", "secret", "active", "format", "filters")


async def update_subscription(
    tx: Transaction, tenant_id: str, subscription_id: str, changes: dict[str, Any], updated_at: str
) -> bool:
    """Sets the given columns (names from a fixed list, never from input); False when the id is unknown."""
    columns = [name for name in _UPDATABLE if name in changes]
    assignments = "".join(f"{name} = ?, " for name in columns)
    return bool(
        await tx.execute(
            f"UPDATE webhook_subscriptions SET {assignments}updated_at = ? WHERE tenant_id = ? AND id = ?",
            (*(changes[name] for name in columns), updated_at, tenant_id, subscription_id),
        )
    )


async def delete_subscription(tx: Transaction, tenant_id: str, subscription_id: str) -> bool:
    """Deletes the subscription; its deliveries and attempts go with it (ON DELETE CASCADE)."""
    return bool(
        await tx.execute(
            "DELETE FROM webhook_subscriptions WHERE tenant_id = ? AND id = ?", (tenant_id, subscription_id)
        )
    )


# --- delivery log ----------------------------------------------------------------------------------


async def list_deliveries(db: Database, tenant_id: str, subscription_id: str, limit: int) -> list[Row]:
    return await db.fetch_all(
        f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries WHERE tenant_id = ? AND subscription_id = ? "
        "ORDER BY created_at DESC, id DESC LIMIT ?",
        (tenant_id, subscription_id, limit),
    )


async def get_delivery(
    db: Database | Transaction, tenant_id: str, subscription_id: str, delivery_id: str
) -> Row | None:
    return await db.fetch_one(
        f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries WHERE tenant_id = ? AND subscription_id = ? AND id = ?",
        (tenant_id, subscription_id, delivery_id),
    )


async def list_attempts(db: Database, delivery_ids: Sequence[str]) -> list[Row]:
    """The attempt log of the given deliveries (the caller has checked they are the tenant's)."""
    if not delivery_ids:
        return []
    return await db.fetch_all(
        "SELECT delivery_id, attempt, started_at, duration_ms, status_code, error FROM webhook_attempts "
        f"WHERE delivery_id IN ({_marks(len(delivery_ids))}) ORDER BY delivery_id, id",
        tuple(delivery_ids),
    )


async def restart_delivery(tx: Transaction, delivery_id: str, at: str) -> None:
    """A new attempt cycle for the same delivery: due now, with the full retry budget again."""
    await tx.execute(
        "UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ?, retry_base = attempts, "
        "delivered_at = NULL WHERE id = ?",
        (at, delivery_id),
    )


async def insert_direct_delivery(
    tx: Transaction,
    *,
    delivery_id: str,
    tenant_id: str,
    subscription_id: str,
    event_id: str,
    event: str,
    body: bytes,
    delivery_body: bytes | None,
    at: str,
) -> None:
    """An event meant for one subscription only (ping): stored already fanned out, plus its delivery
    (``delivery_body``: the chat message a chat subscription is sent instead of the event's body)."""
    await tx.execute(
        "INSERT INTO events (id, tenant_id, event, body, created_at, fanned_out) VALUES (?, ?, ?, ?, ?, 1)",
        (event_id, tenant_id, event, body, at),
    )
    await tx.execute(
        "INSERT INTO webhook_deliveries (id, tenant_id, subscription_id, event_id, event, status, attempts, "
        "next_attempt_at, created_at, body) VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)",
        (delivery_id, tenant_id, subscription_id, event_id, event, at, at, delivery_body),
    )


# --- dispatcher ------------------------------------------------------------------------------------


async def any_unfanned_event(db: Database) -> bool:
    return bool(await db.fetch_value("SELECT EXISTS (SELECT 1 FROM events WHERE fanned_out = 0)"))


async def unfanned_event_ids(tx: Transaction, limit: int) -> list[str]:
    rows = await tx.fetch_all(
        "SELECT id FROM events WHERE fanned_out = 0 ORDER BY created_at, id LIMIT ?", (limit,)
    )
    return [row["id"] for row in rows]


async def fan_out_targets(tx: Transaction, event_ids: Sequence[str]) -> list[Row]:
    """(event_id, tenant_id, event, subscription_id, format, filters) for each active subscription of
    each event's tenant that subscribes to that event name."""
    return await tx.fetch_all(
        "SELECT e.id AS event_id, e.tenant_id, e.event, s.id AS subscription_id, s.format, s.filters "
        "FROM events e JOIN webhook_subscriptions s ON s.tenant_id = e.tenant_id AND s.active = 1 "
        f"WHERE e.id IN ({_marks(len(event_ids))}) "
        "AND EXISTS (SELECT 1 FROM json_each(s.events) j WHERE j.value = e.event) "
        "ORDER BY e.created_at, e.id, s.created_at",
        tuple(event_ids),
    )


async def insert_deliveries(tx: Transaction, rows: list[dict[str, Any]]) -> None:
    """Rows of ``id, tenant_id, subscription_id, event_id, event, next_attempt_at, created_at, body``
    (body None: the event's own); a delivery that already exists for the (event, subscription) pair
    is kept, so fanning out twice is harmless."""
    await tx.executemany(
        "INSERT OR IGNORE INTO webhook_deliveries (id, tenant_id, subscription_id, event_id, event, status, "
        "attempts, next_attempt_at, created_at, body) VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)",
        [
            (r["id"], r["tenant_id"], r["subscription_id"], r["event_id"], r["event"], r["next_attempt_at"],
             r["created_at"], r["body"])
            for r in rows
        ],
    )


async def mark_fanned_out(tx: Transaction, event_ids: Sequence[str]) -> None:
    """One statement for the batch (an ingest with 10,000 failures queues 10,000 events)."""
    await tx.execute(f"UPDATE events SET fanned_out = 1 WHERE id IN ({_marks(len(event_ids))})", tuple(event_ids))


async def claim_due_deliveries(
    tx: Transaction, owner: str, now: str, lease_until: str, per_subscription: int, limit: int,
    skip: Sequence[str] = (),
) -> list[Row]:
    """Leases pending deliveries due at ``now`` to ``owner`` and returns them with what an attempt needs.

    The oldest ``per_subscription`` of each subscription but those in ``skip`` (the dispatcher has
    enough of theirs), so a subscription with a large backlog cannot crowd the others out of the
    batch; one short index range per subscription, so the cost does not grow with the backlog.
    A delivery leased to another dispatcher is skipped until its lease expires (that replica died);
    on PostgreSQL rows another transaction holds are skipped too, rather than waited for.
    """
    lock = " FOR UPDATE OF d SKIP LOCKED" if tx.dialect == "postgres" else ""
    rows = await tx.fetch_all(
        "SELECT d.id, d.subscription_id, d.event, d.attempts, d.retry_base, COALESCE(d.body, e.body) AS body "
        "FROM webhook_subscriptions s JOIN webhook_deliveries d ON d.id IN ("
        " SELECT x.id FROM webhook_deliveries x"
        " WHERE x.subscription_id = s.id AND x.status = 'pending' AND x.next_attempt_at <= ?"
        " AND (x.lease_until IS NULL OR x.lease_until <= ? OR x.lease_owner = ?)"
        " ORDER BY x.next_attempt_at LIMIT ?"
        ") JOIN events e ON e.id = d.event_id "
        f"WHERE s.id NOT IN (SELECT value FROM json_each(?)) ORDER BY d.next_attempt_at LIMIT ?{lock}",
        (now, now, owner, per_subscription, json.dumps(list(skip)), limit),
    )
    await renew_leases(tx, owner, [row["id"] for row in rows], lease_until)
    return rows


async def renew_leases(tx: Transaction, owner: str, delivery_ids: Sequence[str], lease_until: str) -> None:
    if delivery_ids:
        await tx.execute(
            "UPDATE webhook_deliveries SET lease_owner = ?, lease_until = ? "
            "WHERE id IN (SELECT value FROM json_each(?)) AND status = 'pending'",
            (owner, lease_until, json.dumps(list(delivery_ids))),
        )


async def release_leases(tx: Transaction, owner: str) -> int:
    """Hands back every delivery still leased to ``owner`` (a dispatcher shutting down)."""
    return await tx.execute(
        "UPDATE webhook_deliveries SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = ?", (owner,)
    )


async def subscriptions_for_send(db: Database, subscription_ids: Sequence[str]) -> list[Row]:
    """URL, secret and state of the given subscriptions, read fresh at each refill of the dispatcher."""
    if not subscription_ids:
        return []
    return await db.fetch_all(
        f"SELECT id, url, secret, active FROM webhook_subscriptions WHERE id IN ({_marks(len(subscription_ids))})",
        tuple(subscription_ids),
    )


async def next_due_at(db: Database, after: str) -> str | None:
    """When the next pending delivery that is not yet due becomes due (None: nothing scheduled)."""
    value = await db.fetch_value(
        "SELECT MIN(next_attempt_at) FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at > ?",
        (after,),
    )
    return None if value is None else str(value)


async def record_attempts(tx: Transaction, attempts: list[dict[str, Any]]) -> None:
    """Writes a batch of finished attempts and the resulting delivery states, two executemany calls.

    An attempt whose delivery was deleted meanwhile (subscription deleted) is dropped rather than
    failing the whole batch on the foreign key.
    """
    await tx.executemany(
        "INSERT INTO webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error) "
        "SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM webhook_deliveries WHERE id = ?)",
        [
            (a["delivery_id"], a["attempt"], a["started_at"], a["duration_ms"], a["status_code"], a["error"],
             a["delivery_id"])
            for a in attempts
        ],
    )
    await tx.executemany(
        "UPDATE webhook_deliveries SET status = ?, attempts = ?, last_status_code = ?, last_error = ?, "
        "next_attempt_at = ?, delivered_at = COALESCE(?, delivered_at), lease_owner = NULL, lease_until = NULL "
        "WHERE id = ?",
        [
            (a["status"], a["attempt"], a["status_code"], a["error"], a["next_attempt_at"], a["delivered_at"],
             a["delivery_id"])
            for a in attempts
        ],
    )


# --- what chat messages and filters need (read inside the fan-out transaction) --------------------


async def event_bodies(tx: Transaction, event_ids: Sequence[str]) -> dict[str, bytes]:
    if not event_ids:
        return {}
    rows = await tx.fetch_all(
        f"SELECT id, body FROM events WHERE id IN ({_marks(len(event_ids))})", tuple(event_ids)
    )
    return {row["id"]: bytes(row["body"]) for row in rows}


async def runs_brief(db: Database | Transaction, run_ids: Sequence[str]) -> dict[str, Row]:
    """id -> tenant_id, project_id, environment of the given runs (ids taken from the tenants' own events)."""
    if not run_ids:
        return {}
    rows = await db.fetch_all(
        f"SELECT id, tenant_id, project_id, environment FROM test_runs WHERE id IN ({_marks(len(run_ids))})",
        tuple(run_ids),
    )
    return {row["id"]: row for row in rows}


async def project_names(db: Database | Transaction, project_ids: Sequence[str]) -> dict[str, Row]:
    """id -> tenant_id, name."""
    if not project_ids:
        return {}
    rows = await db.fetch_all(
        f"SELECT id, tenant_id, name FROM projects WHERE id IN ({_marks(len(project_ids))})", tuple(project_ids)
    )
    return {row["id"]: row for row in rows}


async def failed_tests(db: Database | Transaction, tenant_id: str, run_id: str, limit: int) -> list[Row]:
    """Up to ``limit`` FAILED or BROKEN results of a run, linked ones first (each table read through
    its run index)."""
    return await db.fetch_all(
        "SELECT * FROM ("
        " SELECT test_case_id, test_case_code, title, status FROM test_results"
        " WHERE run_id = ? AND tenant_id = ? AND status IN ('FAILED', 'BROKEN') LIMIT ?"
        ") UNION ALL SELECT * FROM ("
        " SELECT NULL, NULL, title, status FROM unlinked_test_results"
        " WHERE run_id = ? AND tenant_id = ? AND status IN ('FAILED', 'BROKEN') LIMIT ?"
        ") LIMIT ?",
        (run_id, tenant_id, limit, run_id, tenant_id, limit, limit),
    )


async def latest_completed_run(db: Database, tenant_id: str) -> Row | None:
    """The tenant's most recently completed run with the fields of test_run.completed (for a preview)."""
    return await db.fetch_one(
        "SELECT id, name, project_id, environment, results_total, results_passed, results_failed, "
        "results_broken, results_skipped FROM test_runs WHERE tenant_id = ? AND status = 'COMPLETED' "
        "ORDER BY completed_at DESC, id DESC LIMIT 1",
        (tenant_id,),
    )
