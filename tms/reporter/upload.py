"""One POST /api/v1/ingest, retried safely.

The body is gzip-compressed JSON (`Content-Encoding: gzip`): test reports compress ~10x and CI
uplinks are slow. An `Idempotency-Key` (a uuid4 made once per command, the same on every retry) lets
the service answer a retry of a request it already carried out with the first answer, so a lost
response never creates the run twice.

Retried: connection errors and timeouts, 429 (after `Retry-After` when the service sends one) and
5xx, with exponential backoff and jitter. Never retried: any other 4xx, which a retry cannot fix.
"""

from __future__ import annotations

import gzip
import io
import json
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

USER_AGENT = "tms-reporter/0.1"
MAX_BACKOFF = 60.0


class NetworkFailure(Exception):
    """The service could not be reached, or kept failing (5xx/429), after every retry."""


@dataclass(slots=True)
class Reply:
    status_code: int
    body: Any  # parsed JSON, or the raw text when the answer is not JSON
    attempts: int
    idempotency_key: str
    location: str | None = None  # of a redirect, for the hint


def compress(payload: dict[str, Any]) -> bytes:
    """The payload as gzip JSON, encoded one result at a time: the whole JSON text of a 50,000-result
    run never sits in memory, only its compressed bytes."""
    buffer = io.BytesIO()
    head = {key: value for key, value in payload.items() if key != "results"}
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=6, mtime=0) as stream:
        stream.write(json.dumps(head, ensure_ascii=False, separators=(",", ":"))[:-1].encode())
        stream.write(b',"results":[' if head else b'"results":[')
        chunk: list[str] = []
        for index, result in enumerate(payload.get("results", [])):
            chunk.append(("," if index else "") + json.dumps(result, ensure_ascii=False, separators=(",", ":")))
            if len(chunk) == 1000:
                stream.write("".join(chunk).encode())
                chunk.clear()
        stream.write("".join(chunk).encode() + b"]}")
    return buffer.getvalue()


def post_ingest(
    base_url: str,
    token: str,
    body: bytes,
    *,
    retries: int = 4,
    backoff: float = 1.0,
    max_wait: float = 300.0,
    timeout: float = 120.0,
    log: Callable[[str], None] = lambda _: None,
    sleep: Callable[[float], None] = time.sleep,
    idempotency_key: str | None = None,
) -> Reply:
    """POSTs the gzip body; returns the first answer that is not retried (2xx or 4xx)."""
    key = idempotency_key or str(uuid.uuid4())
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Content-Encoding": "gzip",
        "Accept": "application/json",
        "Idempotency-Key": key,
        "User-Agent": USER_AGENT,
    }
    url = base_url.rstrip("/") + "/api/v1/ingest"
    limits = httpx.Timeout(timeout, connect=min(timeout, 15.0))
    with httpx.Client(timeout=limits, follow_redirects=False, trust_env=True) as client:
        attempt = 0
        while True:
            attempt += 1
            log(f"POST {url} ({len(body)} bytes gzip, Idempotency-Key {key}), attempt {attempt}")
            try:
                response = client.post(url, content=body, headers=headers)
            except httpx.TransportError as exc:
                reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                if attempt > retries:
                    raise NetworkFailure(f"{reason} (after {attempt} attempts)") from exc
                wait = _backoff(attempt, backoff)
                log(f"  {reason}; retrying in {wait:.1f}s")
                sleep(wait)
                continue
            status = response.status_code
            log(f"  -> {status}")
            if status == 429 or status >= 500:
                if attempt > retries:
                    raise NetworkFailure(f"HTTP {status} {_short(response)} (after {attempt} attempts)")
                retry_after = _retry_after(response.headers.get("Retry-After"), max_wait)
                wait = _backoff(attempt, backoff) if retry_after is None else retry_after
                log(f"  HTTP {status}; retrying in {wait:.1f}s")
                sleep(wait)
                continue
            return Reply(status, _body(response), attempt, key, response.headers.get("Location"))


def _backoff(attempt: int, base: float) -> float:
    return min(MAX_BACKOFF, base * 2.0 ** (attempt - 1)) * (1 + random.random() * 0.25)


def _retry_after(value: str | None, max_wait: float) -> float | None:
    """Retry-After as seconds (delta-seconds or an HTTP date), capped so a job cannot hang for hours."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            moment = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = moment.timestamp() - time.time()
    return max(0.0, min(seconds, max_wait))


def _body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text


def _short(response: httpx.Response) -> str:
    body = _body(response)
    if isinstance(body, dict):
        return str(body.get("title") or body.get("detail") or "")[:200]
    return str(body).strip()[:200]
