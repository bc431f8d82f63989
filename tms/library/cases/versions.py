"""SQL of case_versions: one row per state a case has had (its history); every query filters on tenant_id."""

from __future__ import annotations

import json

from tms.db import Database, Row, Transaction

VERSION_COLUMNS = (
    "version, code, title, bdd_content, status, priority, layer, is_e2e, automation_status, tags, tickets, "
    "section_id, project_id, actor_type, actor_id, actor_name, created_at, custom_fields"
)


async def snapshot(
    tx: Transaction, tenant_id: str, case_ids: list[str], actor: tuple[str, str | None, str], at: str
) -> None:
    """Records the cases' current state (their current ``version``) as a version row, in one statement.

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
