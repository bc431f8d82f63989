"""/api/v1/notifications: the signed-in user's inbox (a session only: a Bearer token is a 401, unsafe
methods need the CSRF header, as ``session_api_guard`` checks). Handlers are thin; rules in service.py."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, Router, get, patch, post
from litestar.params import JSONBody, Parameter

from tms.http.api_auth import SESSION_SCHEME
from tms.notifications.inbox import service
from tms.notifications.inbox.models import (
    MarkedAnswer,
    MarkedEnvelope,
    NotificationEnvelope,
    NotificationList,
    NotificationPatch,
)
from tms.state import DatabaseDep
from tms.team.signin.session import needs_role, session_api_guard, web_user

AnyRequest = Request[Any, Any, Any]


@get("/", summary="The caller's notifications, newest first, with read flags and the unread count")
async def list_notifications(
    request: AnyRequest, db: DatabaseDep,
    unread: bool = False,
    limit: Annotated[int | None, Parameter(ge=1)] = None,
    offset: Annotated[int | None, Parameter(ge=0)] = None,
) -> NotificationList:
    user = web_user(request)
    return await service.list_notifications(db, user.tenant_id, user.id, unread=unread, limit=limit,
                                            offset=offset)


@patch("/{notification_id:str}", summary="Mark one notification read (read=true) or unread (read=false)")
async def update_notification(request: AnyRequest, db: DatabaseDep, notification_id: str,
                              data: JSONBody[NotificationPatch]) -> NotificationEnvelope:
    user = web_user(request)
    return NotificationEnvelope(data=await service.mark_read(db, user.tenant_id, user.id,
                                                             notification_id, data.read))


@post("/read-all", status_code=200, summary="Mark all of the caller's notifications read")
async def read_all(request: AnyRequest, db: DatabaseDep) -> MarkedEnvelope:
    user = web_user(request)
    return MarkedEnvelope(data=MarkedAnswer(marked=await service.mark_all_read(db, user.tenant_id,
                                                                               user.id)))


def router() -> Router:
    return Router(path="/api/v1/notifications", route_handlers=[list_notifications, update_notification, read_all],
                  guards=[session_api_guard], tags=["notifications (session)"], security=[{SESSION_SCHEME: []}],
                  **needs_role("viewer"))  # everyone reads and marks their own inbox
