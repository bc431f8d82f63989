"""Quarantine: tests set aside per project. Their failures are stored and shown, marked, but a quality
gate does not count them. An entry with ``expires_at`` stops applying by itself once that moment has
passed (every read compares with the current time; nothing needs to run)."""

from __future__ import annotations

from datetime import UTC, datetime

from tms.db import Database, Row, Transaction
from tms.errors import InvalidInput, NotFound
from tms.failures.quarantine import store
from tms.failures.quarantine.models import QuarantineCreate, QuarantineEntry
from tms.http.paging import page_window
from tms.ids import iso, new_id, now_iso
from tms.library.cases.models import Pagination
from tms.runs.service import require_project
from tms.team.audit import service as audit


class Quarantined:
    """The entries of a project that apply now: is a result (code, title) set aside?"""

    def __init__(self, rows: list[Row]) -> None:
        self.codes = {row["test_case_code"] for row in rows if row["test_case_code"]}
        self.titles = {row["title"] for row in rows if row["title"]}

    def __contains__(self, test: tuple[str | None, str | None]) -> bool:
        code, title = test
        return (code is not None and code in self.codes) or (title is not None and title in self.titles)


async def active(db: Database | Transaction, tenant_id: str, project_id: str) -> Quarantined:
    return Quarantined(await store.active_for_project(db, tenant_id, project_id, now_iso()))


def _entry(row: Row, now: str, unknown: bool) -> QuarantineEntry:
    return QuarantineEntry(
        id=row["id"], project_id=row["project_id"], test_case_code=row["test_case_code"], title=row["title"],
        reason=row["reason"], expires_at=row["expires_at"],
        active=row["expires_at"] is None or row["expires_at"] > now, unknown_test=unknown,
        created_at=row["created_at"], updated_at=row["updated_at"],
    )


async def _unknown(db: Database, tenant_id: str, rows: list[Row]) -> set[str]:
    """Ids of entries that name no case (code) or no case or recent result (title) of their project."""
    codes = [row["test_case_code"] for row in rows if row["test_case_code"]]
    known_codes = await store.known_codes(db, tenant_id, codes) if codes else set()
    unknown = {row["id"] for row in rows if row["test_case_code"] and row["test_case_code"] not in known_codes}
    by_project: dict[str, list[Row]] = {}
    for row in rows:
        if row["title"]:
            by_project.setdefault(row["project_id"], []).append(row)
    for project_id, entries in by_project.items():
        known = await store.known_titles(db, tenant_id, project_id, [row["title"] for row in entries])
        unknown |= {row["id"] for row in entries if row["title"] not in known}
    return unknown


async def create(db: Database, tenant_id: str, body: QuarantineCreate) -> QuarantineEntry:
    code = (body.test_case_code or "").strip() or None
    title = (body.title or "").strip() or None
    if (code is None) == (title is None):
        raise InvalidInput("name the test by exactly one of test_case_code or title", field="test_case_code")
    reason = body.reason.strip()
    if not reason:
        raise InvalidInput("reason must not be blank", field="reason")
    expires_at = None
    if body.expires_at is not None:
        moment = body.expires_at if body.expires_at.tzinfo else body.expires_at.replace(tzinfo=UTC)
        if moment <= datetime.now(UTC):
            raise InvalidInput("expires_at must be in the future", field="expires_at")
        expires_at = iso(moment)
    await require_project(db, tenant_id, body.project_id)
    entry_id, now = new_id(), now_iso()
    row = {"id": entry_id, "tenant_id": tenant_id, "project_id": body.project_id, "test_case_code": code,
           "title": title, "reason": reason, "expires_at": expires_at, "created_at": now}
    async with db.transaction() as tx:
        await require_project(tx, tenant_id, body.project_id)
        await store.insert(tx, row)
        await audit.record(tx, tenant_id, "quarantine.created", "quarantine", entry_id,
                           {"test_case_code": code, "title": title, "reason": reason, "expires_at": expires_at})
        stored = await store.get(tx, tenant_id, entry_id)
    assert stored is not None
    return _entry(stored, now, bool(await _unknown(db, tenant_id, [stored])))


async def list_entries(db: Database, tenant_id: str, *, project_id: str | None = None, limit: int | None = None,
                       offset: int | None = None) -> tuple[list[QuarantineEntry], Pagination]:
    limit, offset = page_window(limit, offset)
    rows, total = await store.page(db, tenant_id, project_id=project_id, limit=limit, offset=offset)
    unknown = await _unknown(db, tenant_id, rows)
    now = now_iso()
    return [_entry(row, now, row["id"] in unknown) for row in rows], Pagination(total=total, limit=limit,
                                                                                 offset=offset)


async def delete(db: Database, tenant_id: str, entry_id: str) -> None:
    async with db.transaction() as tx:
        old = await store.get(tx, tenant_id, entry_id)
        if old is None or not await store.delete(tx, tenant_id, entry_id):
            raise NotFound(f"quarantine entry {entry_id} not found")
        await audit.record(tx, tenant_id, "quarantine.deleted", "quarantine", entry_id,
                           {"test_case_code": old["test_case_code"], "title": old["title"]})
