"""SQL of case_versions: one row per state a case has had (its history); every query filters on tenant_id.

A version keeps the shared steps its text used (``shared_steps``, migration 0044), as they were when it
was recorded: an old version reads as it was executed and approved then, whatever the shared steps
say today.
"""

from __future__ import annotations

import json
from collections import defaultdict

from tms.db import Database, Row, Transaction

VERSION_COLUMNS = (
    "version, code, title, bdd_content, status, priority, layer, is_e2e, automation_status, tags, tickets, "
    "section_id, project_id, actor_type, actor_id, actor_name, created_at, custom_fields, shared_steps"
)

# the shared steps each case uses, directly (shared_step_uses) or through others (shared_step_nesting,
# walked downwards): index reads from the cases' links, never a parse of their text
_SHARED_CLOSURE = (
    "WITH RECURSIVE down (case_id, step_id) AS ("
    "SELECT case_id, shared_step_id FROM shared_step_uses WHERE tenant_id = ? "
    "AND case_id IN (SELECT value FROM json_each(?)) "
    "UNION SELECT d.case_id, n.shared_step_id FROM shared_step_nesting n JOIN down d ON n.parent_id = d.step_id "
    "WHERE n.tenant_id = ?) "
    "SELECT d.case_id, s.name, s.version, s.steps FROM down d JOIN shared_steps s ON s.id = d.step_id "
    "WHERE s.tenant_id = ? ORDER BY d.case_id, s.name"
)


async def _shared_steps(tx: Transaction, tenant_id: str, case_ids: list[str]) -> dict[str, str]:
    """{case id: JSON [{name, version, steps}]} of the cases that use shared steps (one query)."""
    rows = await tx.fetch_all(_SHARED_CLOSURE, (tenant_id, json.dumps(case_ids), tenant_id, tenant_id))
    used: defaultdict[str, list[dict[str, object]]] = defaultdict(list)
    for row in rows:
        used[row["case_id"]].append({"name": row["name"], "version": row["version"], "steps": row["steps"]})
    return {case_id: json.dumps(steps) for case_id, steps in used.items()}


async def snapshot(
    tx: Transaction, tenant_id: str, case_ids: list[str], actor: tuple[str, str | None, str], at: str
) -> None:
    """Records the cases' current state (their current ``version``) as a version row, in one statement,
    with the shared steps it uses (one read and one batch, for the cases that use any).

    Called right after the write that set that state, in the same transaction.
    """
    if not case_ids:
        return
    actor_type, actor_id, actor_name = actor
    await tx.execute(
        "INSERT INTO case_versions (tenant_id, case_id, version, code, title, bdd_content, status, priority, "
        "layer, is_e2e, automation_status, tags, tickets, section_id, project_id, custom_fields, actor_type, "
        "actor_id, actor_name, created_at) "
        "SELECT tenant_id, id, version, code, title, bdd_content, status, priority, layer, is_e2e, "
        "automation_status, tags, tickets, section_id, project_id, custom_fields, ?, ?, ?, ? FROM test_cases "
        "WHERE +tenant_id = ? AND id IN (SELECT value FROM json_each(?))",
        (actor_type, actor_id, actor_name, at, tenant_id, json.dumps(case_ids)),
    )
    shared = await _shared_steps(tx, tenant_id, case_ids)
    if shared:
        await tx.executemany(
            "UPDATE case_versions SET shared_steps = ? WHERE case_id = ? AND tenant_id = ? "
            "AND version = (SELECT version FROM test_cases WHERE id = ? AND tenant_id = ?)",
            [(steps, case_id, tenant_id, case_id, tenant_id) for case_id, steps in shared.items()],
        )


async def list_versions(
    db: Database, tenant_id: str, case_id: str, limit: int, offset: int
) -> tuple[list[Row], int]:
    rows = await db.fetch_all(
        f"SELECT {VERSION_COLUMNS} FROM case_versions WHERE case_id = ? AND tenant_id = ? "
        "ORDER BY version DESC LIMIT ? OFFSET ?",
        (case_id, tenant_id, limit, offset),
    )
    total = await db.fetch_value(
        "SELECT COUNT(*) FROM case_versions WHERE case_id = ? AND tenant_id = ?", (case_id, tenant_id)
    )
    return rows, int(total)


async def get_version(db: Database, tenant_id: str, case_id: str, version: int) -> Row | None:
    return await db.fetch_one(
        f"SELECT {VERSION_COLUMNS} FROM case_versions WHERE case_id = ? AND version = ? AND tenant_id = ?",
        (case_id, version, tenant_id),
    )
