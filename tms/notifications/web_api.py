"""/api/webhooks: the internal, session-authenticated webhook management API (docs/api.md).

A session only: a Bearer token gets 401, and unsafe methods need the CSRF header
(``session_api_guard``). Handlers are thin; the rules live in ``tms.notifications.service``.
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, Router, delete, get, patch, post
from litestar.params import JSONBody, Parameter

from tms.notifications import service
from tms.notifications.models import (
    DeliveryEnvelope,
    DeliveryList,
    Format,
    PreviewEnvelope,
    SubscriptionCreate,
    SubscriptionEnvelope,
    SubscriptionList,
    SubscriptionUpdate,
)
from tms.state import app_state
from tms.team.signin.session import needs_role, session_api_guard, web_user

AnyRequest = Request[Any, Any, Any]


def _ctx(request: AnyRequest) -> tuple[Any, Any, str]:
    state = app_state(request)
    return state.db, state.config, web_user(request).tenant_id


@get("/", summary="List webhook subscriptions")
async def list_subscriptions(request: AnyRequest) -> SubscriptionList:
    return SubscriptionList(data=await service.list_subscriptions(*_ctx(request)))


@get("/preview", summary="The message a subscription of this format posts when a run completes")
async def preview(request: AnyRequest, format: Format = "standard") -> PreviewEnvelope:
    return PreviewEnvelope(data=await service.preview(*_ctx(request), format))


@post("/", summary="Create a webhook subscription")
async def create_subscription(request: AnyRequest, data: JSONBody[SubscriptionCreate]) -> SubscriptionEnvelope:
    return SubscriptionEnvelope(data=await service.create_subscription(*_ctx(request), data))


@patch("/{subscription_id:str}", summary="Update a webhook subscription")
async def update_subscription(
    request: AnyRequest, subscription_id: str, data: JSONBody[SubscriptionUpdate]
) -> SubscriptionEnvelope:
    return SubscriptionEnvelope(data=await service.update_subscription(*_ctx(request), subscription_id, data))


@delete("/{subscription_id:str}", summary="Delete a webhook subscription and its delivery log")
async def delete_subscription(request: AnyRequest, subscription_id: str) -> None:
    await service.delete_subscription(*_ctx(request), subscription_id)


@get("/{subscription_id:str}/deliveries", summary="Delivery log of a subscription, newest first")
async def list_deliveries(
    request: AnyRequest,
    subscription_id: str,
    limit: Annotated[int, Parameter(ge=1, le=service.DELIVERY_LIST_MAX)] = 100,
) -> DeliveryList:
    return DeliveryList(data=await service.list_deliveries(*_ctx(request), subscription_id, limit))


@post(
    "/{subscription_id:str}/deliveries/{delivery_id:str}/redeliver",
    status_code=202,
    summary="Send a delivery again (same delivery id, fresh retry budget)",
)
async def redeliver(request: AnyRequest, subscription_id: str, delivery_id: str) -> DeliveryEnvelope:
    return DeliveryEnvelope(data=await service.redeliver(*_ctx(request), subscription_id, delivery_id))


@post("/{subscription_id:str}/ping", status_code=202, summary="Send a test event to this subscription only")
async def ping(request: AnyRequest, subscription_id: str) -> DeliveryEnvelope:
    return DeliveryEnvelope(data=await service.ping(*_ctx(request), subscription_id))


def router() -> Router:
    return Router(
        path="/api/webhooks",
        route_handlers=[
            list_subscriptions,
            preview,
            create_subscription,
            update_subscription,
            delete_subscription,
            list_deliveries,
            redeliver,
            ping,
        ],
        guards=[session_api_guard],
        **needs_role("admin"),
        tags=["webhooks (internal, session)"],
    )
