"""Comments on a case or a result: Markdown checked and rendered in a worker thread before the write,
``@email`` mentions resolved to the tenant's users and notified through the inbox, and an audit entry,
all in one transaction. Only the author (the same user, or the same API token) edits or deletes.

Limits: a body holds at most 10,000 characters (``markdown.BODY_MAX``) and mentions at most 20 people
(``markdown.MENTIONS_MAX``); a thread is read in pages of at most 500 (100 by default).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import msgspec

from tms.config import Config
from tms.db import Database, Row, Transaction
from tms.errors import Forbidden, InvalidInput, NotFound
from tms.http.paging import page_window
from tms.ids import new_id, now_iso
from tms.library.cases import service as cases
from tms.library.comments import store
from tms.library.comments.markdown import Checked, check_and_render
from tms.library.comments.models import Author, Comment, CommentList, Pagination
from tms.notifications.inbox import service as inbox
from tms.runs import service as runs
from tms.runs.executions import service as executions
from tms.team.audit import service as audit

AUDIT_TEXT_MAX = 500  # characters of a body kept in an audit entry


@dataclass(frozen=True, slots=True)
class Target:
    kind: str  # case | result
    id: str
    project_id: str | None
    label: str  # "case TC-12 'Log in'" for notifications
    link: str  # the page that shows the thread


async def target(db: Database, tenant_id: str, kind: str, target_id: str) -> Target:
    """The case (id or code) or result (linked or unlinked) of this tenant; else a 404."""
    if kind == "case":
        case = await cases.get_case(db, tenant_id, target_id)
        return Target("case", case.id, case.project_id, f"case {case.code} '{case.title}'", f"/cases/{case.code}")
    row, _ = await executions.get_result_row(db, tenant_id, target_id)
    run = await runs.get_run(db, tenant_id, row["run_id"])
    title = row["title"] or row["test_case_code"] or "a result"
    return Target("result", row["id"], run.project_id, f"result '{title}' in run '{run.name}'",
                  f"/results/{row['id']}/execute")


def comment_from_row(row: Row) -> Comment:
    return Comment(id=row["id"], target_kind=row["target_kind"], target_id=row["target_id"],
                   project_id=row["project_id"],
                   author=Author(kind=row["author_kind"], id=row["author_id"], name=row["author_name"]),
                   body=row["body"], body_html=row["body_html"], mentions=msgspec.json.decode(row["mentions"]),
                   created_at=row["created_at"], updated_at=row["updated_at"],
                   edited=row["updated_at"] != row["created_at"])


async def list_comments(db: Database, tenant_id: str, kind: str, target_id: str, *, limit: int | None = None,
                        offset: int | None = None) -> CommentList:
    limit, offset = page_window(limit, offset)
    found = await target(db, tenant_id, kind, target_id)
    rows, total = await store.page(db, tenant_id, found.kind, found.id, limit, offset)
    return CommentList(data=[comment_from_row(r) for r in rows],
                       pagination=Pagination(total=total, limit=limit, offset=offset))


async def thread(db: Database, tenant_id: str, kind: str, target_id: str, *, limit: int,
                 offset: int) -> CommentList:
    """A target's comments for a page that has already found the target (its own id, not a code)."""
    limit, offset = page_window(limit, offset)
    rows, total = await store.page(db, tenant_id, kind, target_id, limit, offset)
    return CommentList(data=[comment_from_row(r) for r in rows],
                       pagination=Pagination(total=total, limit=limit, offset=offset))


async def _checked(db: Database, tenant_id: str, body: str) -> tuple[Checked, list[str]]:
    """The rendering (in a worker thread: up to 10,000 characters of Markdown) and the mentioned users' ids."""
    checked = await asyncio.to_thread(check_and_render, body)
    users = {str(u["email"]).lower(): u for u in await store.users_by_email(db, tenant_id, checked.mentions)}
    ids = []
    for email in checked.mentions:
        user = users.get(email)
        if user is None:
            raise InvalidInput(f"body: @{email} is not a member of this team", field="body")
        if not user["active"]:
            raise InvalidInput(f"body: @{email} is deactivated and cannot be mentioned", field="body")
        ids.append(str(user["id"]))
    return checked, ids


def _author() -> audit.Actor:
    actor = audit.current_actor()
    if actor.type not in ("user", "token") or actor.id is None:
        raise Forbidden("Comments are written by a signed-in user or an API token.")
    return actor


async def _mention(tx: Transaction, config: Config, tenant_id: str, user_ids: list[str], actor: audit.Actor,
                   found: Target, comment_id: str) -> None:
    if user_ids:
        await inbox.notify_many(tx, config, tenant_id=tenant_id, user_ids=user_ids, kind="mention",
                                title=f"{actor.name} mentioned you on {found.label}",
                                link=f"{found.link}#comment-{comment_id}", actor_id=actor.id)


async def add_comment(db: Database, config: Config, tenant_id: str, kind: str, target_id: str,
                      body: str) -> Comment:
    actor = _author()
    found = await target(db, tenant_id, kind, target_id)
    checked, mentioned = await _checked(db, tenant_id, body)
    now, comment_id = now_iso(), new_id()
    row = {"id": comment_id, "tenant_id": tenant_id, "project_id": found.project_id, "target_kind": found.kind,
           "target_id": found.id, "author_kind": actor.type, "author_id": actor.id, "author_name": actor.name,
           "body": body, "body_html": checked.html, "mentions": msgspec.json.encode(mentioned).decode(),
           "created_at": now, "updated_at": now}
    async with db.transaction() as tx:
        await store.insert(tx, row)
        await audit.record(tx, tenant_id, "comment.created", "comment", comment_id,
                           {"target": f"{found.kind}:{found.id}", "body": body[:AUDIT_TEXT_MAX],
                            "mentions": len(mentioned)})
        await _mention(tx, config, tenant_id, mentioned, actor, found, comment_id)
        saved = await store.get(tx, tenant_id, comment_id)
    assert saved is not None
    return comment_from_row(saved)


async def _own(db: Database | Transaction, tenant_id: str, comment_id: str, actor: audit.Actor, verb: str) -> Row:
    row = await store.get(db, tenant_id, comment_id)
    if row is None:
        raise NotFound(f"comment {comment_id} not found")
    if (row["author_kind"], row["author_id"]) != (actor.type, actor.id):
        raise Forbidden(f"Only its author ({row['author_name']}) may {verb} this comment.")
    return row


async def get_comment(db: Database, tenant_id: str, comment_id: str) -> Comment:
    row = await store.get(db, tenant_id, comment_id)
    if row is None:
        raise NotFound(f"comment {comment_id} not found")
    return comment_from_row(row)


async def edit_comment(db: Database, config: Config, tenant_id: str, comment_id: str, body: str) -> Comment:
    """The author's new text; people it newly mentions are notified: never those an earlier text of it
    mentioned (a mention removed and added back notifies once)."""
    actor = _author()
    before = await _own(db, tenant_id, comment_id, actor, "edit")
    found = await target(db, tenant_id, before["target_kind"], before["target_id"])
    checked, mentioned = await _checked(db, tenant_id, body)
    async with db.transaction() as tx:
        row = await _own(tx, tenant_id, comment_id, actor, "edit")
        if row["body"] != body:
            earlier: list[str] = msgspec.json.decode(row["notified"] or row["mentions"])
            notified, told = list(dict.fromkeys([*earlier, *mentioned])), set(earlier)
            await store.update(tx, comment_id, body, checked.html, msgspec.json.encode(mentioned).decode(),
                               msgspec.json.encode(notified).decode(), now_iso())
            await audit.record(tx, tenant_id, "comment.updated", "comment", comment_id,
                               {"body": [row["body"][:AUDIT_TEXT_MAX], body[:AUDIT_TEXT_MAX]]})
            await _mention(tx, config, tenant_id, [u for u in mentioned if u not in told], actor, found,
                           comment_id)
        saved = await store.get(tx, tenant_id, comment_id)
    assert saved is not None
    return comment_from_row(saved)


async def delete_comment(db: Database, tenant_id: str, comment_id: str) -> Row:
    """Removes the author's comment; the row as it was."""
    actor = _author()
    async with db.transaction() as tx:
        row = await _own(tx, tenant_id, comment_id, actor, "delete")
        await store.delete(tx, comment_id)
        await audit.record(tx, tenant_id, "comment.deleted", "comment", comment_id,
                           {"target": f"{row['target_kind']}:{row['target_id']}",
                            "body": row["body"][:AUDIT_TEXT_MAX]})
    return row


def target_link(comment: Comment) -> str:
    """The page of a comment's thread (web redirects)."""
    if comment.target_kind == "case":
        return f"/cases/{comment.target_id}#comments"
    return f"/results/{comment.target_id}/execute#comments"


def check_author(comment: Comment) -> None:
    """A 403 unless the caller wrote ``comment`` (the edit form is not shown to anyone else)."""
    actor = _author()
    if (comment.author.kind, comment.author.id) != (actor.type, actor.id):
        raise Forbidden(f"Only its author ({comment.author.name}) may edit this comment.")
