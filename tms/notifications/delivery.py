"""One delivery attempt: headers, signatures, the POST, and what came of it. No database here."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx

from tms import __version__
from tms.ids import iso, now_iso
from tms.notifications import signing
from tms.notifications.safety import TargetRefused, url_problem
from tms.operations.metrics import DELIVERIES

log = logging.getLogger(__name__)

USER_AGENT = f"TMS-Webhooks/{__version__}"
ERROR_MAX = 500
RESPONSE_READ_MAX = 64 * 1024


@dataclass(frozen=True, slots=True)
class Target:
    delivery_id: str
    event: str
    url: str
    secret: str | None
    body: bytes


@dataclass(frozen=True, slots=True)
class Outcome:
    ok: bool
    status_code: int | None
    error: str | None
    duration_ms: int


def build_headers(target: Target, timestamp: int) -> dict[str, str]:
    """The contract's headers plus the Standard Webhooks ones; signatures only with a secret."""
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Service-Event": target.event,
        "X-Service-Delivery": target.delivery_id,
        "webhook-id": target.delivery_id,
        "webhook-timestamp": str(timestamp),
    }
    if target.secret:
        headers["X-Service-Signature"] = signing.service_signature(target.secret, target.body)
        headers["webhook-signature"] = signing.standard_signature(
            target.secret, target.delivery_id, timestamp, target.body
        )
    return headers


def retry_delay(retry: int, backoff_seconds: float, backoff_factor: float) -> float:
    """Seconds before retry ``retry`` (1-based): backoff_seconds * backoff_factor**(retry-1), + <=10% jitter.

    The jitter spreads the retries of many deliveries that failed together (a receiver outage) so
    they do not all hit the receiver again in the same instant.
    """
    base = backoff_seconds * backoff_factor ** (retry - 1)
    return base + base * 0.1 * random.random()


def iso_at(epoch: float) -> str:
    return iso(datetime.fromtimestamp(epoch, UTC))


def outcome_row(
    row: dict[str, Any], active: bool, started_at: str, outcome: Outcome, *, max_retries: int,
    backoff_seconds: float, backoff_factor: float,
) -> dict[str, Any]:
    """What an attempt writes to its delivery: delivered; pending with the time of its next retry while
    retries are left (an active subscription's); or failed. Counted in the deliveries metric."""
    number = row["attempts"] + 1
    status, next_attempt_at, delivered_at = "failed", None, None
    if outcome.ok:
        status, delivered_at = "delivered", now_iso()
    elif active:
        retry = number - row["retry_base"]  # attempt k of this cycle failed: retry k comes next
        if retry <= max_retries:
            delay = retry_delay(retry, backoff_seconds, backoff_factor)
            status, next_attempt_at = "pending", iso_at(time.time() + delay)
    if not outcome.ok:
        log.info("webhook delivery %s attempt %d failed (%s); %s", row["id"], number, outcome.error,
                 f"retry at {next_attempt_at}" if next_attempt_at else "giving up")
    DELIVERIES.labels(outcome={"delivered": "delivered", "pending": "retrying"}.get(status, "failed")).inc()
    return {
        "delivery_id": row["id"],
        "attempt": number,
        "started_at": started_at,
        "duration_ms": outcome.duration_ms,
        "status_code": outcome.status_code,
        "error": outcome.error,
        "status": status,
        "next_attempt_at": next_attempt_at,
        "delivered_at": delivered_at,
    }


async def _discard_body(response: httpx.Response) -> None:
    """Reads a small answer so the connection can be reused; a large one is cut off, never buffered."""
    received = 0
    async for chunk in response.aiter_raw():
        received += len(chunk)
        if received > RESPONSE_READ_MAX:
            break


async def attempt(
    transport: httpx.AsyncBaseTransport, target: Target, *, timeout: float, https_only: bool  # noqa: ASYNC109
) -> Outcome:
    """POSTs the body once. 2xx is success; any other status, a redirect, a timeout, a refused or
    unreachable target is a failure with a readable error."""
    started = time.monotonic()

    def done(ok: bool, status_code: int | None = None, error: str | None = None) -> Outcome:
        duration = int((time.monotonic() - started) * 1000)
        return Outcome(ok, status_code, None if error is None else error[:ERROR_MAX], duration)

    problem = url_problem(target.url, https_only=https_only)
    if problem:
        return done(False, error=f"target refused: {problem}")
    headers = build_headers(target, int(time.time()))
    try:
        # httpx's timeout bounds each phase; this bounds the whole attempt (DNS and a slow drip included)
        async with asyncio.timeout(timeout):
            # straight to the transport: it never follows a redirect and keeps no cookies
            request = httpx.Request(
                "POST", target.url, content=target.body, headers=headers,
                extensions={"timeout": httpx.Timeout(timeout).as_dict()},
            )
            response = await transport.handle_async_request(request)
            try:
                await _discard_body(response)
            finally:
                await response.aclose()
    except TimeoutError:
        return done(False, error=f"timed out after {timeout:g} s")
    except httpx.TimeoutException:
        return done(False, error=f"timed out after {timeout:g} s")
    except TargetRefused as exc:
        return done(False, error=str(exc))
    except httpx.HTTPError as exc:
        return done(False, error=f"connection failed: {type(exc).__name__}: {exc}".rstrip(": "))
    status = response.status_code
    if 200 <= status < 300:
        return done(True, status)
    if 300 <= status < 400:
        location = response.headers.get("location", "")
        return done(False, status, f"HTTP {status}: redirect to {location or '?'} not followed")
    return done(False, status, f"HTTP {status} {response.reason_phrase}".rstrip())
