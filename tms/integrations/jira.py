"""Jira webhooks (Cloud and Data Center).

Jira Cloud admin webhooks with a secret, and Data Center 10+, sign the raw body:
``X-Hub-Signature: sha256=<hex HMAC-SHA256>``. Older Data Center versions cannot sign, so such a
setup puts the integration's secret in the URL instead: ``/api/integrations/{id}?secret=...``.
A signature that is present must be right; the URL secret is only the fallback for unsigned calls.

Done state: a ``jira:issue_updated`` whose ``issue.fields.status.statusCategory.key`` is ``done``
(Jira's category, so any workflow's "Done", "Closed", "Resolved" status counts). When the payload
carries a changelog, it must contain the status change: a comment or an edit on an issue that has
been done for weeks is not a new resolution.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tms.integrations import (
    TrackerEvent,
    UnreadablePayload,
    dig,
    header,
    load_object,
    secret_matches,
    signature_matches,
    to_iso,
)


def verify(secret: str, headers: Mapping[str, str], query: Mapping[str, str], body: bytes) -> bool:
    signature = header(headers, "X-Hub-Signature")
    if signature is not None:
        return signature_matches(secret, body, signature)
    return secret_matches(secret, query.get("secret"))


def _status_changed(changelog: Any) -> bool:
    items = dig(changelog, "items")
    if not isinstance(items, list):
        return True  # no changelog to judge by: trust the status the issue is in
    return any(isinstance(item, dict) and item.get("field") == "status" for item in items)


def parse(headers: Mapping[str, str], body: bytes) -> TrackerEvent:
    payload = load_object(body)
    event = payload.get("webhookEvent")
    event = event if isinstance(event, str) else "unknown"
    # Jira Cloud sends an identifier that its retries repeat; Data Center does not (the body hash covers it)
    delivery_id = header(headers, "X-Atlassian-Webhook-Identifier")
    if event != "jira:issue_updated":
        return TrackerEvent(event, "ignored", delivery_id,
                            detail=f"Jira event {event} is not an issue update")
    key = dig(payload, "issue", "key")
    if not isinstance(key, str) or not key:
        raise UnreadablePayload("jira:issue_updated without issue.key")
    category = dig(payload, "issue", "fields", "status", "statusCategory", "key")
    status = dig(payload, "issue", "fields", "status", "name")
    if category != "done":
        return TrackerEvent(event, "ignored", delivery_id, key,
                            detail=f"{key}: status {status} is not in the done category")
    if not _status_changed(payload.get("changelog")):
        return TrackerEvent(event, "ignored", delivery_id, key, detail=f"{key}: updated, but not its status")
    fields = dig(payload, "issue", "fields")
    resolved_at = to_iso(dig(fields, "resolutiondate")) or to_iso(payload.get("timestamp"))
    return TrackerEvent(event, "resolved", delivery_id, key, resolved_at=resolved_at,
                        detail=f"{key} moved to {status}")
