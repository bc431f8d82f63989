"""Test cases: codes, defaults, Gherkin validation and the library's CRUD.

Other parts reuse these functions (the web UI, AI drafts through ``create_cases``), so every rule of
the contract about cases lives here and not in a handler.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import msgspec

from tms.attachments import service as attachment_service
from tms.attachments.objects import AttachmentStore
from tms.db import Database, Row, Transaction
from tms.errors import Conflict, InvalidInput, NotFound
from tms.ids import new_ids, now_iso
from tms.library.cases import store as case_store
from tms.library.cases import versions as version_store
from tms.library.cases import views as case_views
from tms.library.cases.models import (
    CODE_PATTERN,
    Case,
    CaseCreate,
    Review,
    Ticket,
)
from tms.library.fields import service as field_service
from tms.library.fields import values as field_values
from tms.library.gherkin.service import PARSE_THREAD_THRESHOLD, validate_gherkin
from tms.library.projects import store as project_store
from tms.library.sections import store as section_store
from tms.library.shared_steps import uses as shared_uses
from tms.team.audit import service as audit
from tms.team.tenants import service as tenant_service
from tms.team.tokens import service as token_service

PRIORITIES = ("LOW", "MEDIUM", "HIGH", "CRITICAL")
LAYERS = ("UI", "API", "INTEGRATION", "UNIT")
AUTOMATION_STATUSES = ("MANUAL", "IN_PROGRESS", "AUTOMATED", "FLAKY", "ARCHIVED")
# the fields a version records, and those a PATCH compares to decide whether anything changed
VERSIONED = ("code", "title", "bdd_content", "project_id", "status", "priority", "layer", "is_e2e",
             "automation_status", "tags", "tickets", "section_id", "custom_fields")

CODE_RE = re.compile(CODE_PATTERN)


_tickets_decoder = msgspec.json.Decoder(list[Ticket])
_tags_decoder = msgspec.json.Decoder(list[str])
_fields_decoder = msgspec.json.Decoder(dict[str, Any])
_encoder = msgspec.json.Encoder()


def case_from_row(row: Row) -> Case:
    return Case(
        id=row["id"],
        code=row["code"],
        title=row["title"],
        bdd_content=row["bdd_content"],
        project_id=row["project_id"],
        status=row["status"],
        priority=row["priority"],
        layer=row["layer"],
        is_e2e=bool(row["is_e2e"]),
        automation_status=row["automation_status"],
        tags=_tags_decoder.decode(row["tags"]),
        tickets=_tickets_decoder.decode(row["tickets"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        needs_retest=bool(row.get("needs_retest")),
        retest_reason=row.get("retest_reason"),
        retest_bug_key=row.get("retest_bug_key"),
        retest_flagged_at=row.get("retest_flagged_at"),
        section_id=row.get("section_id"),
        version=row.get("version") or 1,
        custom_fields=_fields_decoder.decode(row.get("custom_fields") or "{}"),
        review=Review(state=row.get("review_state") or "NONE", reviewer_id=row.get("reviewer_id"),
                      updated_at=row.get("review_updated_at"), comment=row.get("review_comment"),
                      author_id=row.get("review_author_id")),
    )


async def actor_user_id(db: Database | Transaction, tenant_id: str) -> str | None:
    """The person the current request acts for: the signed-in user, or the user who created the API token."""
    actor = audit.current_actor()
    if actor.type == "user":
        return actor.id
    if actor.type == "token" and actor.id is not None:
        return await token_service.creator_of(db, tenant_id, actor.id)
    return None


READY_NEEDS_REVIEW = "this project requires review: a case becomes READY only when a reviewer approves it"


def actor_tuple() -> tuple[str, str | None, str]:
    """Who the current request acts as, the way case_versions stores it."""
    actor = audit.current_actor()
    return actor.type, actor.id, actor.name


async def record_versions(tx: Transaction, tenant_id: str, case_ids: list[str], at: str) -> None:
    """Records the current state of these cases as their new version (same transaction as the write)."""
    await version_store.snapshot(tx, tenant_id, case_ids, actor_tuple(), at)


async def relink_shared_steps(tx: Transaction, tenant_id: str, case_ids: list[str]) -> None:
    """After a write that changed these cases' text or project (bulk move, import): their shared steps
    checked and linked again (a 400 naming ``bdd_content`` when a name is unknown in the new project)."""
    if case_ids:
        rows = await case_store.rows_by_ids(tx, tenant_id, case_ids)
        await shared_uses.link_cases(tx, tenant_id, [(r["id"], r["project_id"], r["bdd_content"]) for r in rows])


async def case_rows(db: Database | Transaction, tenant_id: str, case_ids: list[str]) -> list[Row]:
    """The stored rows of these cases (another tenant's ids are skipped)."""
    return await case_store.rows_by_ids(db, tenant_id, case_ids)


async def new_versions(tx: Transaction, tenant_id: str, case_ids: list[str], at: str,
                       texts: dict[str, str] | None = None) -> None:
    """A new version of each case whose shared steps changed (``texts``: new bdd_content of some of them,
    when a shared step's rename rewrote their `* shared:` lines), in the caller's transaction."""
    if not case_ids:
        return
    texts = texts or {}
    rewritten = [{"id": case_id, "tenant_id": tenant_id, "updated_at": at, "bdd_content": text}
                 for case_id, text in texts.items()]
    await case_store.update_many(tx, rewritten, ["bdd_content"])
    await case_store.bump_versions(tx, tenant_id, [case_id for case_id in case_ids if case_id not in texts], at)
    await record_versions(tx, tenant_id, case_ids, at)


def clean_tags(tags: list[str]) -> list[str]:
    return list(dict.fromkeys(tag.strip() for tag in tags if tag.strip()))


def clean_title(title: str) -> str:
    title = title.strip()
    if not title:
        raise InvalidInput("title must not be blank", field="title")
    return title


def _as_create(body: CaseCreate | dict[str, Any]) -> CaseCreate:
    if isinstance(body, CaseCreate):
        return body
    try:
        return msgspec.convert(body, CaseCreate)
    except msgspec.ValidationError as exc:
        raise InvalidInput(str(exc)) from None


async def check_projects(tx: Transaction, tenant_id: str, project_ids: set[str]) -> None:
    """An unknown project (or another tenant's) is a missing resource: 404, as for ids in paths."""
    for project_id in sorted(project_ids):
        if not await project_store.project_exists(tx, tenant_id, project_id):
            raise NotFound(f"project {project_id} not found", field="project_id")


async def _assign_codes(tx: Transaction, tenant_id: str, count: int) -> list[str]:
    """``count`` fresh TC-<n> codes from the tenant's counter, skipping any a client already took."""
    codes: list[str] = []
    while len(codes) < count:
        need = count - len(codes)
        first = await tenant_service.next_case_numbers(tx, tenant_id, need)
        candidates = [f"TC-{n}" for n in range(first, first + need)]
        taken = await case_store.codes_taken(tx, tenant_id, candidates)
        codes.extend(code for code in candidates if code not in taken)
    return codes


async def create_case(db: Database, tenant_id: str, body: CaseCreate | dict[str, Any]) -> Case:
    return (await create_cases(db, tenant_id, [body]))[0]


def check_creates(bodies: list[CaseCreate] | list[Any]) -> list[CaseCreate]:
    """Validates every body (title, Gherkin, codes given twice); raises naming the index if several."""
    many = len(bodies) > 1

    def where(index: int, exc: InvalidInput) -> InvalidInput:
        return InvalidInput(f"cases[{index}]: {exc.detail}", field=exc.field) if many else exc

    creates: list[CaseCreate] = []
    for index, raw in enumerate(bodies):
        try:
            body = _as_create(raw)
            clean_title(body.title)
            validate_gherkin(body.bdd_content)
        except InvalidInput as exc:
            raise where(index, exc) from None
        creates.append(body)
    client_codes = [body.code for body in creates if body.code is not None]
    duplicates = sorted({code for code in client_codes if client_codes.count(code) > 1})
    if duplicates:
        raise Conflict(f"code {duplicates[0]} is given more than once", field="code")
    return creates


def _gherkin_chars(bodies: list[CaseCreate] | list[Any]) -> int:
    return sum(len(body.bdd_content) if isinstance(body, CaseCreate)
               else len(str(body.get("bdd_content") or "")) if isinstance(body, dict) else 0
               for body in bodies)


async def create_cases(db: Database, tenant_id: str, bodies: list[CaseCreate] | list[Any], *,
                       drafted: bool = False) -> list[Case]:
    """Creates all cases in one transaction or none (a bad one raises, naming its index if several).

    READY in a project with require_review is refused (400 naming ``status``); ``drafted`` (AI drafts)
    cases of such projects arrive with their review REQUESTED, the saving user as author."""
    # parsing costs ~2 us a character: long Gherkin is checked in a worker thread, off the event loop
    if _gherkin_chars(bodies) < PARSE_THREAD_THRESHOLD:
        creates = check_creates(bodies)
    else:
        creates = await asyncio.to_thread(check_creates, bodies)
    needs_users = any(field_values.needs_users(body.custom_fields) for body in creates)
    users = await field_service.tenant_users(db, tenant_id) if needs_users else None
    async with db.transaction() as tx:
        now = now_iso()
        created = await insert_checked(tx, tenant_id, creates, now, users=users, refuse_ready=True)
        if drafted:
            ids = [case.id for case in created]
            await case_store.mark_drafted(tx, tenant_id, ids, await actor_user_id(tx, tenant_id), now)
            created = [case_from_row(row) for row in await case_store.rows_by_ids(tx, tenant_id, ids)]
        if len(created) == 1:
            await audit.record(tx, tenant_id, "case.created", "case", created[0].id,
                               {"code": created[0].code, "title": created[0].title})
        else:  # a bulk write (AI drafts saved): one entry with the count and the codes
            await audit.record(tx, tenant_id, "case.created", "case", None,
                               {"created": len(created), "codes": [case.code for case in created][:100]})
    await case_store.refresh_statistics_after(db, len(created))
    return created


async def section_projects(tx: Transaction | Database, tenant_id: str, section_ids: set[str]) -> dict[str, str]:
    """{section id: its project id}; an unknown section (or another tenant's) is a 404 naming section_id."""
    rows = await section_store.get_many(tx, tenant_id, sorted(section_ids))
    found = {row["id"]: row["project_id"] for row in rows}
    for section_id in sorted(section_ids - set(found)):
        raise NotFound(f"section {section_id} not found", field="section_id")
    return found


def placed(project_id: str | None, section_id: str | None, sections: dict[str, str]) -> str | None:
    """The case's project once its section is known: the section's, which a given project must match."""
    if section_id is None:
        return project_id
    section_project = sections[section_id]
    if project_id is not None and project_id != section_project:
        raise InvalidInput(f"section {section_id} belongs to another project than {project_id}", field="section_id")
    return section_project


async def case_field_values(
    tx: Transaction, tenant_id: str, creates: list[CaseCreate], projects: list[str | None],
    users: field_values.Users | None,
) -> list[dict[str, Any]]:
    """Each body's custom field values checked against its project's fields, defaults added (a 400
    naming ``custom_fields.<key>``, with the case's index when there are several)."""
    fields: dict[str | None, dict[str, Any]] = {}
    out = []
    for index, (body, project_id) in enumerate(zip(creates, projects, strict=True)):
        if project_id not in fields:
            fields[project_id] = await field_service.fields_of(tx, tenant_id, project_id)
        try:
            out.append(field_values.merge_case_fields(fields[project_id], {}, body.custom_fields, creating=True,
                                                       users=users))
        except InvalidInput as exc:
            if len(creates) == 1:
                raise
            raise InvalidInput(f"cases[{index}]: {exc.detail}", field=exc.field) from None
    return out


async def insert_checked(tx: Transaction, tenant_id: str, creates: list[CaseCreate], now: str, *,
                         users: field_values.Users | None = None, copy_fields: bool = False,
                         refuse_ready: bool = False) -> list[Case]:
    """Inserts already checked bodies (see ``check_creates``) in the caller's transaction, with version 1.

    A READY case in a project with require_review is refused (``refuse_ready``: 400 naming ``status``)
    or, for copies and imports, stored as DRAFT: it has not been reviewed.

    Custom field values are checked here, where each case's project is known (``users`` for `user`
    fields: ``field_service.tenant_users``); ``copy_fields`` stores them as given (clones of stored cases).
    """
    sections = await section_projects(tx, tenant_id, {b.section_id for b in creates if b.section_id is not None})
    projects = [placed(body.project_id, body.section_id, sections) for body in creates]
    await check_projects(tx, tenant_id, {p for p in projects if p is not None})
    statuses = [body.status for body in creates]
    ready_projects = [p for p, status in zip(projects, statuses, strict=True) if p is not None and status == "READY"]
    strict = await project_store.requires_review(tx, tenant_id, ready_projects)
    if strict:
        if refuse_ready:
            raise InvalidInput(READY_NEEDS_REVIEW, field="status")
        statuses = ["DRAFT" if status == "READY" and p in strict else status
                    for p, status in zip(projects, statuses, strict=True)]
    client_codes = [body.code for body in creates if body.code is not None]
    taken = await case_store.codes_taken(tx, tenant_id, client_codes)
    if taken:
        raise Conflict(f"code {sorted(taken)[0]} is already used by another test case", field="code")
    if copy_fields:
        values = [dict(body.custom_fields) for body in creates]
    else:
        values = await case_field_values(tx, tenant_id, creates, projects, users)
    assigned = iter(await _assign_codes(tx, tenant_id, len(creates) - len(client_codes)))
    ids = new_ids(len(creates))
    rows = []
    for case_id, body, project_id, fields, status in zip(ids, creates, projects, values, statuses, strict=True):
        rows.append((
            case_id, tenant_id, body.code or next(assigned), clean_title(body.title), body.bdd_content,
            project_id, status, body.priority, body.layer, int(body.is_e2e),
            body.automation_status, _encoder.encode(clean_tags(body.tags)).decode(),
            _encoder.encode(body.tickets).decode(), now, now, body.section_id, 1, field_values.encode(fields),
        ))
    await case_store.insert_cases(tx, rows)
    await shared_uses.link_cases(tx, tenant_id, [(row[0], row[5], row[4]) for row in rows], new=True)
    await record_versions(tx, tenant_id, ids, now)
    return [
        Case(id=row[0], code=row[2], title=row[3], bdd_content=row[4], project_id=row[5], status=row[6],
             priority=row[7], layer=row[8], is_e2e=bool(row[9]), automation_status=row[10],
             tags=_tags_decoder.decode(row[11]), tickets=list(body.tickets), created_at=now, updated_at=now,
             section_id=row[15], version=1, custom_fields=fields)
        for row, body in zip(rows, creates, strict=True)
    ]


async def find_case_row(db: Database | Transaction, tenant_id: str, id_or_code: str) -> Row | None:
    """A case by code when the value looks like one (codes start upper-case, cuids with 'c'), else by id."""
    if CODE_RE.match(id_or_code):
        return await case_store.get_case_by_code(db, tenant_id, id_or_code)
    return await case_store.get_case(db, tenant_id, id_or_code)


async def titles_of(db: Database, tenant_id: str, ids: list[str]) -> dict[str, str]:
    """id -> title of these case ids (one query): a linked result reads as its case, not its test path."""
    return {row["id"]: row["title"] for row in await case_store.resolve_ids(db, tenant_id, sorted(set(ids)))}


async def result_history(db: Database, tenant_id: str, case_id: str, limit: int = 50) -> list[Row]:
    """The case's latest results across runs, newest first, with the run they belong to (the case page)."""
    return await case_views.result_history(db, tenant_id, case_id, limit)


async def retest_flag(db: Database, tenant_id: str, case_id: str) -> Row | None:
    """The case's retest columns: needs_retest, retest_reason, retest_bug_key, retest_flagged_at."""
    return await case_views.retest_flag(db, tenant_id, case_id)


async def get_case(db: Database, tenant_id: str, id_or_code: str) -> Case:
    row = await find_case_row(db, tenant_id, id_or_code)
    if row is None:
        raise NotFound(f"test case {id_or_code} not found")
    return case_from_row(row)


async def delete_case(db: Database, tenant_id: str, id_or_code: str, store: AttachmentStore) -> None:
    """Removes the case from the library; its past results stay in their runs with code and status.
    Its own attachments go with it (their objects once the deletion commits)."""
    async with db.transaction() as tx:
        row = await find_case_row(tx, tenant_id, id_or_code)
        if row is None:
            raise NotFound(f"test case {id_or_code} not found")
        await attachment_service.forget_case_attachments(tx, db, store, tenant_id, [row["id"]])
        await case_store.delete_case(tx, tenant_id, row["id"])
        await audit.record(tx, tenant_id, "case.deleted", "case", row["id"],
                           {"code": row["code"], "title": row["title"]})


# ---- look-ups for the runs domain (results name cases): the case store stays this domain's own -------

async def case_row(db: Database | Transaction, tenant_id: str, case_id: str) -> Row | None:
    """A case's stored row by id (None when it is not the tenant's)."""
    return await case_store.get_case(db, tenant_id, case_id)


async def resolve_codes(db: Database | Transaction, tenant_id: str, codes: list[str]) -> list[Row]:
    """(id, code, title) of the cases with these codes: one query however many."""
    return await case_store.resolve_codes(db, tenant_id, codes)


async def resolve_ids(db: Database | Transaction, tenant_id: str, ids: list[str]) -> list[Row]:
    """(id, code, title) of the cases with these ids: one query however many."""
    return await case_store.resolve_ids(db, tenant_id, ids)


async def versions_of(db: Database | Transaction, tenant_id: str, ids: list[str]) -> dict[str, int]:
    """id -> current version of those of these case ids that exist in the tenant (one query)."""
    return await case_store.versions_of(db, tenant_id, ids)
