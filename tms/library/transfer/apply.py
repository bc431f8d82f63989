"""Applying a case import's plan (``tms.library.transfer.plan``) inside the caller's transaction: the
sections it names created as needed, new cases inserted, changed ones updated with a new version, the
custom fields a TestRail file brings created, and one audit entry with the counts.
"""

from __future__ import annotations

from typing import Any

from tms.db import Transaction
from tms.ids import new_ids, now_iso
from tms.library.cases import service as case_service
from tms.library.cases import store as case_store
from tms.library.fields import service as field_service
from tms.library.projects import store as project_store
from tms.library.sections import store as section_store
from tms.library.sections.service import PATH_SEPARATOR
from tms.library.transfer.csvfile import Parsed
from tms.library.transfer.export import section_paths
from tms.library.transfer.plan import Plan
from tms.team.audit import service as audit


async def apply_plan(tx: Transaction, tenant_id: str, project_id: str, plan: Plan, parsed: Parsed) -> None:
    """Writes ``plan`` (made by ``plan_import`` in this same transaction) for ``parsed``, the file it came from."""
    now = now_iso()
    sections = await section_store.list_for_project(tx, tenant_id, project_id)
    by_path = {tuple(p.split(PATH_SEPARATOR)): sid for sid, p in section_paths(sections).items()}
    paths = {row["id"]: row["path"] for row in sections}
    if plan.new_sections:
        ids = iter(new_ids(len(plan.new_sections)))
        rows: list[dict[str, Any]] = []
        for path in plan.new_sections:  # parents come first: each path after its prefixes
            section_id = next(ids)
            parent_id = by_path.get(path[:-1]) if len(path) > 1 else None
            prefix = paths[parent_id] if parent_id else "/"
            rows.append({"id": section_id, "tenant_id": tenant_id, "project_id": project_id, "parent_id": parent_id,
                         "name": path[-1], "description": parsed.sections.get(path), "position": 0,
                         "path": f"{prefix}{section_id}/", "created_at": now, "updated_at": now})
            by_path[path] = section_id
            paths[section_id] = rows[-1]["path"]
        siblings: dict[str | None, int] = {}
        for new in rows:  # new sections follow the existing ones of their parent, in file order
            if new["parent_id"] not in siblings:
                siblings[new["parent_id"]] = await section_store.next_position(
                    tx, tenant_id, project_id, new["parent_id"])
            new["position"] = siblings[new["parent_id"]]
            siblings[new["parent_id"]] += 1
        await section_store.insert_sections(tx, rows)
    fields_created = []
    if parsed.inferred:
        fields_created = await field_service.create_missing(tx, tenant_id, project_id, list(parsed.inferred.values()))
    if plan.creates:
        bodies = []
        for row, body in plan.creates:
            body.project_id = project_id
            body.section_id = by_path.get(row.section) if row.section else None
            bodies.append(body)
        # their custom field values were checked (defaults added) by the plan
        await case_service.insert_checked(tx, tenant_id, bodies, now, copy_fields=True)
    if plan.updates:
        columns = sorted({k for _, _, changes in plan.updates for k in changes} | {"project_id"})
        rows = []
        # issue 26: under require_review an import sets no case READY that is not approved
        strict = bool(await project_store.requires_review(tx, tenant_id, [project_id]))
        for row, old, changes in plan.updates:
            values = {c: old[c] for c in columns}
            values.update(changes)
            if strict and values.get("status") == "READY" and old["status"] != "READY" \
                    and old.get("review_state") != "APPROVED":
                values["status"] = old["status"]
            if isinstance(values.get("section_id"), tuple):
                values["section_id"] = by_path.get(row.section) if row.section else None
            values["project_id"] = project_id
            rows.append({**values, "id": old["id"], "tenant_id": tenant_id, "updated_at": now})
        await case_store.update_many(tx, rows, columns)
        edited = [old["id"] for _, old, changes in plan.updates if set(changes) - {"status"}]
        await case_store.reopen_approved(tx, tenant_id, edited, await case_service.actor_user_id(tx, tenant_id), now)
        await case_service.relink_shared_steps(tx, tenant_id, [old["id"] for _, old, _ in plan.updates])
        await case_service.record_versions(tx, tenant_id, [old["id"] for _, old, _ in plan.updates], now)
    await audit.record(tx, tenant_id, "case.imported", "project", project_id, {
        "created": plan.created, "updated": plan.updated, "unchanged": plan.unchanged, "rejected": plan.rejected,
        "sections_created": len(plan.new_sections), "custom_fields_created": fields_created,
    })
