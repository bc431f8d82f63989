"""Bodies of the internal /api/webhooks API (docs/webhooks.md, "Managing subscriptions")."""

from __future__ import annotations

from typing import Annotated

import msgspec

from tms.models import RequestBody

Url = Annotated[str, msgspec.Meta(min_length=1, max_length=2048)]
EventName = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
EventList = Annotated[list[EventName], msgspec.Meta(max_length=50)]
# a secret is what the receiver verifies with; null on update removes it
Secret = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]


class Subscription(msgspec.Struct):
    """What the API shows: never the secret itself, only whether there is one."""

    id: str
    url: str
    events: list[str]
    active: bool
    has_secret: bool
    created_at: str
    updated_at: str


class SubscriptionCreate(RequestBody):
    url: Url
    events: EventList
    secret: Secret | None = None
    active: bool = True


class SubscriptionUpdate(RequestBody):
    """Only the fields present change; ``"secret": null`` removes the secret."""

    url: Url | msgspec.UnsetType = msgspec.UNSET
    events: EventList | msgspec.UnsetType = msgspec.UNSET
    secret: Secret | msgspec.UnsetType | None = msgspec.UNSET
    active: bool | msgspec.UnsetType = msgspec.UNSET


class Attempt(msgspec.Struct):
    attempt: int
    started_at: str
    duration_ms: int | None
    status_code: int | None
    error: str | None


class Delivery(msgspec.Struct):
    """The contract's fields; ``attempts`` is the count, ``attempt_log`` each attempt in order."""

    id: str
    event: str
    status: str
    attempts: int
    last_status_code: int | None
    last_error: str | None
    next_attempt_at: str | None
    created_at: str
    delivered_at: str | None
    attempt_log: list[Attempt]


class SubscriptionEnvelope(msgspec.Struct):
    data: Subscription


class SubscriptionList(msgspec.Struct):
    data: list[Subscription]


class DeliveryEnvelope(msgspec.Struct):
    data: Delivery


class DeliveryList(msgspec.Struct):
    data: list[Delivery]
