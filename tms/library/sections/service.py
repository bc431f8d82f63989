"""Sections: the library's folder tree, one per project, any depth.

The tree is kept as parent ids plus materialised paths (see tms/library/sections/store.py). Reading a
project's tree with its counts is two indexed queries (the sections, and one grouped count of the
project's cases per section) and one pass in Python, whatever the size of the library.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tms.db import Database, Row, Transaction
from tms.errors import Conflict, InvalidInput, NotFound
from tms.ids import new_id, now_iso
from tms.library.cases import store as case_store
from tms.library.cases.service import record_versions
from tms.library.projects import store as project_store
from tms.library.sections import store as section_store
from tms.library.sections.models import Section, SectionCreate, SectionUpdate
from tms.team.audit import service as audit

PATH_SEPARATOR = " / "


def clean_name(name: str) -> str:
    name = " ".join(name.split())
    if not name:
        raise InvalidInput("name must not be blank", field="name")
    if PATH_SEPARATOR.strip() in name.split():
        raise InvalidInput('name must not contain " / ": it separates sections in a path', field="name")
    return name


def depth_of(path: str) -> int:
    return path.count("/") - 2


def ordered(rows: list[Row]) -> list[Row]:
    """Parents before children; siblings by position, then name: the order the tree shows."""
    children: dict[str | None, list[Row]] = {}
    for row in rows:
        children.setdefault(row["parent_id"], []).append(row)
    for siblings in children.values():
        siblings.sort(key=lambda r: (r["position"], r["name"].lower(), r["created_at"]))
    out: list[Row] = []
    stack = list(reversed(children.get(None, [])))
    while stack:
        row = stack.pop()
        out.append(row)
        stack.extend(reversed(children.get(row["id"], [])))
    return out


def _sections(rows: list[Row], counts: dict[str | None, int]) -> list[Section]:
    rows = ordered(rows)
    subtree = {row["id"]: counts.get(row["id"], 0) for row in rows}
    for row in reversed(rows):  # children come after their parent: add each subtree into its parent
        if row["parent_id"] is not None and row["parent_id"] in subtree:
            subtree[row["parent_id"]] += subtree[row["id"]]
    return [
        Section(
            id=row["id"], project_id=row["project_id"], parent_id=row["parent_id"], name=row["name"],
            description=row["description"], position=row["position"], case_count=counts.get(row["id"], 0),
            subtree_case_count=subtree[row["id"]], depth=depth_of(row["path"]), created_at=row["created_at"],
            updated_at=row["updated_at"],
        )
        for row in rows
    ]


async def _project_or_404(db: Database | Transaction, tenant_id: str, project_id: str) -> None:
    if not await project_store.project_exists(db, tenant_id, project_id):
        raise NotFound(f"project {project_id} not found", field="project_id")


async def list_sections(db: Database, tenant_id: str, project_id: str | None) -> list[Section]:
    if not project_id:
        raise InvalidInput("project_id is required: sections belong to a project", field="project_id")
    await _project_or_404(db, tenant_id, project_id)
    rows = await section_store.list_for_project(db, tenant_id, project_id)
    counts = await section_store.case_counts(db, tenant_id, project_id)
    return _sections(rows, counts)


async def tree(db: Database, tenant_id: str, project_id: str) -> tuple[list[Section], int, int]:
    """(sections in tree order with counts, cases in no section, all cases of the project)."""
    rows = await section_store.list_for_project(db, tenant_id, project_id)
    counts = await section_store.case_counts(db, tenant_id, project_id)
    return _sections(rows, counts), counts.get(None, 0), sum(counts.values())


async def _section_or_404(db: Database | Transaction, tenant_id: str, section_id: str, field: str | None = None) -> Row:
    row = await section_store.get_section(db, tenant_id, section_id)
    if row is None:
        raise NotFound(f"section {section_id} not found", field=field)
    return row


async def _one(db: Database | Transaction, tenant_id: str, section_id: str) -> Section:
    row = await _section_or_404(db, tenant_id, section_id)
    ids = await section_store.subtree_ids(db, tenant_id, row["project_id"], row["path"])
    by_section = await section_store.counts_in(db, tenant_id, ids)
    return Section(
        id=row["id"], project_id=row["project_id"], parent_id=row["parent_id"], name=row["name"],
        description=row["description"], position=row["position"], case_count=by_section.get(row["id"], 0),
        subtree_case_count=sum(by_section.values()), depth=depth_of(row["path"]), created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


async def get_section(db: Database, tenant_id: str, section_id: str) -> Section:
    return await _one(db, tenant_id, section_id)


async def _parent_in_project(tx: Transaction, tenant_id: str, project_id: str, parent_id: str) -> Row:
    parent = await _section_or_404(tx, tenant_id, parent_id, field="parent_id")
    if parent["project_id"] != project_id:
        raise InvalidInput(f"parent section {parent_id} belongs to another project", field="parent_id")
    return parent


async def _name_free(tx: Transaction, tenant_id: str, project_id: str, parent_id: str | None, name: str,
                     self_id: str | None = None) -> None:
    other = await section_store.sibling_named(tx, tenant_id, project_id, parent_id, name)
    if other is not None and other != self_id:
        raise Conflict(f"a section named {name!r} already exists there", field="name")


async def create_section(db: Database, tenant_id: str, body: SectionCreate) -> Section:
    name = clean_name(body.name)
    now = now_iso()
    section_id = new_id()
    async with db.transaction() as tx:
        await _project_or_404(tx, tenant_id, body.project_id)
        prefix = "/"
        if body.parent_id is not None:
            parent = await _parent_in_project(tx, tenant_id, body.project_id, body.parent_id)
            prefix = parent["path"]
        await _name_free(tx, tenant_id, body.project_id, body.parent_id, name)
        position = body.position
        if position is None:
            position = await section_store.next_position(tx, tenant_id, body.project_id, body.parent_id)
        await section_store.insert_sections(tx, [{
            "id": section_id, "tenant_id": tenant_id, "project_id": body.project_id, "parent_id": body.parent_id,
            "name": name, "description": body.description, "position": position, "path": f"{prefix}{section_id}/",
            "created_at": now, "updated_at": now,
        }])
        await audit.record(tx, tenant_id, "section.created", "section", section_id,
                           {"name": [None, name], "parent_id": [None, body.parent_id]})
        return await _one(tx, tenant_id, section_id)


async def update_section(db: Database, tenant_id: str, section_id: str, body: SectionUpdate) -> Section:
    changes: dict[str, Any] = {}
    if body.name is not msgspec.UNSET:
        changes["name"] = clean_name(body.name)
    for field in ("description", "position", "parent_id"):
        value = getattr(body, field)
        if value is not msgspec.UNSET:
            changes[field] = value
    async with db.transaction() as tx:
        row = await _section_or_404(tx, tenant_id, section_id)
        changes = {k: v for k, v in changes.items() if row[k] != v}
        project_id = row["project_id"]
        if "parent_id" in changes:
            new_prefix = "/"
            if changes["parent_id"] is not None:
                parent = await _parent_in_project(tx, tenant_id, project_id, changes["parent_id"])
                if parent["path"].startswith(row["path"]):
                    what = "itself" if parent["id"] == section_id else "one of its own subsections"
                    raise Conflict(f"a section cannot move under {what}", field="parent_id")
                new_prefix = parent["path"]
            await section_store.rebase_paths(tx, tenant_id, project_id, row["path"], f"{new_prefix}{section_id}/")
        if "name" in changes or "parent_id" in changes:
            await _name_free(tx, tenant_id, project_id, changes.get("parent_id", row["parent_id"]),
                             changes["name"] if "name" in changes else row["name"], self_id=section_id)
        if changes:
            await section_store.update_fields(tx, tenant_id, section_id, {**changes, "updated_at": now_iso()})
            await audit.record(tx, tenant_id, "section.updated", "section", section_id,
                               {k: [row[k], v] for k, v in changes.items()})
        return await _one(tx, tenant_id, section_id)


async def delete_section(db: Database, tenant_id: str, section_id: str) -> None:
    """Removes the section and loses nothing: its cases and subsections move up to its parent."""
    async with db.transaction() as tx:
        row = await _section_or_404(tx, tenant_id, section_id)
        parent_id = row["parent_id"]
        parent_prefix = row["path"][: -len(section_id) - 1]
        children = await section_store.children_of(tx, tenant_id, section_id)
        for child in children:
            other = await section_store.sibling_named(tx, tenant_id, row["project_id"], parent_id, child["name"])
            if other is not None and other != section_id:
                raise Conflict(
                    f"its subsection {child['name']!r} would meet a section of the same name; rename one first",
                    field="name",
                )
        now = now_iso()
        case_ids = await section_store.case_ids_in(tx, tenant_id, section_id)
        if case_ids:
            await case_store.set_fields_many(tx, tenant_id, case_ids, {"section_id": parent_id}, now)
            await record_versions(tx, tenant_id, case_ids, now)
        # the subsections keep their own subtrees; only the deleted level leaves their paths
        await section_store.reparent_children(tx, tenant_id, section_id, parent_id)
        await section_store.rebase_paths(tx, tenant_id, row["project_id"], row["path"], parent_prefix)
        await section_store.delete_section(tx, tenant_id, section_id)
        await audit.record(tx, tenant_id, "section.deleted", "section", section_id,
                           {"name": [row["name"], None], "cases_moved": len(case_ids),
                            "subsections_moved": len(children)})


async def pickable(db: Database, tenant_id: str, projects: list[Any]) -> list[tuple[str, list[tuple[str, str]]]]:
    """Every section of the tenant for a picker: [(project name, [(section id, indented label)])]."""
    rows = await section_store.list_for_tenant(db, tenant_id)
    by_project: dict[str, list[Row]] = {}
    for row in rows:
        by_project.setdefault(row["project_id"], []).append(row)
    groups = []
    for project in projects:
        ordered_rows = ordered(by_project.get(project.id, []))
        if ordered_rows:
            groups.append((project.name, [(r["id"], "\u2003" * depth_of(r["path"]) + r["name"]) for r in ordered_rows]))
    return groups


async def path_names(db: Database, tenant_id: str, section_id: str | None) -> list[tuple[str, str]]:
    """[(id, name)] from the root down to the section (the breadcrumb of a case's section)."""
    if not section_id:
        return []
    row = await section_store.get_section(db, tenant_id, section_id)
    if row is None:
        return []
    ids = row["path"].strip("/").split("/")
    names = {r["id"]: r["name"] for r in await section_store.get_many(db, tenant_id, ids)}
    return [(i, names[i]) for i in ids if i in names]
