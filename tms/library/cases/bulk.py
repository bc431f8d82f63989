"""Bulk actions on many cases at once (the cases page's selection): one transaction, one audit entry.

Each action changes only the cases where something differs; every changed case gets a new version
recorded in the same transaction, exactly as a PATCH would.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tms.attachments import service as attachment_service
from tms.attachments.objects import AttachmentStore
from tms.db import Database, Transaction
from tms.errors import InvalidInput
from tms.ids import now_iso
from tms.library.cases import service as case_service
from tms.library.cases import store as case_store
from tms.library.cases.models import CASE_STATUSES, CaseCreate, Ticket
from tms.library.projects import service as project_service
from tms.library.sections import store as section_store
from tms.team.audit import service as audit

FIELD_ACTIONS = {
    "status": CASE_STATUSES,
    "priority": case_service.PRIORITIES,
    "automation_status": case_service.AUTOMATION_STATUSES,
    "layer": (*case_service.LAYERS, ""),
}
ACTIONS = ("move", *FIELD_ACTIONS, "add_tag", "remove_tag", "clone", "delete")
_tags = msgspec.json.Decoder(list[str])
_tickets = msgspec.json.Decoder(list[Ticket])
_fields = msgspec.json.Decoder(dict[str, Any])
_encoder = msgspec.json.Encoder()


async def _check_reviewed(tx: Transaction, tenant_id: str, ids: list[str]) -> None:
    """READY in bulk: refused when a selected case of a project with require_review is not approved."""
    rows = await case_store.rows_by_ids(tx, tenant_id, ids)
    strict = await project_service.requires_review(tx, tenant_id, [r["project_id"] for r in rows if r["project_id"]])
    waiting = [r["code"] for r in rows if r["project_id"] in strict and r["status"] != "READY"
               and r["review_state"] != "APPROVED"]
    if waiting:
        raise InvalidInput(f"{', '.join(waiting[:5])}{' …' if len(waiting) > 5 else ''}: "
                           f"{case_service.READY_NEEDS_REVIEW}", field="value")


async def apply(db: Database, tenant_id: str, ids: list[str], action: str, value: str = "",
                store: AttachmentStore | None = None) -> int:
    """Runs ``action`` on the cases ``ids`` (ids of other tenants are ignored); returns how many changed.
    ``store``: deleted cases' own attachments leave it once the deletion commits (without it, the
    hourly orphan sweep collects them)."""
    changed = await _apply_action(db, tenant_id, ids, action, value, store)
    await case_store.refresh_statistics_after(db, changed)
    return changed


async def _apply_action(db: Database, tenant_id: str, ids: list[str], action: str, value: str,
                        store: AttachmentStore | None) -> int:
    if action not in ACTIONS:
        raise InvalidInput(f"action must be one of {', '.join(ACTIONS)}", field="action")
    if not ids:
        raise InvalidInput("select at least one test case", field="ids")
    value = value.strip()
    now = now_iso()
    async with db.transaction() as tx:
        changed: list[str] = []
        if action == "move":
            changes: dict[str, Any] = {"section_id": value or None}
            if value:
                section = await section_store.get_section(tx, tenant_id, value)
                if section is None:
                    raise InvalidInput("choose a section", field="value")
                changes["project_id"] = section["project_id"]
            changed = await case_store.set_fields_many(tx, tenant_id, ids, changes, now)
            if value:  # the shared steps the moved cases name must exist in their new project
                await case_service.relink_shared_steps(tx, tenant_id, changed)
        elif action in FIELD_ACTIONS:
            if value not in FIELD_ACTIONS[action]:
                raise InvalidInput(f"choose one of {', '.join(v for v in FIELD_ACTIONS[action] if v)}", field="value")
            if action == "status" and value == "READY":
                await _check_reviewed(tx, tenant_id, ids)
            changed = await case_store.set_fields_many(tx, tenant_id, ids, {action: value or None}, now)
        elif action in ("add_tag", "remove_tag"):
            tag = value
            if not tag or len(tag) > 100:
                raise InvalidInput("write the tag (at most 100 characters)", field="value")
            rows = []
            for row in await case_store.rows_by_ids(tx, tenant_id, ids):
                tags = _tags.decode(row["tags"])
                new = [*tags, tag] if action == "add_tag" and tag not in tags else [t for t in tags if t != tag]
                if new != tags:
                    rows.append({"id": row["id"], "tenant_id": tenant_id, "updated_at": now,
                                 "tags": _encoder.encode(new).decode()})
            await case_store.update_many(tx, rows, ["tags"])
            changed = [row["id"] for row in rows]
        elif action == "clone":
            originals = await case_store.rows_by_ids(tx, tenant_id, ids)
            copies = [
                CaseCreate(title=f"{row['title'][:193]} (copy)", bdd_content=row["bdd_content"],
                           project_id=row["project_id"], status=row["status"], priority=row["priority"],
                           layer=row["layer"], is_e2e=bool(row["is_e2e"]), automation_status=row["automation_status"],
                           tags=_tags.decode(row["tags"]), tickets=_tickets.decode(row["tickets"]),
                           section_id=row["section_id"], custom_fields=_fields.decode(row["custom_fields"]))
                for row in originals
            ]
            # the copies hold the values their originals hold (retired fields' included), as they are
            created = await case_service.insert_checked(tx, tenant_id, copies, now, copy_fields=True)
            await audit.record(tx, tenant_id, "case.bulk_cloned", "case", None,
                               {"selected": len(ids), "created": len(created)})
            return len(created)
        else:  # delete
            if store is not None:
                await attachment_service.forget_case_attachments(tx, db, store, tenant_id, ids)
            count = await case_store.delete_many(tx, tenant_id, ids)
            await audit.record(tx, tenant_id, "case.bulk_deleted", "case", None,
                               {"selected": len(ids), "deleted": count})
            return count
        if action != "status":  # a change of content asks approved reviews again
            await case_store.reopen_approved(tx, tenant_id, changed, await case_service.actor_user_id(tx, tenant_id),
                                             now)
        await case_service.record_versions(tx, tenant_id, changed, now)
        await audit.record(tx, tenant_id, f"case.bulk_{action}", "case", None,
                           {"selected": len(ids), "changed": len(changed), "value": value or None})
    return len(changed)
