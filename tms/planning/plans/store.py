"""SQL of test plans: the plans themselves, the choice of their cases, their runs' summaries."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from tms.db import Database, Row, Transaction
from tms.db.paging import equality_filters, page_in_creation_order

COLUMNS = "id, project_id, milestone_id, name, description, selection, case_count, created_at, updated_at"
_ids = msgspec.json.Decoder(list[str])
_triples = msgspec.json.Decoder(list[tuple[str, str, str | None]])


async def get_plan(db: Database | Transaction, tenant_id: str, plan_id: str) -> Row | None:
    return await db.fetch_one(f"SELECT {COLUMNS} FROM test_plans WHERE tenant_id = ? AND id = ?", (tenant_id, plan_id))


async def list_plans(
    db: Database, tenant_id: str, *, project_id: str | None, milestone_id: str | None, limit: int, offset: int
) -> tuple[list[Row], int]:
    where, params = equality_filters(tenant_id, project_id=project_id, milestone_id=milestone_id)
    return await page_in_creation_order(db, "test_plans", COLUMNS, where, params, limit, offset)


async def runs_of(db: Database | Transaction, tenant_id: str, plan_ids: list[str]) -> list[Row]:
    """The runs (id and summary counts) of a page of plans, in creation order, in one query."""
    if not plan_ids:
        return []
    return await db.fetch_all(
        "SELECT id, plan_id, results_total, results_passed, results_failed, results_broken, results_skipped, "
        "results_unknown FROM test_runs WHERE plan_id IN (SELECT value FROM json_each(?)) AND tenant_id = ? "
        "ORDER BY rowid",
        (json.dumps(plan_ids), tenant_id),
    )


async def resolve_refs(
    db: Database | Transaction, tenant_id: str, refs: list[str]
) -> list[tuple[str, str, str | None]]:
    """(id, code, project_id) of the cases named by code or cuid: one indexed query for the codes, a
    second by primary key only for the refs that matched no code. JSON arrays in and out."""
    if not refs:
        return []
    found = _triples.decode(await db.fetch_value(
        "SELECT json_group_array(json_array(id, code, project_id)) FROM test_cases "
        "WHERE tenant_id = ? AND code IN (SELECT value FROM json_each(?))",
        (tenant_id, json.dumps(refs)),
    ) or "[]")
    codes = {code for _, code, _ in found}
    rest = [ref for ref in refs if ref not in codes]
    if rest:
        # "+tenant_id": look ids up by primary key, not by walking the tenant's index
        found.extend(_triples.decode(await db.fetch_value(
            "SELECT json_group_array(json_array(id, code, project_id)) FROM test_cases "
            "WHERE +tenant_id = ? AND id IN (SELECT value FROM json_each(?))",
            (tenant_id, json.dumps(rest)),
        ) or "[]"))
    return found


async def known_sections(
    db: Database | Transaction, tenant_id: str, project_id: str, section_ids: list[str]
) -> set[str]:
    packed = await db.fetch_value(
        "SELECT json_group_array(id) FROM sections WHERE tenant_id = ? AND project_id = ? "
        "AND id IN (SELECT value FROM json_each(?))",
        (tenant_id, project_id, json.dumps(section_ids)),
    )
    return set(_ids.decode(packed or "[]"))


async def select_cases(
    db: Database | Transaction,
    tenant_id: str,
    project_id: str,
    *,
    case_ids: list[str],
    tags: list[str],
    section_ids: list[str],
) -> list[str]:
    """Ids of the project's cases that are listed, carry any of the tags, or sit in one of the
    sections or their subsections; in library (creation) order, each once.

    Each part is an index look-up that yields rowids (the listed ids by primary key, tags through
    ``case_tags``, a section subtree through ``sections_parent`` then ``test_cases_section``); their
    union is then read by rowid and kept to the project. No walk over the project's cases.
    """
    parts = ["SELECT rowid FROM test_cases WHERE id IN (SELECT value FROM json_each(:case_ids))"]
    params: dict[str, Any] = {"tenant_id": tenant_id, "project_id": project_id, "case_ids": json.dumps(case_ids)}
    prefix = ""
    if tags:
        parts.append("SELECT case_rowid FROM case_tags WHERE tenant_id = :tenant_id "
                     "AND tag IN (SELECT value FROM json_each(:tags))")
        params["tags"] = json.dumps(tags)
    if section_ids:
        prefix = (
            "WITH RECURSIVE tree(id) AS (SELECT value FROM json_each(:section_ids) "
            "UNION SELECT s.id FROM sections s JOIN tree ON s.parent_id = tree.id "
            "WHERE s.tenant_id = :tenant_id AND s.project_id = :project_id) "
        )
        parts.append("SELECT rowid FROM test_cases WHERE section_id IN (SELECT id FROM tree)")
        params["section_ids"] = json.dumps(section_ids)
    packed = await db.fetch_value(
        f"{prefix}SELECT json_group_array(id) FROM (SELECT c.id FROM test_cases c "
        f"WHERE c.rowid IN ({' UNION '.join(parts)}) AND c.tenant_id = :tenant_id AND c.project_id = :project_id "
        "ORDER BY c.rowid)",
        params,
    )
    return _ids.decode(packed or "[]")


async def insert_plan(tx: Transaction, row: dict[str, Any]) -> None:
    await tx.execute(
        "INSERT INTO test_plans (id, tenant_id, project_id, milestone_id, name, description, selection, case_count, "
        "created_at, updated_at) VALUES (:id, :tenant_id, :project_id, :milestone_id, :name, :description, "
        ":selection, :case_count, :created_at, :created_at)",
        row,
    )


async def update_plan(tx: Transaction, tenant_id: str, plan_id: str, changes: dict[str, Any]) -> None:
    """Changes the plan; a new milestone_id moves the plan's runs to that milestone too."""
    allowed = {"name", "description", "milestone_id", "updated_at"}
    if set(changes) - allowed:
        raise ValueError(f"not updatable: {sorted(set(changes) - allowed)}")
    assignments = ", ".join(f"{column} = ?" for column in changes)
    await tx.execute(f"UPDATE test_plans SET {assignments} WHERE tenant_id = ? AND id = ?",
                     (*changes.values(), tenant_id, plan_id))
    if "milestone_id" in changes:
        await tx.execute("UPDATE test_runs SET milestone_id = ? WHERE plan_id = ? AND tenant_id = ?",
                         (changes["milestone_id"], plan_id, tenant_id))


async def delete_plan(tx: Transaction, tenant_id: str, plan_id: str) -> int:
    """Deletes the plan and keeps its runs with their results (plan_id null); returns how many."""
    runs = await tx.execute("UPDATE test_runs SET plan_id = NULL WHERE plan_id = ? AND tenant_id = ?",
                            (plan_id, tenant_id))
    await tx.execute("DELETE FROM test_plans WHERE tenant_id = ? AND id = ?", (tenant_id, plan_id))
    return runs


async def project_tags(db: Database, tenant_id: str, project_id: str, limit: int = 200) -> list[str]:
    """The distinct tags of a project's cases, for the plan form's hint."""
    packed = await db.fetch_value(
        "SELECT json_group_array(value) FROM (SELECT DISTINCT t.value FROM test_cases c, json_each(c.tags) t "
        "WHERE c.tenant_id = ? AND c.project_id = ? ORDER BY t.value LIMIT ?)",
        (tenant_id, project_id, limit),
    )
    return _ids.decode(packed or "[]")


async def project_sections(db: Database, tenant_id: str, project_id: str) -> list[Row]:
    """id, parent_id, name of the project's sections, for the plan form (only when sections exist)."""
    return await db.fetch_all(
        "SELECT id, parent_id, name FROM sections WHERE tenant_id = ? AND project_id = ? ORDER BY position, name",
        (tenant_id, project_id),
    )
