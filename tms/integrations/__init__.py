"""Issue-tracker adapters: each module verifies what its tracker signs and parses what it sends.

An adapter is pure (bytes and headers in, a ``TrackerEvent`` out): no database, no HTTP framework,
so the documented payloads can be replayed against it directly. The service layer
(``tms.integrations.service``) decides what a resolution means for the library.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import ModuleType
from typing import Any, Literal, TypedDict

from tms.ids import iso

Outcome = Literal["resolved", "ignored", "ping"]


class IssueFields(TypedDict):
    """The ``TrackerEvent`` fields every event about one GitHub/GitLab issue shares."""

    delivery_id: str | None
    bug_key: str
    repository: str
    number: int


@dataclass(frozen=True, slots=True)
class TrackerEvent:
    """What one verified tracker call says, reduced to what the bug loop needs."""

    event: str                 # the tracker's own event name, kept for the delivery log
    outcome: Outcome
    delivery_id: str | None = None  # the tracker's delivery id, when it sends one
    bug_key: str | None = None      # 'PROJ-12' or 'owner/repo#12'
    repository: str | None = None   # GitHub/GitLab: the repository the issue lives in
    number: int | None = None       # GitHub/GitLab: the issue number, for '#12' short keys
    resolved_at: str | None = None  # ISO 8601 UTC
    detail: str = ""                # why a call was ignored, for the log and the settings page


class UnreadablePayload(ValueError):
    """The body is not the JSON object the tracker documents; answered 202 and logged, never 500."""


def hmac_sha256_hex(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signature_matches(secret: str, body: bytes, header: str | None) -> bool:
    """``sha256=<hex>`` (GitHub's and Jira's format) compared in constant time."""
    if not header or not secret:
        return False
    method, _, presented = header.strip().partition("=")
    if method.lower() != "sha256" or not presented:
        return False
    return hmac.compare_digest(hmac_sha256_hex(secret, body), presented.strip().lower())


def secret_matches(secret: str, presented: str | None) -> bool:
    """A shared secret sent in clear (GitLab's token, Jira's ?secret=): constant-time compare."""
    if not presented or not secret:
        return False
    return hmac.compare_digest(secret.encode(), presented.encode())


def load_object(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise UnreadablePayload("the body is not JSON") from exc
    if not isinstance(payload, dict):
        raise UnreadablePayload("the body is not a JSON object")
    return payload


def dig(payload: Any, *path: str) -> Any:
    """payload[a][b]… or None when any step is missing or not an object: payloads vary by version."""
    for step in path:
        if not isinstance(payload, dict):
            return None
        payload = payload.get(step)
    return payload


def to_iso(value: Any) -> str | None:
    """A tracker's timestamp (ISO 8601 in any offset, GitLab's '2024-01-02 10:00:00 UTC', or epoch
    milliseconds) as our UTC ISO form; None when absent or unreadable."""
    try:
        if isinstance(value, bool):
            return None
        if isinstance(value, int | float):
            return iso(datetime.fromtimestamp(value / 1000, UTC))
        if isinstance(value, str) and value.strip():
            text = value.strip().replace(" UTC", "+00:00")
            if text.endswith("Z"):
                text = text[:-1] + "+00:00"
            # Jira sends +0000 (no colon): fromisoformat reads it since Python 3.11, our minimum
            moment = datetime.fromisoformat(text)
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            return iso(moment)
    except (ValueError, OverflowError, OSError):
        return None
    return None


def header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name) or headers.get(name.lower())
    return value.strip() if isinstance(value, str) and value.strip() else None


def trackers() -> dict[str, ModuleType]:
    """kind -> adapter: ``verify(secret, headers, query, body) -> bool``, ``parse(headers, body)``."""
    from tms.integrations import github, gitlab, jira

    return {"GITHUB": github, "GITLAB": gitlab, "JIRA": jira}


KINDS: tuple[str, ...] = ("GITHUB", "GITLAB", "JIRA")
