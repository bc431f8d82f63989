"""The outbox drain: fans events out to subscriptions and delivers them, with retries.

All state that matters lives in the database, so a crash loses nothing:

* an event row with ``fanned_out = 0`` has not been turned into deliveries yet; fan-out inserts one
  delivery per matching active subscription (``INSERT OR IGNORE`` on ``(event_id,
  subscription_id)``) and marks the event in the same transaction, so it happens exactly once;
* a delivery with ``status = 'pending'`` is sent when ``next_attempt_at`` has passed. Its row is
  updated only after an attempt has finished, so a delivery in flight during a crash is simply due
  again at the next start: at-least-once, and ``X-Service-Delivery`` lets receivers drop the repeat.

Replicas (PostgreSQL): a dispatcher leases the deliveries it loads (``lease_owner``, ``lease_until``)
in the same short transaction, renews the leases of what it still holds at each refill, and hands
them back when it stops; another replica skips leased deliveries until the lease expires, so none is
sent twice while every replica is healthy, and a killed replica's work is taken over once its lease
runs out (``LEASE_MIN_SECONDS`` or three attempt timeouts). Events reach every replica's dispatcher
through ``db.outbox_wakeup`` (a database signal), and fan-out is one write transaction at a time, so
an event is fanned out exactly once.

In memory there is only a buffer of due deliveries (loaded in batches with their bodies, plus the
URL, secret and state of their subscriptions, refreshed whenever a subscription changes) and the
set of ids being worked on, so one is never sent twice at once by this process. Network I/O never
happens inside a transaction: an attempt sends, and its outcome is written afterwards, batched
with the outcomes that finished meanwhile (one short transaction for many attempts keeps the
writer free for ingest while a backlog drains).

Waking: a commit that wrote events sets ``db.outbox_wakeup``; otherwise the loop sleeps exactly
until the next retry is due. ``IDLE_RESCAN_SECONDS`` bounds that sleep because events written by
another process (``tms admin``, scripts on the same file) cannot set our in-process event; the
rescan is one indexed read.

Concurrency is bounded twice: ``max_in_flight`` attempts in all, and ``per_subscription`` for any
one subscription, so a receiver that hangs until the timeout can occupy only its own few slots
while the others keep flowing. While the server answers API requests, attempts also start at no
more than ``busy_rate`` per second (``tms.notifications.gauge``), so a draining backlog does not slow
the API down.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import secrets
import socket
import time
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from tms.config import Config
from tms.db import Database
from tms.ids import now_iso
from tms.notifications import delivery, fanout, store
from tms.notifications.delivery import iso_at
from tms.notifications.gauge import RequestGauge
from tms.notifications.safety import GuardedTransport, make_ssl_context, make_transport

log = logging.getLogger(__name__)

IDLE_RESCAN_SECONDS = 2.0
# A lease outlives a few attempts' timeouts and is renewed at each refill (at most IDLE_RESCAN_SECONDS
# apart while work is held), so only a dead replica loses its leases: after LEASE_MIN_SECONDS or more.
LEASE_MIN_SECONDS = 10.0
FANOUT_BATCH = 100  # events per fan-out transaction: short holds of the write lock
BUFFER_PER_SUBSCRIPTION = 64
BUFFER_LIMIT = 2048
SHUTDOWN_GRACE_SECONDS = 5.0
BUSY_BURST = 4.0
CLIENT_IDLE_SECONDS = 300.0
BUSY_WRITE_INTERVAL = 0.1


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1].lower()}"


def _epoch(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


class Dispatcher:
    def __init__(
        self,
        db: Database,
        config: Config,
        *,
        max_in_flight: int = 16,
        per_subscription: int = 4,
        gauge: RequestGauge | None = None,
        busy_rate: float = 25.0,
    ) -> None:
        self._db = db
        self._owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._timeout = config.get("webhooks.timeout_seconds")
        self._lease_seconds = max(LEASE_MIN_SECONDS, 3 * self._timeout + IDLE_RESCAN_SECONDS)
        self._backoff_seconds = config.get("webhooks.backoff_seconds")
        self._backoff_factor = config.get("webhooks.backoff_factor")
        self._max_retries = config.get("webhooks.max_retries")
        self._allow_private = config.get("webhooks.allow_private_targets")
        self._https_only = config.production
        self._base_url = config.base_url  # links in chat messages point into the web UI
        self._max_in_flight = max_in_flight
        self._per_subscription = per_subscription
        # while the server answers requests, at most busy_rate attempts start per second (tms.notifications.gauge)
        self._gauge = gauge
        self._busy_rate = busy_rate
        self._tokens = BUSY_BURST
        self._tokens_at = time.monotonic()
        self._throttled = False

        self._buffer: dict[str, collections.deque[dict[str, Any]]] = {}  # subscription id -> due deliveries
        self._known: set[str] = set()  # buffered, being sent, or waiting for their outcome to be written
        self._done_since_refill: set[str] = set()
        self._maybe_more: set[str] = set()  # subscriptions that may have more due deliveries than loaded
        self._subscriptions: dict[str, dict[str, Any]] = {}  # id -> url, secret, active as of the last refill
        self._sending: collections.Counter[str] = collections.Counter()  # subscription id -> attempts in flight
        self._attempts: set[asyncio.Task[None]] = set()
        self._outcomes: list[dict[str, Any]] = []
        self._writer: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._dirty = True  # the database may hold work we have not looked at
        self._next_due: float | None = None
        self._stopping = False
        # one transport (connection pool) per origin: httpcore's pool does work per pooled connection on
        # every request, so small pools cost less CPU per delivery than one shared pool of every receiver
        self._transports: dict[str, GuardedTransport] = {}
        self._ssl_context = make_ssl_context()
        self._client_use: dict[str, list[float]] = {}  # origin -> [attempts in flight, last used (monotonic)]
        self._loop: asyncio.Task[None] | None = None
        self._forwarder: asyncio.Task[None] | None = None

    # --- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> None:
        self._loop = asyncio.create_task(self._run(), name="webhook dispatcher")
        self._forwarder = asyncio.create_task(self._forward_wakeups(), name="webhook wakeups")

    async def stop(self, grace: float = SHUTDOWN_GRACE_SECONDS) -> None:
        """Takes no new work, gives attempts in flight ``grace`` seconds, then writes what finished.

        Attempts cut off here stay pending in the database and are sent again at the next start.
        """
        self._stopping = True
        self._wake.set()
        for task in (self._loop, self._forwarder):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self._attempts:
            _, unfinished = await asyncio.wait(set(self._attempts), timeout=grace)
            for task in unfinished:
                task.cancel()
            await asyncio.gather(*unfinished, return_exceptions=True)
        if self._writer is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._writer), timeout=grace)
        try:  # what this process loaded but did not send goes back to the other replicas at once
            async with self._db.transaction() as tx:
                await store.release_leases(tx, self._owner)
        except Exception:
            log.warning("could not release webhook delivery leases; they expire in %.0f s", self._lease_seconds)
        await asyncio.gather(*(t.aclose() for t in self._transports.values()), return_exceptions=True)

    async def _forward_wakeups(self) -> None:
        while True:
            await self._db.outbox_wakeup.wait()
            self._db.outbox_wakeup.clear()
            self._dirty = True
            self._wake.set()

    # --- the loop ---------------------------------------------------------------------------------

    async def _run(self) -> None:
        while not self._stopping:
            self._wake.clear()
            try:
                if self._dirty:
                    self._dirty = False
                    await self._fan_out()
                    await self._refill()
                    next_due = await store.next_due_at(self._db, now_iso())
                    self._next_due = None if next_due is None else _epoch(next_due)
                self._dispatch()
            except Exception:
                log.exception("webhook dispatcher step failed; retrying shortly")
                self._dirty = True
                await asyncio.sleep(1)
                continue
            if self._dirty:
                continue  # a subscription's buffer ran dry: look for more of its work at once
            delay = IDLE_RESCAN_SECONDS
            if self._next_due is not None:
                # +1 ms: timestamps have millisecond precision, never wake just before the due time
                delay = min(delay, max(0.0, self._next_due - time.time() + 0.001))
            # throttled: come back for the next token, but that alone is no reason to query the database
            token_wait = 1 / self._busy_rate if self._throttled else None
            try:
                async with asyncio.timeout(delay if token_wait is None else min(delay, token_wait)):
                    await self._wake.wait()
            except TimeoutError:
                if token_wait is None or token_wait >= delay:
                    self._dirty = True

    async def _fan_out(self) -> None:
        """Deliveries for new events, in short batches; events nobody is sent are just marked."""
        while await store.any_unfanned_event(self._db):
            async with self._db.transaction() as tx:
                event_ids = await store.unfanned_event_ids(tx, FANOUT_BATCH)
                if not event_ids:
                    return
                # filters and chat formats decide per subscription (tms.notifications.fanout)
                await fanout.fan_out(tx, event_ids, self._base_url)

    async def _refill(self) -> None:
        """Loads due deliveries into the buffer, and fresh URL, secret and state of their subscriptions."""
        room = BUFFER_LIMIT - sum(len(queue) for queue in self._buffer.values())
        # a delivery whose outcome is written while the query below runs must not be loaded again
        self._done_since_refill.clear()
        if room > 0:
            quota = BUFFER_PER_SUBSCRIPTION + self._per_subscription
            # subscriptions with half a buffer left need nothing now; skipping them keeps a refill (one per
            # commit that wrote events, e.g. each ingest) cheap while a large backlog drains
            stocked = [sub for sub, queue in self._buffer.items() if len(queue) >= BUFFER_PER_SUBSCRIPTION // 2]
            now = time.time()
            async with self._db.transaction() as tx:
                rows = await store.claim_due_deliveries(
                    tx, self._owner, iso_at(now), iso_at(now + self._lease_seconds), quota, room + len(self._known),
                    stocked,
                )
                await store.renew_leases(tx, self._owner, sorted(self._known), iso_at(now + self._lease_seconds))
            loaded: collections.Counter[str] = collections.Counter()
            for row in rows:
                loaded[row["subscription_id"]] += 1
                if row["id"] not in self._known and row["id"] not in self._done_since_refill:
                    self._known.add(row["id"])
                    self._buffer.setdefault(row["subscription_id"], collections.deque()).append(row)
            # only a subscription that filled its quota may have more due work waiting in the database
            self._maybe_more = {sub for sub, count in loaded.items() if count >= quota} | set(stocked)
        self._prune_transports()
        wanted = set(self._buffer) | set(self._sending)
        rows = await store.subscriptions_for_send(self._db, sorted(wanted))
        self._subscriptions = {row["id"]: row for row in rows}
        for gone in set(self._buffer) - set(self._subscriptions):
            # deleted meanwhile: its deliveries went with it (ON DELETE CASCADE)
            for row in self._buffer.pop(gone):
                self._known.discard(row["id"])

    def _may_start(self) -> bool:
        """A token bucket that only applies while requests are in progress: a rate, not a number of
        slots, so attempts hanging on a slow receiver never hold back the others."""
        if self._gauge is None or not self._gauge.busy():
            return True
        now = time.monotonic()
        self._tokens = min(BUSY_BURST, self._tokens + (now - self._tokens_at) * self._busy_rate)
        self._tokens_at = now
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        self._throttled = True
        return False

    def _dispatch(self) -> None:
        """Starts attempts from the buffer, one subscription after the other, within both limits."""
        self._throttled = False
        while sum(self._sending.values()) < self._max_in_flight and not self._stopping:
            started = False
            for subscription_id in list(self._buffer):
                if sum(self._sending.values()) >= self._max_in_flight:
                    break
                if self._sending[subscription_id] >= self._per_subscription:
                    continue
                if not self._may_start():
                    return
                queue = self._buffer[subscription_id]
                row = queue.popleft()
                if not queue:
                    del self._buffer[subscription_id]
                    if subscription_id in self._maybe_more:
                        self._dirty = True
                self._sending[subscription_id] += 1
                task = asyncio.create_task(self._attempt(row, self._subscriptions.get(subscription_id)))
                self._attempts.add(task)
                task.add_done_callback(self._attempts.discard)
                started = True
            if not started:
                return

    # --- one attempt ------------------------------------------------------------------------------

    async def _attempt(self, row: dict[str, Any], subscription: dict[str, Any] | None) -> None:
        delivery_id, subscription_id = row["id"], row["subscription_id"]
        outcome_row: dict[str, Any] | None = None
        try:
            if subscription is not None:
                started_at = now_iso()
                if not subscription["active"]:
                    outcome = delivery.Outcome(False, None, "not sent: the subscription is inactive", 0)
                else:
                    target = delivery.Target(
                        delivery_id, row["event"], subscription["url"], subscription["secret"], row["body"]
                    )
                    origin = _origin(target.url)
                    use = self._client_use.setdefault(origin, [0, 0.0])
                    use[0] += 1
                    try:
                        outcome = await delivery.attempt(
                            self._transport_for(origin), target, timeout=self._timeout, https_only=self._https_only
                        )
                    finally:
                        use[0] -= 1
                        use[1] = time.monotonic()
                outcome_row = delivery.outcome_row(
                    row, bool(subscription["active"]), started_at, outcome, max_retries=self._max_retries,
                    backoff_seconds=self._backoff_seconds, backoff_factor=self._backoff_factor)
        except Exception:
            log.exception("webhook delivery %s: attempt failed unexpectedly", delivery_id)
        finally:
            self._sending[subscription_id] -= 1
            if self._sending[subscription_id] <= 0:
                del self._sending[subscription_id]
            self._wake.set()
        if outcome_row is None:
            self._known.discard(delivery_id)
            return
        self._outcomes.append(outcome_row)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_outcomes())

    def _transport_for(self, origin: str) -> GuardedTransport:
        transport = self._transports.get(origin)
        if transport is None:
            transport = make_transport(
                allow_private=self._allow_private, max_connections=self._max_in_flight, ssl_context=self._ssl_context
            )
            self._transports[origin] = transport
        return transport

    def _prune_transports(self) -> None:
        """Closes the pools of origins unused for a while (a subscription moved or was deleted)."""
        now = time.monotonic()
        for origin, (in_flight, last_used) in list(self._client_use.items()):
            if not in_flight and now - last_used > CLIENT_IDLE_SECONDS:
                del self._client_use[origin]
                transport = self._transports.pop(origin, None)
                if transport is not None:
                    task = asyncio.create_task(transport.aclose())
                    self._attempts.add(task)
                    task.add_done_callback(self._attempts.discard)

    async def _write_outcomes(self) -> None:
        """Writes finished attempts in batches; only then may their deliveries be picked up again."""
        while self._outcomes:
            if self._gauge is not None and self._gauge.busy() and not self._stopping:
                # fewer, larger writes while requests are answered: each one holds the write lock they need
                await asyncio.sleep(BUSY_WRITE_INTERVAL)
            batch, self._outcomes = self._outcomes, []
            try:
                async with self._db.transaction() as tx:
                    await store.record_attempts(tx, batch)
            except Exception:
                log.exception("could not record %d webhook attempts; retrying", len(batch))
                self._outcomes[:0] = batch
                await asyncio.sleep(1)
                continue
            for outcome in batch:
                self._known.discard(outcome["delivery_id"])
                self._done_since_refill.add(outcome["delivery_id"])
                if outcome["next_attempt_at"] is not None:
                    due = _epoch(outcome["next_attempt_at"])
                    self._next_due = due if self._next_due is None else min(self._next_due, due)
            self._wake.set()
