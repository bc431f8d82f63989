"""Test cases: codes, defaults, Gherkin validation and the library's CRUD.

Other parts reuse these functions (the web UI, AI drafts through ``create_cases``), so every rule of
the contract about cases lives here and not in a handler.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from tms.db import Database, Row, Transaction
from tms.ids import new_id, now_iso
from tms.models.cases import CASE_STATUSES, CODE_PATTERN, Case, CaseCreate, CaseUpdate, Pagination, Ticket
from tms.services.errors import Conflict, InvalidInput, NotFound
from tms.services.gherkin import validate_gherkin
from tms.services.paging import check_choice, page_window
from tms.services.retest import set_needs_retest
from tms.store import cases as case_store
from tms.store import projects as project_store
from tms.store import tenants as tenant_store

CODE_RE = re.compile(CODE_PATTERN)
_tickets_decoder = msgspec.json.Decoder(list[Ticket])
_tags_decoder = msgspec.json.Decoder(list[str])
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
    )


def _clean_tags(tags: list[str]) -> list[str]:
    return list(dict.fromkeys(tag.strip() for tag in tags if tag.strip()))


def _clean_title(title: str) -> str:
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


async def _check_projects(tx: Transaction, tenant_id: str, project_ids: set[str]) -> None:
    """An unknown project (or another tenant's) is a missing resource: 404, as for ids in paths."""
    for project_id in sorted(project_ids):
        if not await project_store.project_exists(tx, tenant_id, project_id):
            raise NotFound(f"project {project_id} not found", field="project_id")


async def _assign_codes(tx: Transaction, tenant_id: str, count: int) -> list[str]:
    """``count`` fresh TC-<n> codes from the tenant's counter, skipping any a client already took."""
    codes: list[str] = []
    while len(codes) < count:
        need = count - len(codes)
        first = await tenant_store.next_case_numbers(tx, tenant_id, need)
        candidates = [f"TC-{n}" for n in range(first, first + need)]
        taken = await case_store.codes_taken(tx, tenant_id, candidates)
        codes.extend(code for code in candidates if code not in taken)
    return codes


async def create_case(db: Database, tenant_id: str, body: CaseCreate | dict[str, Any]) -> Case:
    return (await create_cases(db, tenant_id, [body]))[0]


async def create_cases(db: Database, tenant_id: str, bodies: list[CaseCreate] | list[Any]) -> list[Case]:
    """Creates all cases in one transaction or none (a bad one raises, naming its index if several)."""
    many = len(bodies) > 1

    def where(index: int, exc: InvalidInput) -> InvalidInput:
        return InvalidInput(f"cases[{index}]: {exc.detail}", field=exc.field) if many else exc

    creates: list[CaseCreate] = []
    for index, raw in enumerate(bodies):
        try:
            body = _as_create(raw)
            _clean_title(body.title)
            validate_gherkin(body.bdd_content)
        except InvalidInput as exc:
            raise where(index, exc) from None
        creates.append(body)
    client_codes = [body.code for body in creates if body.code is not None]
    duplicates = sorted({code for code in client_codes if client_codes.count(code) > 1})
    if duplicates:
        raise Conflict(f"code {duplicates[0]} is given more than once", field="code")

    now = now_iso()
    async with db.transaction() as tx:
        await _check_projects(tx, tenant_id, {b.project_id for b in creates if b.project_id is not None})
        taken = await case_store.codes_taken(tx, tenant_id, client_codes)
        if taken:
            raise Conflict(f"code {sorted(taken)[0]} is already used by another test case", field="code")
        assigned = iter(await _assign_codes(tx, tenant_id, len(creates) - len(client_codes)))
        rows = []
        for body in creates:
            rows.append((
                new_id(), tenant_id, body.code or next(assigned), _clean_title(body.title), body.bdd_content,
                body.project_id, body.status, body.priority, body.layer, int(body.is_e2e),
                body.automation_status, _encoder.encode(_clean_tags(body.tags)).decode(),
                _encoder.encode(body.tickets).decode(), now, now,
            ))
        await case_store.insert_cases(tx, rows)
    return [
        Case(id=row[0], code=row[2], title=row[3], bdd_content=row[4], project_id=row[5], status=row[6],
             priority=row[7], layer=row[8], is_e2e=bool(row[9]), automation_status=row[10],
             tags=_tags_decoder.decode(row[11]), tickets=list(body.tickets), created_at=now, updated_at=now)
        for row, body in zip(rows, creates, strict=True)
    ]


async def find_case_row(db: Database | Transaction, tenant_id: str, id_or_code: str) -> Row | None:
    """A case by code when the value looks like one (codes start upper-case, cuids with 'c'), else by id."""
    if CODE_RE.match(id_or_code):
        return await case_store.get_case_by_code(db, tenant_id, id_or_code)
    return await case_store.get_case(db, tenant_id, id_or_code)


async def get_case(db: Database, tenant_id: str, id_or_code: str) -> Case:
    row = await find_case_row(db, tenant_id, id_or_code)
    if row is None:
        raise NotFound(f"test case {id_or_code} not found")
    return case_from_row(row)


async def list_cases(
    db: Database,
    tenant_id: str,
    *,
    project_id: str | None = None,
    status: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
    needs_retest: bool | None = None,
) -> tuple[list[Case], Pagination]:
    """A page of the library in creation order. An unknown project_id simply matches nothing."""
    limit, offset = page_window(limit, offset)
    check_choice(status, CASE_STATUSES, "status")
    rows, total = await case_store.list_cases(
        db, tenant_id, project_id=project_id, status=status, limit=limit, offset=offset, needs_retest=needs_retest
    )
    return [case_from_row(row) for row in rows], Pagination(total=total, limit=limit, offset=offset)


async def update_case(db: Database, tenant_id: str, id_or_code: str, body: CaseUpdate) -> Case:
    changes: dict[str, Any] = {}
    for field in body.__struct_fields__:
        value = getattr(body, field)
        if value is msgspec.UNSET or field == "needs_retest":
            continue
        if field == "title":
            value = _clean_title(value)
        elif field == "bdd_content":
            validate_gherkin(value)
        elif field == "is_e2e":
            value = int(value)
        elif field == "tags":
            value = _encoder.encode(_clean_tags(value)).decode()
        elif field == "tickets":
            value = _encoder.encode(value).decode()
        changes[field] = value
    async with db.transaction() as tx:
        row = await find_case_row(tx, tenant_id, id_or_code)
        if row is None:
            raise NotFound(f"test case {id_or_code} not found")
        if changes.get("code", row["code"]) == row["code"]:
            changes.pop("code", None)
        elif await case_store.codes_taken(tx, tenant_id, [changes["code"]]):
            raise Conflict(f"code {changes['code']} is already used by another test case", field="code")
        if changes.get("project_id") is not None and changes["project_id"] != row["project_id"]:
            await _check_projects(tx, tenant_id, {changes["project_id"]})
        if changes:
            changes["updated_at"] = now_iso()
            await case_store.update_case(tx, tenant_id, row["id"], changes)
        if body.needs_retest is not msgspec.UNSET:
            # the retest queue owns the flag and fires retest.required, in this transaction
            await set_needs_retest(tx, db, tenant_id, row["id"], body.needs_retest)
        updated = await case_store.get_case(tx, tenant_id, row["id"])
    assert updated is not None
    return case_from_row(updated)


async def delete_case(db: Database, tenant_id: str, id_or_code: str) -> None:
    """Removes the case from the library; its past results stay in their runs with code and status."""
    async with db.transaction() as tx:
        row = await find_case_row(tx, tenant_id, id_or_code)
        if row is None:
            raise NotFound(f"test case {id_or_code} not found")
        await case_store.delete_case(tx, tenant_id, row["id"])
