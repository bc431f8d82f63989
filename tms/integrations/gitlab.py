"""GitLab Issues webhooks.

GitLab does not sign: it sends the webhook's secret token as ``X-Gitlab-Token``, compared here in
constant time. ``X-Gitlab-Event`` names the hook (``Issue Hook``, ``Confidential Issue Hook``;
newer instances may send ``Work Item Hook`` for issues), ``X-Gitlab-Event-UUID`` identifies the event.

Done state: ``object_attributes.action`` is ``close``. Key: ``project.path_with_namespace#iid``.
GitLab's "Test" button sends a payload without ``action`` (gitlab-org/gitlab#20191 on older
versions); it is ignored rather than mistaken for a closure.
"""

from __future__ import annotations

from collections.abc import Mapping

from tms.integrations import (
    IssueFields,
    TrackerEvent,
    UnreadablePayload,
    dig,
    header,
    load_object,
    secret_matches,
    to_iso,
)

ISSUE_KINDS = ("issue", "work_item")


def verify(secret: str, headers: Mapping[str, str], query: Mapping[str, str], body: bytes) -> bool:
    return secret_matches(secret, header(headers, "X-Gitlab-Token"))


def parse(headers: Mapping[str, str], body: bytes) -> TrackerEvent:
    event = header(headers, "X-Gitlab-Event") or "unknown"
    delivery_id = header(headers, "X-Gitlab-Event-UUID")
    payload = load_object(body)
    kind = payload.get("object_kind")
    if kind not in ISSUE_KINDS:
        return TrackerEvent(event, "ignored", delivery_id,
                            detail=f"GitLab {kind or event} is not about issues")
    attributes = payload.get("object_attributes")
    repository = dig(payload, "project", "path_with_namespace")
    number = dig(attributes, "iid")
    if not isinstance(repository, str) or not isinstance(number, int) or isinstance(number, bool):
        raise UnreadablePayload("issue hook without project.path_with_namespace or object_attributes.iid")
    # a work item may be a task or an epic; only issues are bugs that cases can reference
    item_type = dig(attributes, "type")
    key = f"{repository}#{number}"
    common: IssueFields = {"delivery_id": delivery_id, "bug_key": key, "repository": repository, "number": number}
    if kind == "work_item" and item_type not in (None, "Issue", "Incident"):
        return TrackerEvent(event, "ignored", detail=f"{key}: work item of type {item_type}", **common)
    action = dig(attributes, "action")
    if action != "close":
        return TrackerEvent(event, "ignored", detail=f"{key}: action {action} is not a closure", **common)
    resolved_at = to_iso(dig(attributes, "closed_at")) or to_iso(dig(attributes, "updated_at"))
    return TrackerEvent(event, "resolved", resolved_at=resolved_at, detail=f"{key} closed", **common)
