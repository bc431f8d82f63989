"""Events into the outbox, in the caller's transaction, so a change and its event commit together.

Adding an event is one line in ``EVENT_NAMES``; the dispatcher (tms.notifications.dispatcher) delivers whatever
lands in the outbox to the tenant's subscriptions for that event name.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tms.db import OUTBOX_SIGNAL, Database, Transaction
from tms.ids import new_ids, now_iso
from tms.notifications import outbox

EVENT_NAMES: tuple[str, ...] = (
    "test_run.completed",
    "test_run_result.failed",
    "bug.resolved",
    "retest.required",
    "test_case.flaky_changed",
)

_encoder = msgspec.json.Encoder()


def envelope(event: str, tenant_id: str, data: dict[str, Any], timestamp: str | None = None) -> bytes:
    """The exact bytes delivered (and signed): ``{event, timestamp, tenant_id, data}``."""
    return _encoder.encode(
        {"event": event, "timestamp": timestamp or now_iso(), "tenant_id": tenant_id, "data": data}
    )


async def emit(tx: Transaction, db: Database, tenant_id: str, event: str, data: dict[str, Any]) -> str:
    """Records one event in the outbox and wakes the dispatcher once the transaction commits."""
    return (await emit_many(tx, db, tenant_id, event, [data]))[0]


async def emit_many(
    tx: Transaction, db: Database, tenant_id: str, event: str, items: list[dict[str, Any]]
) -> list[str]:
    if event not in EVENT_NAMES:
        raise ValueError(f"unknown event {event}")
    if not items:
        return []
    at = now_iso()
    # ids minted in bulk: an ingest with thousands of FAILED results emits thousands of events at once
    rows = [
        (event_id, tenant_id, event, envelope(event, tenant_id, data, at), at)
        for event_id, data in zip(new_ids(len(items)), items, strict=True)
    ]
    await outbox.insert_events(tx, rows)
    await tx.signal(OUTBOX_SIGNAL)  # every replica's dispatcher, once the events are committed
    return [row[0] for row in rows]
