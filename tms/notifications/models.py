"""Bodies of the internal /api/webhooks API (docs/webhooks.md, "Managing subscriptions")."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from tms.http.fields import RequestBody

Url = Annotated[str, msgspec.Meta(min_length=1, max_length=2048)]
EventName = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
EventList = Annotated[list[EventName], msgspec.Meta(max_length=50)]
# a secret is what the receiver verifies with; null on update removes it
Secret = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]
# what a delivery's body is: the standard envelope, or a chat service's incoming-webhook message
Format = Literal["standard", "slack", "teams", "google_chat"]
FORMATS: tuple[str, ...] = ("standard", "slack", "teams", "google_chat")
Environment = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]


class Filters(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=False):
    """Which of the subscribed events are sent (docs/webhooks.md, "Filters").

    ``only_failures``: only news of failures (failed results, completed runs with failed or broken
    results); ``only_failed_runs``: completed runs only when they have failed or broken results;
    ``environments``: events of runs only when the run's environment is one of these (empty: any).
    """

    only_failures: bool = False
    only_failed_runs: bool = False
    environments: Annotated[list[Environment], msgspec.Meta(max_length=50)] = msgspec.field(default_factory=list)

    def narrows(self) -> bool:
        return self.only_failures or self.only_failed_runs or bool(self.environments)


class Subscription(msgspec.Struct):
    """What the API shows: never the secret itself, only whether there is one."""

    id: str
    url: str
    events: list[str]
    active: bool
    has_secret: bool
    format: str
    filters: Filters
    created_at: str
    updated_at: str


class SubscriptionCreate(RequestBody):
    url: Url
    events: EventList
    secret: Secret | None = None
    active: bool = True
    format: Format = "standard"
    filters: Filters = msgspec.field(default_factory=Filters)


class SubscriptionUpdate(RequestBody):
    """Only the fields present change; ``"secret": null`` removes the secret."""

    url: Url | msgspec.UnsetType = msgspec.UNSET
    events: EventList | msgspec.UnsetType = msgspec.UNSET
    secret: Secret | msgspec.UnsetType | None = msgspec.UNSET
    active: bool | msgspec.UnsetType = msgspec.UNSET
    format: Format | msgspec.UnsetType = msgspec.UNSET
    # replaces the whole filters object: a key left out takes its default
    filters: Filters | msgspec.UnsetType = msgspec.UNSET


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


class Preview(msgspec.Struct):
    """The body a subscription of ``format`` would post for ``event`` (``sample``: no real run to show)."""

    format: str
    event: str
    sample: bool
    body: str


class PreviewEnvelope(msgspec.Struct):
    data: Preview
