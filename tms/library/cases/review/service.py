"""Case review (issue 26): a person asks a reviewer; the reviewer approves (the case becomes READY) or
requests changes with a comment (it stays DRAFT).

The rules, decided here and documented in docs/library.md:
- ``review.author_id`` is whoever wrote the version under review: the requester, the editor whose
  change reopened an approved review, the user who saved AI drafts. Under the project's
  ``require_review`` the author may neither review nor approve that version (409); without it anyone
  with write access may approve, the author included.
- Under ``require_review`` a case reaches READY only by approval: a PATCH (or a create) setting READY
  without an approval is a 400 naming ``status`` (``tms.library.cases``: ``update.update_case``,
  ``service.create_cases``; a bulk status change in ``bulk.py``; copies and imports arrive DRAFT).
- A change of an approved case's content (anything but its status) asks for review again: REQUESTED,
  same reviewer, the editor as author; under ``require_review`` a READY case also goes back to DRAFT
  (``case_store.reopen_approved``, called by ``update_case`` and the bulk actions).
- Approving needs an open request (REQUESTED or CHANGES_REQUESTED); requesting changes needs a REQUESTED
  one: anything else is a 409. Each step is one transaction with its audit entry; an approval that makes
  the case READY also records a case version (status changes are versions).
"""

from __future__ import annotations

from typing import Any

from tms.config import Config
from tms.db import Database, Row, Transaction
from tms.errors import Conflict, InvalidInput, NotFound
from tms.http.paging import page_window
from tms.ids import now_iso
from tms.library.cases import service as case_service
from tms.library.cases import store as case_store
from tms.library.cases.models import Case, Pagination
from tms.library.projects import service as project_service
from tms.notifications.inbox import service as inbox
from tms.team import service as team_service
from tms.team.audit import service as audit

REVIEWER_ROLES = ("tester", "admin", "owner")


async def _case_row(tx: Transaction, tenant_id: str, id_or_code: str) -> Row:
    row = await case_service.find_case_row(tx, tenant_id, id_or_code)
    if row is None:
        raise NotFound(f"test case {id_or_code} not found")
    return row


async def _strict(tx: Transaction, tenant_id: str, row: Row) -> bool:
    project_id = row["project_id"]
    return project_id is not None and bool(await project_service.requires_review(tx, tenant_id, [project_id]))


async def check_reviewer(db: Database | Transaction, tenant_id: str, reviewer_id: str) -> Row:
    """A reviewer is an active tester, admin or owner of the tenant (another tenant's user: 404)."""
    member = await team_service.get_member(db, tenant_id, reviewer_id)
    if member is None:
        raise NotFound(f"user {reviewer_id} not found", field="reviewer_id")
    if not member["active"] or member["role"] not in REVIEWER_ROLES:
        raise InvalidInput("the reviewer must be an active tester or admin of this team", field="reviewer_id")
    return member


async def _finish(tx: Transaction, tenant_id: str, row: Row, changes: dict[str, Any], action: str,
                  details: dict[str, Any]) -> Case:
    await case_store.set_review(tx, tenant_id, row["id"], changes)
    await audit.record(tx, tenant_id, action, "case", row["id"], {"code": row["code"], **details})
    updated = await case_store.get_case(tx, tenant_id, row["id"])
    assert updated is not None
    return case_service.case_from_row(updated)


async def request_review(db: Database, config: Config, tenant_id: str, id_or_code: str, reviewer_id: str) -> Case:
    """The reviewer gets a "review_request" notification (in their inbox; mailed when SMTP is set)."""
    async with db.transaction() as tx:
        row = await _case_row(tx, tenant_id, id_or_code)
        await check_reviewer(tx, tenant_id, reviewer_id)
        author = await case_service.actor_user_id(tx, tenant_id)
        if author is not None and author == reviewer_id and await _strict(tx, tenant_id, row):
            raise InvalidInput("this project requires review by another person: choose someone else than "
                               "yourself", field="reviewer_id")
        changes = {"review_state": "REQUESTED", "reviewer_id": reviewer_id, "review_author_id": author,
                   "review_comment": None, "review_updated_at": now_iso()}
        await inbox.notify(tx, config, tenant_id=tenant_id, user_id=reviewer_id, kind="review_request",
                           title=f"Review requested: {row['code']} {row['title']}", link=f"/cases/{row['code']}#review",
                           actor_id=author)
        return await _finish(tx, tenant_id, row, changes, "case.review_requested",
                             {"review": [row["review_state"], "REQUESTED"], "reviewer_id": reviewer_id})


async def approve(db: Database, config: Config, tenant_id: str, id_or_code: str, comment: str | None = None) -> Case:
    """The case becomes READY (a new version when its status changes); the author is notified."""
    async with db.transaction() as tx:
        row = await _case_row(tx, tenant_id, id_or_code)
        if row["review_state"] not in ("REQUESTED", "CHANGES_REQUESTED"):
            raise Conflict(f"{row['code']} has no open review request to approve (review is "
                           f"{row['review_state']}); request a review first")
        reviewer = await case_service.actor_user_id(tx, tenant_id)
        if await _strict(tx, tenant_id, row):
            if reviewer is None:
                raise Conflict("this project requires review by a person: approve signed in, or with a token "
                               "a user created")
            if reviewer == row["review_author_id"]:
                raise Conflict(f"you wrote this version of {row['code']}, and its project requires review by "
                               "another person: the reviewer must approve it")
        now = now_iso()
        if row["status"] != "READY":
            await case_store.update_case(tx, tenant_id, row["id"], {"status": "READY", "updated_at": now})
            await case_service.record_versions(tx, tenant_id, [row["id"]], now)
        changes = {"review_state": "APPROVED", "reviewer_id": reviewer or row["reviewer_id"],
                   "review_comment": comment, "review_updated_at": now}
        await _tell_author(tx, config, tenant_id, row, f"Approved: {row['code']} {row['title']} is READY", reviewer)
        return await _finish(tx, tenant_id, row, changes, "case.review_approved",
                             {"review": [row["review_state"], "APPROVED"], "status": [row["status"], "READY"]})


async def reject(db: Database, config: Config, tenant_id: str, id_or_code: str, comment: str) -> Case:
    """Changes requested, with the reviewer's comment (required); the case's status stays as it is; the
    author is notified."""
    comment = comment.strip()
    if not comment:
        raise InvalidInput("say what should change: the comment must not be blank", field="comment")
    async with db.transaction() as tx:
        row = await _case_row(tx, tenant_id, id_or_code)
        if row["review_state"] != "REQUESTED":
            raise Conflict(f"{row['code']} has no open review request (review is {row['review_state']})")
        reviewer = await case_service.actor_user_id(tx, tenant_id)
        changes = {"review_state": "CHANGES_REQUESTED", "reviewer_id": reviewer or row["reviewer_id"],
                   "review_comment": comment, "review_updated_at": now_iso()}
        await _tell_author(tx, config, tenant_id, row, f"Changes requested: {row['code']} {row['title']}", reviewer)
        return await _finish(tx, tenant_id, row, changes, "case.review_rejected",
                             {"review": [row["review_state"], "CHANGES_REQUESTED"], "comment": comment[:500]})


async def _tell_author(tx: Transaction, config: Config, tenant_id: str, row: Row, title: str,
                       reviewer: str | None) -> None:
    """A "review_result" notification for the author of the version under review (none when unknown)."""
    if row["review_author_id"] is not None:
        await inbox.notify(tx, config, tenant_id=tenant_id, user_id=row["review_author_id"], kind="review_result",
                           title=title, link=f"/cases/{row['code']}#review", actor_id=reviewer)


async def list_waiting(db: Database, tenant_id: str, reviewer_id: str, *, limit: int | None = None,
                       offset: int | None = None) -> tuple[list[Case], Pagination]:
    """The cases whose review waits for this reviewer, newest request first."""
    limit, offset = page_window(limit, offset)
    rows, total = await case_store.waiting_for_review(db, tenant_id, reviewer_id, limit, offset)
    return [case_service.case_from_row(row) for row in rows], Pagination(total=total, limit=limit, offset=offset)


async def team(db: Database, tenant_id: str) -> tuple[dict[str, str], list[Row]]:
    """({user id: name or email} of the tenant, to name reviewers and authors on a page; who may be asked
    for a review: the active testers, admins and owners), from one read of the team."""
    users = await team_service.list_users(db, tenant_id)
    return ({row["id"]: row["name"] or row["email"] for row in users},
            [row for row in users if row["active"] and row["role"] in REVIEWER_ROLES])
