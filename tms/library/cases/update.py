"""Changing a test case (PATCH and the case page's edit): the fields given, checked; project and section
kept consistent; a new version when anything differs, the approved review asked again, the audit entry."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from tms.db import Database, Row, Transaction
from tms.errors import Conflict, InvalidInput, NotFound
from tms.failures.retest.service import set_needs_retest
from tms.ids import now_iso
from tms.library.cases import store as case_store
from tms.library.cases.models import Case, CaseUpdate
from tms.library.cases.service import (
    READY_NEEDS_REVIEW,
    actor_user_id,
    case_from_row,
    check_projects,
    clean_tags,
    clean_title,
    find_case_row,
    placed,
    record_versions,
    section_projects,
)
from tms.library.fields import service as field_service
from tms.library.fields import values as field_values
from tms.library.gherkin.service import PARSE_THREAD_THRESHOLD, validate_gherkin
from tms.library.projects import store as project_store
from tms.library.shared_steps import uses as shared_uses
from tms.team.audit import service as audit

_fields_decoder = msgspec.json.Decoder(dict[str, Any])
_encoder = msgspec.json.Encoder()


def _encoded_changes(body: CaseUpdate) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    for field in body.__struct_fields__:
        value = getattr(body, field)
        if value is msgspec.UNSET or field in ("needs_retest", "custom_fields"):
            continue
        if field == "title":
            value = clean_title(value)
        elif field == "bdd_content":
            validate_gherkin(value)
        elif field == "is_e2e":
            value = int(value)
        elif field == "tags":
            value = _encoder.encode(clean_tags(value)).decode()
        elif field == "tickets":
            value = _encoder.encode(value).decode()
        changes[field] = value
    return changes


async def _place_update(tx: Transaction, tenant_id: str, row: Row, changes: dict[str, Any]) -> None:
    """Keeps project and section consistent: a section sets the project (a given one must match);
    moving to another project without naming a section takes the case out of its old project's section."""
    if changes.get("section_id") is not None:
        sections = await section_projects(tx, tenant_id, {changes["section_id"]})
        changes["project_id"] = placed(changes.get("project_id"), changes["section_id"], sections)
    elif "project_id" in changes and changes["project_id"] != row["project_id"] and "section_id" not in changes:
        changes["section_id"] = None
    if changes.get("project_id") is not None and changes["project_id"] != row["project_id"]:
        await check_projects(tx, tenant_id, {changes["project_id"]})


AUDITED_FIELDS = ("code", "title", "bdd_content", "project_id", "section_id", "status", "priority", "layer",
                  "is_e2e", "automation_status", "tags", "tickets", "needs_retest", "custom_fields", "review_state")


async def update_case(db: Database, tenant_id: str, id_or_code: str, body: CaseUpdate) -> Case:
    """Changes the fields given; a change of anything makes a new version (none when nothing differs)."""
    if body.bdd_content is msgspec.UNSET or len(body.bdd_content) < PARSE_THREAD_THRESHOLD:
        changes = _encoded_changes(body)
    else:  # a long Gherkin text is parsed in a worker thread, off the event loop
        changes = await asyncio.to_thread(_encoded_changes, body)
    given_fields = None if body.custom_fields is msgspec.UNSET else body.custom_fields
    users = await field_service.tenant_users(db, tenant_id) if field_values.needs_users(given_fields) else None
    async with db.transaction() as tx:
        row = await find_case_row(tx, tenant_id, id_or_code)
        if row is None:
            raise NotFound(f"test case {id_or_code} not found")
        if changes.get("code", row["code"]) == row["code"]:
            changes.pop("code", None)
        elif await case_store.codes_taken(tx, tenant_id, [changes["code"]]):
            raise Conflict(f"code {changes['code']} is already used by another test case", field="code")
        await _place_update(tx, tenant_id, row, changes)
        if given_fields is not None:
            fields = await field_service.fields_of(tx, tenant_id, changes.get("project_id", row["project_id"]))
            merged = field_values.merge_case_fields(fields, _fields_decoder.decode(row["custom_fields"]),
                                                     given_fields, creating=False, users=users)
            changes["custom_fields"] = field_values.encode(merged)
        changes = {field: value for field, value in changes.items() if row[field] != value}
        if changes.get("status") == "READY" and row["review_state"] != "APPROVED":
            project_id = changes.get("project_id", row["project_id"])
            if project_id is not None and await project_store.requires_review(tx, tenant_id, [project_id]):
                raise InvalidInput(READY_NEEDS_REVIEW, field="status")
        if changes:
            changes["updated_at"] = now_iso()
            await case_store.update_case(tx, tenant_id, row["id"], changes)
            if set(changes) - {"status", "updated_at"}:  # a change of content asks an approved review again
                await case_store.reopen_approved(tx, tenant_id, [row["id"]], await actor_user_id(tx, tenant_id),
                                                 changes["updated_at"])
            if "bdd_content" in changes or "project_id" in changes:
                await shared_uses.link_cases(tx, tenant_id, [(row["id"], changes.get("project_id", row["project_id"]),
                                                              str(changes.get("bdd_content", row["bdd_content"])))])
            await record_versions(tx, tenant_id, [row["id"]], changes["updated_at"])
        if body.needs_retest is not msgspec.UNSET:
            # the retest queue owns the flag and fires retest.required, in this transaction
            await set_needs_retest(tx, db, tenant_id, row["id"], body.needs_retest)
        updated = await case_store.get_case(tx, tenant_id, row["id"])
        assert updated is not None
        diff = audit.changes_between(row, updated, AUDITED_FIELDS)
        if diff:
            await audit.record(tx, tenant_id, "case.updated", "case", row["id"], diff)
    return case_from_row(updated)
