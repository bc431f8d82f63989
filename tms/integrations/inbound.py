"""A tracker's call in (issue 13's bug loop): verified with the integration's secret, parsed by its
adapter, recorded once per delivery, and a resolved bug flags the cases linked to it for retest."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tms.db import Database, Transaction
from tms.errors import DomainError
from tms.failures.known_issues import service as known_issues
from tms.failures.retest import service as retest
from tms.ids import iso_days_ago, now_iso
from tms.integrations import TrackerEvent, UnreadablePayload, trackers
from tms.integrations import store as integration_store
from tms.notifications.events import emit_many

log = logging.getLogger(__name__)

DELIVERY_RETENTION_DAYS = 30


class NotAuthenticated(DomainError):
    """An inbound call we cannot trust: unknown integration, or a missing or wrong signature."""

    status_code = 401
    title = "Unauthorized"


@dataclass(frozen=True, slots=True)
class Receipt:
    """The answer to a tracker: what we did with its call."""

    status_code: int
    outcome: str  # resolved | ignored | ping | duplicate
    detail: str
    bug_key: str | None = None
    cases: int = 0
    newly_flagged: int = 0

    def body(self) -> dict[str, Any]:
        return {"data": {"outcome": self.outcome, "detail": self.detail, "bug_key": self.bug_key,
                         "cases": self.cases, "newly_flagged": self.newly_flagged}}


def link_keys(integration: Mapping[str, Any], event: TrackerEvent) -> tuple[list[str], list[str]]:
    """(full keys, short keys) under which cases and results may name this bug.

    Full keys are the tracker's key in the spellings people write: as the tracker sends it, all lower
    or all upper case (GitHub and GitLab paths ignore case; Jira keys are upper case but typed either
    way), and the repository as configured. A short '#12' is this bug only when the issue lives in
    the repository configured on the integration.
    """
    key = event.bug_key or ""
    full = {key, key.lower(), key.upper()}
    if integration["kind"] == "JIRA":
        return sorted(full), []
    configured = integration.get("repository")
    short: list[str] = []
    if configured and event.repository and configured.lower() == event.repository.lower():
        full.add(f"{configured}#{event.number}")
        short.append(f"#{event.number}")
    return sorted(full), short


async def resolve_bug(
    tx: Transaction, db: Database, integration: Mapping[str, Any], event: TrackerEvent
) -> tuple[int, int]:
    """The bug loop for one resolution: bug.resolved per linked case, flags, retest.required per
    newly flagged case. Returns (linked cases, newly flagged)."""
    tenant_id = integration["tenant_id"]
    full, short = link_keys(integration, event)
    # known issues naming this bug close, and the tests failing with their fingerprints join the retest queue
    await known_issues.close_for_bug(tx, db, tenant_id, full, event.bug_key)
    cases = await retest.cases_linked_to_bug(
        tx, tenant_id, full, short, short_key_sources=(integration["kind"], "OTHER")
    )
    if not cases:
        return 0, 0
    at = now_iso()
    resolved_at = event.resolved_at or at
    await emit_many(
        tx, db, tenant_id, "bug.resolved",
        [{"bug_ticket_key": event.bug_key, "test_case_code": row["code"], "test_case_id": row["id"],
          "resolved_at": resolved_at} for row in cases],
    )
    newly = await retest.flag_for_retest(
        tx, db, tenant_id, [row["id"] for row in cases], f"bug {event.bug_key} resolved", event.bug_key, at
    )
    return len(cases), len(newly)


def _parse(kind: str, headers: Mapping[str, str], body: bytes) -> TrackerEvent:
    """The adapter's reading of the call; any shape it cannot read is an ignored event, never a 500."""
    adapter = trackers()[kind]
    try:
        event: TrackerEvent = adapter.parse(headers, body)
    except UnreadablePayload as exc:
        return TrackerEvent("unreadable", "ignored", detail=f"unreadable payload: {exc}")
    except Exception:  # a tracker shape nobody documented must not take the endpoint down
        log.exception("could not parse a %s webhook", kind)
        return TrackerEvent("unreadable", "ignored", detail="payload not understood")
    return event


async def receive(
    db: Database, integration_id: str, headers: Mapping[str, str], query: Mapping[str, str], body: bytes
) -> Receipt:
    """Handles one inbound tracker call. Raises NotAuthenticated (401) before recording anything when
    the integration is unknown or the call is not signed with its secret."""
    integration = await integration_store.find_for_inbound(db, integration_id)
    if integration is None or not trackers()[integration["kind"]].verify(
        integration["secret"], headers, query, body
    ):
        raise NotAuthenticated("Unknown integration, or the call is not signed with its secret.")
    event = _parse(integration["kind"], headers, body)
    payload_sha256 = hashlib.sha256(body).hexdigest()
    delivery_key = f"id:{event.delivery_id}" if event.delivery_id else f"sha256:{payload_sha256}"
    if event.outcome == "ignored":
        log.info("integration %s: ignored %s: %s", integration_id, event.event, event.detail)
    async with db.transaction() as tx:
        if await integration_store.delivery_seen(tx, integration_id, delivery_key, payload_sha256):
            return Receipt(200, "duplicate", "this delivery was already processed", event.bug_key)
        cases = newly = 0
        if event.outcome == "resolved":
            cases, newly = await resolve_bug(tx, db, integration, event)
        received_at = now_iso()
        await integration_store.insert_delivery(
            tx, integration_id=integration_id, tenant_id=integration["tenant_id"], delivery_key=delivery_key,
            payload_sha256=payload_sha256, event=event.event, outcome=event.outcome, bug_key=event.bug_key,
            cases_linked=cases, detail=event.detail[:500], received_at=received_at,
        )
        await integration_store.prune_deliveries(tx, integration_id, iso_days_ago(DELIVERY_RETENTION_DAYS))
    if event.outcome == "ignored":
        return Receipt(202, "ignored", event.detail, event.bug_key)
    if event.outcome == "ping":
        return Receipt(200, "ping", event.detail)
    detail = f"{event.detail}; {cases} linked case(s), {newly} newly flagged for retest"
    return Receipt(200, "resolved", detail, event.bug_key, cases, newly)
