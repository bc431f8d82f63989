"""The inbox page (/notifications, the bell's target): the signed-in user's notifications, newest first,
paged, with mark-read and mark-all-read; and the account page's "Mail me my notifications" switch.
Every role has an inbox, so viewers use these forms too."""

from __future__ import annotations

from litestar import Router, get, post
from litestar.response import Redirect, Template

from tms.errors import NotFound
from tms.http.pages import AnyRequest, done, form_of, not_found, page_numbers, render, user_of
from tms.http.paging import page_offset
from tms.notifications.inbox import service
from tms.state import db_of
from tms.team.signin.session import needs_role, page_guard

PAGE_SIZE = 50


@get("/notifications")
async def inbox_page(request: AnyRequest, offset: int = 0, unread: bool = False) -> Template:
    user = user_of(request)
    listed = await service.list_notifications(db_of(request), user.tenant_id, user.id, unread=unread,
                                              limit=PAGE_SIZE, offset=page_offset(offset))
    paging = listed.pagination
    return render(request, "notifications/inbox.html", active_nav="notifications", notes=listed.data,
                  unread_total=listed.unread, unread_only=unread,
                  pager=page_numbers(paging.total, paging.limit, paging.offset),
                  pager_query="unread=true" if unread else "")


@post("/notifications/read-all", status_code=303)
async def read_all(request: AnyRequest) -> Redirect:
    user = user_of(request)
    marked = await service.mark_all_read(db_of(request), user.tenant_id, user.id)
    return done(request, "/notifications", f"{marked} notification{'s' if marked != 1 else ''} marked read.")


@post("/notifications/{notification_id:str}/read", status_code=303)
async def read_one(request: AnyRequest, notification_id: str) -> Redirect:
    """Marks one read; with ``open=1`` the answer goes on to the notification's link."""
    single, _ = await form_of(request)
    user = user_of(request)
    try:
        note = await service.mark_read(db_of(request), user.tenant_id, user.id, notification_id,
                                       single.get("read", "1") != "0")
    except NotFound as exc:
        raise not_found("notification") from exc
    if single.get("open") == "1" and note.link.startswith("/") and not note.link.startswith("//"):
        return Redirect(note.link, status_code=303)
    return done(request, "/notifications", "Marked read." if note.read else "Marked unread.")


@post("/account/notifications", status_code=303)
async def mail_switch(request: AnyRequest) -> Redirect:
    """Form field ``notify_mail``: a checkbox (present and not "0" = on)."""
    single, _ = await form_of(request)
    user = user_of(request)
    on = single.get("notify_mail", "") not in ("", "0")
    await service.set_mail_switch(db_of(request), user.tenant_id, user.id, on)
    return done(request, "/account", "Your notifications are mailed to you." if on
                else "Your notifications are no longer mailed to you.")


def router() -> Router:
    return Router(path="/", route_handlers=[inbox_page, read_all, read_one, mail_switch], guards=[page_guard],
                  include_in_schema=False, **needs_role("viewer"))
