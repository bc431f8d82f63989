"""The inbox: ``notify`` writes a user's notification in the caller's transaction; the mail for it
leaves after commit, off the request path, when ``[smtp] host`` is set and the user's switch is on.

Other domains (comments' mentions, assignments of results, review requests) call ``notify`` or
``notify_many``; the users see them at /notifications and through ``GET /api/v1/notifications``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from tms.config import Config
from tms.db import Database, Row, Transaction
from tms.errors import InvalidInput, NotFound
from tms.http.paging import page_window
from tms.ids import new_ids, now_iso
from tms.notifications import mail
from tms.notifications.inbox import store
from tms.notifications.inbox.models import KINDS, Notification, NotificationList, Pagination
from tms.team.audit import service as audit

log = logging.getLogger(__name__)

TITLE_MAX = 300  # a title longer than this is cut (with an ellipsis): it is a line in a list and a subject
PAGE_DEFAULT = 50
PAGE_MAX = 200

# mails in flight; a reference keeps each task alive until it is done
_mailing: set[asyncio.Task[None]] = set()


async def notify(tx: Transaction, config: Config, *, tenant_id: str, user_id: str, kind: str, title: str,
                 link: str, actor_id: str | None) -> None:
    """One notification for one user of the tenant (see ``notify_many``)."""
    await notify_many(tx, config, tenant_id=tenant_id, user_ids=[user_id], kind=kind, title=title, link=link,
                      actor_id=actor_id)


async def notify_many(tx: Transaction, config: Config, *, tenant_id: str, user_ids: Sequence[str], kind: str,
                      title: str, link: str, actor_id: str | None) -> None:
    """The same notification for each of ``user_ids`` in the caller's transaction (one insert).

    Users outside the tenant or deactivated are skipped, and so is the actor (nobody is told of what
    they did themselves). ``link`` is a path of this site (``/cases/TC-1``). After commit, each recipient
    whose switch is on gets a mail when SMTP is configured.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown notification kind {kind!r}")
    wanted = list(dict.fromkeys(u for u in user_ids if u and u != actor_id))
    users = await store.recipients(tx, tenant_id, wanted)
    if not users:
        return
    title = title if len(title) <= TITLE_MAX else title[: TITLE_MAX - 1] + "…"
    at = now_iso()
    ids = new_ids(len(users))
    await store.insert(tx, [(nid, tenant_id, u["id"], kind, title, link, actor_id, at)
                            for nid, u in zip(ids, users, strict=True)])
    if not config.get("smtp.host"):
        return
    addresses = [str(u["email"]) for u in users if u["notify_mail"]]
    if addresses:
        tx.after_commit(lambda: _mail_later(config, addresses, title, link))


def _mail_later(config: Config, addresses: list[str], title: str, link: str) -> None:
    task = asyncio.get_running_loop().create_task(_mail(config, addresses, title, link))
    _mailing.add(task)
    task.add_done_callback(_mailing.discard)


async def _mail(config: Config, addresses: list[str], title: str, link: str) -> None:
    body = (f"{title}\n\n{config.base_url}{link}\n\n"
            f"You get these mails because 'Mail me my notifications' is on: {config.base_url}/account")
    for address in addresses:
        try:
            await mail.send_mail(config, address, f"[TMS] {title}", body)
        except Exception:  # a mail problem never reaches anyone's request
            log.exception("could not mail a notification to %s", address)


async def settle_mail() -> None:
    """Waits for the mails in flight (shutdown)."""
    if _mailing:
        await asyncio.gather(*list(_mailing), return_exceptions=True)


def _notification(row: Row) -> Notification:
    return Notification(id=row["id"], kind=row["kind"], title=row["title"], link=row["link"],
                        actor_id=row["actor_id"], created_at=row["created_at"], read=row["read_at"] is not None)


async def list_notifications(db: Database, tenant_id: str, user_id: str, *, unread: bool = False,
                             limit: int | None = None, offset: int | None = None) -> NotificationList:
    """The user's notifications, newest first, paged (50 by default, at most 200), with the unread count."""
    limit, offset = page_window(limit, offset, default=PAGE_DEFAULT, maximum=PAGE_MAX)
    rows, total = await store.page(db, tenant_id, user_id, unread_only=unread, limit=limit, offset=offset)
    return NotificationList(data=[_notification(r) for r in rows],
                            pagination=Pagination(total=total, limit=limit, offset=offset),
                            unread=await store.unread_count(db, user_id))


async def unread_count(db: Database, user_id: str) -> int:
    return await store.unread_count(db, user_id)


async def mark_read(db: Database, tenant_id: str, user_id: str, notification_id: str,
                    read: bool = True) -> Notification:
    """Marks one of the user's notifications read (or unread again); another user's is a 404."""
    async with db.transaction() as tx:
        row = await store.get(tx, tenant_id, user_id, notification_id)
        if row is None:
            raise NotFound("No such notification.")
        if (row["read_at"] is not None) != read:
            await store.set_read(tx, notification_id, now_iso() if read else None)
        row = await store.get(tx, tenant_id, user_id, notification_id)
    assert row is not None
    return _notification(row)


async def mark_all_read(db: Database, tenant_id: str, user_id: str) -> int:
    async with db.transaction() as tx:
        return await store.mark_all_read(tx, tenant_id, user_id, now_iso())


async def mail_switch(db: Database, user_id: str) -> bool:
    return await store.mail_switch(db, user_id)


async def set_mail_switch(db: Database, tenant_id: str, user_id: str, on: object) -> bool:
    if not isinstance(on, bool):
        raise InvalidInput("notify_mail must be true or false", field="notify_mail")
    async with db.transaction() as tx:
        was = await store.mail_switch(tx, user_id)
        if was != on:
            await store.set_mail_switch(tx, tenant_id, user_id, on)
            await audit.record(tx, tenant_id, "user.notify_mail", "user", user_id, {"notify_mail": [was, on]})
    return on
