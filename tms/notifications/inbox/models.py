"""Notifications of the inbox as the API shows them."""

from __future__ import annotations

from typing import Literal

import msgspec

from tms.http.fields import RequestBody

Kind = Literal["mention", "assignment", "review_request", "review_result"]
KINDS: tuple[str, ...] = ("mention", "assignment", "review_request", "review_result")


class Notification(msgspec.Struct):
    id: str
    kind: str
    title: str
    link: str
    actor_id: str | None
    created_at: str
    read: bool


class Pagination(msgspec.Struct):
    total: int
    limit: int
    offset: int


class NotificationList(msgspec.Struct):
    data: list[Notification]
    pagination: Pagination
    unread: int


class NotificationEnvelope(msgspec.Struct):
    data: Notification


class NotificationPatch(RequestBody):
    read: bool


class MarkedAnswer(msgspec.Struct):
    marked: int


class MarkedEnvelope(msgspec.Struct):
    data: MarkedAnswer
