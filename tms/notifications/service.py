"""Webhook subscriptions and their delivery log: the rules behind /api/webhooks and the web UI.

Every function takes ``(db, config, tenant_id, ...)`` so the JSON API and the HTML pages share
them. Deliveries themselves are made by ``tms.notifications.dispatcher``; these functions only write
rows and wake it (``OUTBOX_SIGNAL``, on every replica) after the commit.

Decisions where the spec is silent:

* ``ping`` is not an event name (``EVENT_NAMES``), so nobody can subscribe to it; a ping is an
  event row stored as already fanned out plus one delivery for the one subscription.
* Redelivery restarts the *same* delivery (same id, so ``X-Service-Delivery`` and ``webhook-id``
  stay the dedup key of that event for that subscription) with a fresh retry budget; its earlier
  attempts stay in the log and the attempt numbers go on counting.
* Deliveries of an inactive subscription are not sent: they end as failed with an explanatory
  error (redeliver them after re-activating). Ping and redeliver on an inactive subscription → 409.
* A URL whose host is a literal non-public IP is refused at save time unless private targets are
  allowed; host names are resolved and checked when each delivery is sent.
* ``format`` slack / teams / google_chat posts the chat service's message instead of the envelope
  (``tms.notifications.chat``), a ping included; ``filters`` narrow what is sent (``tms.notifications.fanout``).
  Filters that narrow nothing are stored as ``{}`` so such subscriptions stay on the cheap path.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from tms.config import Config
from tms.db import OUTBOX_SIGNAL, Database, Row
from tms.errors import Conflict, InvalidInput, NotFound
from tms.ids import new_id, now_iso
from tms.notifications import chat, store
from tms.notifications.events import EVENT_NAMES, envelope
from tms.notifications.models import (
    FORMATS,
    Attempt,
    Delivery,
    Filters,
    Preview,
    Subscription,
    SubscriptionCreate,
    SubscriptionUpdate,
)
from tms.notifications.safety import literal_address_problem, url_problem
from tms.notifications.signing import STANDARD_PREFIX, decode_standard_secret
from tms.runs.service import completed_event
from tms.team.audit import service as audit

PING_EVENT = "ping"
DELIVERY_LIST_MAX = 500


def subscription_from_row(row: Row) -> Subscription:
    return Subscription(
        id=row["id"],
        url=row["url"],
        events=json.loads(row["events"]),
        active=bool(row["active"]),
        has_secret=bool(row["has_secret"]),
        format=row["format"],
        filters=msgspec.convert(json.loads(row["filters"] or "{}"), Filters),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def _check_url(config: Config, url: str) -> str:
    url = url.strip()
    problem = url_problem(url, https_only=config.production)
    if problem is None and not config.get("webhooks.allow_private_targets"):
        problem = literal_address_problem(url)
        if problem:
            problem = f"url refused: {problem} (webhooks.allow_private_targets is false)"
    if problem:
        raise InvalidInput(problem, field="url")
    return url


def _check_events(events: list[str]) -> list[str]:
    if not events:
        raise InvalidInput("events must name at least one event", field="events")
    unknown = [name for name in events if name not in EVENT_NAMES]
    if unknown:
        raise InvalidInput(
            f"unknown event {unknown[0]!r}; known events: {', '.join(EVENT_NAMES)}", field="events"
        )
    return list(dict.fromkeys(events))


def _filters_json(filters: Filters) -> str:
    """Clean environment names, duplicates dropped; ``{}`` when nothing is narrowed."""
    environments = [name.strip() for name in filters.environments]
    if any(not name for name in environments):
        raise InvalidInput("environments must not hold blank names", field="filters.environments")
    filters = Filters(filters.only_failures, filters.only_failed_runs, list(dict.fromkeys(environments)))
    return msgspec.json.encode(filters).decode() if filters.narrows() else "{}"


def _check_secret(secret: str | None) -> str | None:
    if secret is not None and secret.startswith(STANDARD_PREFIX):
        try:
            decode_standard_secret(secret)
        except ValueError as exc:
            raise InvalidInput(str(exc), field="secret") from None
    return secret


async def _get_row(db: Database, tenant_id: str, subscription_id: str) -> Row:
    row = await store.get_subscription(db, tenant_id, subscription_id)
    if row is None:
        raise NotFound(f"webhook subscription {subscription_id} not found")
    return row


async def list_subscriptions(db: Database, config: Config, tenant_id: str) -> list[Subscription]:
    return [subscription_from_row(row) for row in await store.list_subscriptions(db, tenant_id)]


async def get_subscription(db: Database, config: Config, tenant_id: str, subscription_id: str) -> Subscription:
    return subscription_from_row(await _get_row(db, tenant_id, subscription_id))


async def create_subscription(
    db: Database, config: Config, tenant_id: str, body: SubscriptionCreate
) -> Subscription:
    url = _check_url(config, body.url)
    events = _check_events(body.events)
    secret = _check_secret(body.secret)
    subscription_id = new_id()
    async with db.transaction() as tx:
        await store.insert_subscription(
            tx,
            subscription_id=subscription_id,
            tenant_id=tenant_id,
            url=url,
            events_json=json.dumps(events),
            secret=secret,
            active=body.active,
            chat_format=body.format,
            filters_json=_filters_json(body.filters),
            created_at=now_iso(),
        )
        row = await store.get_subscription(tx, tenant_id, subscription_id)
        await audit.record(tx, tenant_id, "webhook.created", "webhook", subscription_id,
                           {"url": url, "events": events, "active": body.active, "has_secret": bool(secret)})
    assert row is not None
    return subscription_from_row(row)


async def update_subscription(
    db: Database, config: Config, tenant_id: str, subscription_id: str, body: SubscriptionUpdate
) -> Subscription:
    changes: dict[str, object] = {}
    if body.url is not msgspec.UNSET:
        changes["url"] = _check_url(config, body.url)
    if body.events is not msgspec.UNSET:
        changes["events"] = json.dumps(_check_events(body.events))
    if body.secret is not msgspec.UNSET:
        changes["secret"] = _check_secret(body.secret)
    if body.active is not msgspec.UNSET:
        changes["active"] = int(body.active)
    if body.format is not msgspec.UNSET:
        changes["format"] = body.format
    if body.filters is not msgspec.UNSET:
        changes["filters"] = _filters_json(body.filters)
    async with db.transaction() as tx:
        before = await store.get_subscription(tx, tenant_id, subscription_id)
        if not await store.update_subscription(tx, tenant_id, subscription_id, changes, now_iso()):
            raise NotFound(f"webhook subscription {subscription_id} not found")
        # the dispatcher caches URL, secret and state of subscriptions with queued work: refresh it
        await tx.signal(OUTBOX_SIGNAL)
        row = await store.get_subscription(tx, tenant_id, subscription_id)
        assert before is not None and row is not None
        diff = audit.changes_between(before, row, [f for f in ("url", "events", "active") if f in changes])
        if "secret" in changes:
            diff["secret"] = ["(hidden)", "(changed)" if changes["secret"] else None]
        if diff:
            await audit.record(tx, tenant_id, "webhook.updated", "webhook", subscription_id, diff)
    assert row is not None
    return subscription_from_row(row)


async def delete_subscription(db: Database, config: Config, tenant_id: str, subscription_id: str) -> None:
    async with db.transaction() as tx:
        if not await store.delete_subscription(tx, tenant_id, subscription_id):
            raise NotFound(f"webhook subscription {subscription_id} not found")
        await tx.signal(OUTBOX_SIGNAL)
        await audit.record(tx, tenant_id, "webhook.deleted", "webhook", subscription_id)


def _delivery(row: Row, attempts: list[Attempt]) -> Delivery:
    return Delivery(
        id=row["id"],
        event=row["event"],
        status=row["status"],
        attempts=row["attempts"],
        last_status_code=row["last_status_code"],
        last_error=row["last_error"],
        next_attempt_at=row["next_attempt_at"],
        created_at=row["created_at"],
        delivered_at=row["delivered_at"],
        attempt_log=attempts,
    )


async def _with_attempts(db: Database, rows: list[Row]) -> list[Delivery]:
    log: dict[str, list[Attempt]] = {row["id"]: [] for row in rows}
    for attempt in await store.list_attempts(db, list(log)):
        log[attempt.pop("delivery_id")].append(msgspec.convert(attempt, Attempt))
    return [_delivery(row, log[row["id"]]) for row in rows]


async def list_deliveries(
    db: Database, config: Config, tenant_id: str, subscription_id: str, limit: int = 100
) -> list[Delivery]:
    """The newest deliveries of one subscription first, each with its attempts."""
    await _get_row(db, tenant_id, subscription_id)
    limit = max(1, min(limit, DELIVERY_LIST_MAX))
    return await _with_attempts(db, await store.list_deliveries(db, tenant_id, subscription_id, limit))


async def get_delivery(
    db: Database, config: Config, tenant_id: str, subscription_id: str, delivery_id: str
) -> Delivery:
    row = await store.get_delivery(db, tenant_id, subscription_id, delivery_id)
    if row is None:
        raise NotFound(f"delivery {delivery_id} not found")
    return (await _with_attempts(db, [row]))[0]


async def redeliver(
    db: Database, config: Config, tenant_id: str, subscription_id: str, delivery_id: str
) -> Delivery:
    """Sends the same delivery again, now, with a fresh retry budget (see the module docstring)."""
    async with db.transaction() as tx:
        subscription = await store.get_subscription(tx, tenant_id, subscription_id)
        if subscription is None:
            raise NotFound(f"webhook subscription {subscription_id} not found")
        if await store.get_delivery(tx, tenant_id, subscription_id, delivery_id) is None:
            raise NotFound(f"delivery {delivery_id} not found")
        if not subscription["active"]:
            raise Conflict("the subscription is inactive; activate it before redelivering")
        await store.restart_delivery(tx, delivery_id, now_iso())
        await tx.signal(OUTBOX_SIGNAL)
    return await get_delivery(db, config, tenant_id, subscription_id, delivery_id)


async def ping(db: Database, config: Config, tenant_id: str, subscription_id: str) -> Delivery:
    """A ``ping`` event for this one subscription, to test the receiver and its signature check."""
    delivery_id, event_id, at = new_id(), new_id(), now_iso()
    async with db.transaction() as tx:
        subscription = await store.get_subscription(tx, tenant_id, subscription_id)
        if subscription is None:
            raise NotFound(f"webhook subscription {subscription_id} not found")
        if not subscription["active"]:
            raise Conflict("the subscription is inactive; activate it before sending a ping")
        data = {"subscription_id": subscription_id, "message": "Test delivery from TMS: your endpoint is reachable."}
        body = envelope(PING_EVENT, tenant_id, data, at)
        chat_format = subscription["format"]
        delivery_body = (
            chat.render(chat_format, PING_EVENT, data, chat.Context(base_url=config.base_url))
            if chat_format in chat.CHAT_FORMATS else None
        )
        await store.insert_direct_delivery(
            tx,
            delivery_id=delivery_id,
            tenant_id=tenant_id,
            subscription_id=subscription_id,
            event_id=event_id,
            event=PING_EVENT,
            body=body,
            delivery_body=delivery_body,
            at=at,
        )
        await tx.signal(OUTBOX_SIGNAL)
    return await get_delivery(db, config, tenant_id, subscription_id, delivery_id)


SAMPLE_RUN: dict[str, Any] = {
    "run_id": "sample-run", "run_name": "Nightly regression", "project_id": "", "environment": "staging",
    "total": 120, "passed": 114, "failed": 4, "broken": 1, "skipped": 1,
}
SAMPLE_FAILED = [
    chat.FailedTest("sample-1", "TC-12", "Checkout keeps the cart after login", "FAILED"),
    chat.FailedTest("sample-2", "TC-31", "Refund of a partial order", "FAILED"),
    chat.FailedTest(None, None, "test_export_csv[unicode-ü]", "FAILED"),
    chat.FailedTest("sample-3", "TC-40", "Search by ticket key", "FAILED"),
    chat.FailedTest("sample-4", "TC-41", "Invoice PDF renders", "BROKEN"),
]


async def _preview_source(db: Database, tenant_id: str) -> tuple[dict[str, Any], list[chat.FailedTest], str | None]:
    """test_run.completed data of the tenant's latest completed run, its failed tests and project name;
    a sample run when there is none (empty ``run_id`` marks it)."""
    run = await store.latest_completed_run(db, tenant_id)
    if run is None:
        return dict(SAMPLE_RUN), SAMPLE_FAILED, "Web shop"
    failed = chat.failed_tests_of(await store.failed_tests(db, tenant_id, run["id"], chat.FAILED_LIST_MAX))
    project = (await store.project_names(db, [run["project_id"]])).get(run["project_id"])
    return completed_event(run), failed, project["name"] if project is not None else None


def _render_preview(
    config: Config, tenant_id: str, chat_format: str, source: tuple[dict[str, Any], list[chat.FailedTest], str | None]
) -> Preview:
    data, failed, project_name = source
    if chat_format == "standard":
        text = envelope("test_run.completed", tenant_id, data).decode()
    else:
        context = chat.Context(base_url=config.base_url, project_name=project_name, failed_tests=failed)
        text = chat.render(chat_format, "test_run.completed", data, context).decode()
    pretty = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    return Preview(format=chat_format, event="test_run.completed", sample=data["run_id"] == SAMPLE_RUN["run_id"],
                   body=pretty)


async def preview(db: Database, config: Config, tenant_id: str, chat_format: str) -> Preview:
    """What a subscription of ``chat_format`` posts when a run completes: for the tenant's latest
    completed run when there is one, else for a sample run (``sample`` true)."""
    if chat_format not in FORMATS:
        raise InvalidInput(f"format must be one of {', '.join(FORMATS)}", field="format")
    return _render_preview(config, tenant_id, chat_format, await _preview_source(db, tenant_id))


async def previews(db: Database, config: Config, tenant_id: str) -> list[Preview]:
    """The preview of every format at once (the web form shows the chosen one)."""
    source = await _preview_source(db, tenant_id)
    return [_render_preview(config, tenant_id, chat_format, source) for chat_format in FORMATS]
