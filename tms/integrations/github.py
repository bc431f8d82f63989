"""GitHub Issues webhooks.

GitHub signs the raw body with the webhook secret: ``X-Hub-Signature-256: sha256=<hex HMAC-SHA256>``
(the older SHA-1 ``X-Hub-Signature`` is not accepted). ``X-GitHub-Event`` names the event,
``X-GitHub-Delivery`` is a GUID that a redelivery repeats. A repository webhook may be configured with
either content type: ``application/json`` or ``application/x-www-form-urlencoded`` (``payload=<json>``).

Done state: an ``issues`` event with action ``closed`` and ``issue.state_reason`` ``completed``.
``not_planned`` and ``duplicate`` closures are not fixes; a ``null`` reason (issues closed before
GitHub recorded reasons, or by some apps) counts as completed, as GitHub's own UI shows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from tms.integrations import (
    IssueFields,
    TrackerEvent,
    UnreadablePayload,
    dig,
    header,
    load_object,
    signature_matches,
    to_iso,
)

DONE_REASONS = (None, "completed")


def verify(secret: str, headers: Mapping[str, str], query: Mapping[str, str], body: bytes) -> bool:
    return signature_matches(secret, body, header(headers, "X-Hub-Signature-256"))


def _payload(headers: Mapping[str, str], body: bytes) -> dict[str, Any]:
    content_type = (header(headers, "Content-Type") or "").lower()
    if content_type.startswith("application/x-www-form-urlencoded") or body.startswith(b"payload="):
        try:
            fields = parse_qs(body.decode(), strict_parsing=False)
        except UnicodeDecodeError as exc:
            raise UnreadablePayload("the form body is not UTF-8") from exc
        if not fields.get("payload"):
            raise UnreadablePayload("the form body has no payload field")
        return load_object(fields["payload"][0].encode())
    return load_object(body)


def parse(headers: Mapping[str, str], body: bytes) -> TrackerEvent:
    event = header(headers, "X-GitHub-Event") or "unknown"
    delivery_id = header(headers, "X-GitHub-Delivery")
    if event == "ping":
        return TrackerEvent(event, "ping", delivery_id, detail="GitHub ping: the webhook is connected")
    if event != "issues":
        return TrackerEvent(event, "ignored", delivery_id, detail=f"GitHub event {event} is not about issues")
    payload = _payload(headers, body)
    action = payload.get("action")
    repository = dig(payload, "repository", "full_name")
    number = dig(payload, "issue", "number")
    if not isinstance(repository, str) or not isinstance(number, int) or isinstance(number, bool):
        raise UnreadablePayload("issues event without repository.full_name or issue.number")
    key = f"{repository}#{number}"
    common: IssueFields = {"delivery_id": delivery_id, "bug_key": key, "repository": repository, "number": number}
    if action != "closed":
        return TrackerEvent(event, "ignored", detail=f"{key}: action {action} is not a closure", **common)
    reason = dig(payload, "issue", "state_reason")
    if reason not in DONE_REASONS:
        return TrackerEvent(event, "ignored", detail=f"{key}: closed as {reason}, not completed", **common)
    resolved_at = to_iso(dig(payload, "issue", "closed_at"))
    return TrackerEvent(event, "resolved", resolved_at=resolved_at, detail=f"{key} closed as completed",
                        **common)
