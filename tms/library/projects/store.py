from __future__ import annotations

import json
from typing import Any

from tms.db import Database, Row, Transaction

# test_cases_count is computed, never stored, so it can never drift from the library.
_PROJECT_COLUMNS = (
    "p.id, p.name, p.description, p.active, p.environments, p.created_at, p.updated_at, p.archived_at, "
    "p.require_review, "
    "(SELECT COUNT(*) FROM test_cases c WHERE c.tenant_id = p.tenant_id AND c.project_id = p.id) "
    "AS test_cases_count"
)


async def list_projects(db: Database, tenant_id: str) -> list[Row]:
    return await db.fetch_all(
        f"SELECT {_PROJECT_COLUMNS} FROM projects p WHERE p.tenant_id = ? ORDER BY p.created_at, p.id",
        (tenant_id,),
    )


async def get_project(db: Database | Transaction, tenant_id: str, project_id: str) -> Row | None:
    return await db.fetch_one(
        f"SELECT {_PROJECT_COLUMNS} FROM projects p WHERE p.tenant_id = ? AND p.id = ?",
        (tenant_id, project_id),
    )


async def get_active_project(db: Database, tenant_id: str) -> Row | None:
    return await db.fetch_one(
        f"SELECT {_PROJECT_COLUMNS} FROM projects p WHERE p.tenant_id = ? AND p.active = 1", (tenant_id,)
    )


async def insert_project(
    tx: Transaction,
    *,
    project_id: str,
    tenant_id: str,
    name: str,
    description: str | None,
    environments_json: str,
    created_at: str,
) -> None:
    await tx.execute(
        "INSERT INTO projects (id, tenant_id, name, description, active, environments, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, 0, ?, ?, ?)",
        (project_id, tenant_id, name, description, environments_json, created_at, created_at),
    )


async def set_active_project(tx: Transaction, tenant_id: str, project_id: str, at: str) -> bool:
    """Makes one project the tenant's only active one, atomically; False if the id is unknown."""
    exists = await tx.fetch_value(
        "SELECT 1 FROM projects WHERE tenant_id = ? AND id = ?", (tenant_id, project_id)
    )
    if not exists:
        return False
    await tx.execute(
        "UPDATE projects SET active = 0, updated_at = ? WHERE tenant_id = ? AND active = 1 AND id != ?",
        (at, tenant_id, project_id),
    )
    await tx.execute(
        "UPDATE projects SET active = 1, updated_at = ? WHERE tenant_id = ? AND id = ? AND active = 0",
        (at, tenant_id, project_id),
    )
    return True


async def project_exists(db: Database | Transaction, tenant_id: str, project_id: str) -> bool:
    return bool(
        await db.fetch_value("SELECT 1 FROM projects WHERE tenant_id = ? AND id = ?", (tenant_id, project_id))
    )


async def requires_review(db: Database | Transaction, tenant_id: str, project_ids: list[str]) -> set[str]:
    """Which of these projects have require_review on (migration 0038)."""
    if not project_ids:
        return set()
    rows = await db.fetch_all(
        "SELECT id FROM projects WHERE tenant_id = ? AND require_review = 1 AND id IN (SELECT value FROM json_each(?))",
        (tenant_id, json.dumps(sorted(set(project_ids)))))
    return {row["id"] for row in rows}


async def archived_at(db: Database | Transaction, tenant_id: str, project_id: str) -> tuple[bool, str | None]:
    """(exists, archived_at): one indexed look-up for the checks before a new run or ingest."""
    row = await db.fetch_one(
        "SELECT archived_at FROM projects WHERE tenant_id = ? AND id = ?", (tenant_id, project_id)
    )
    return (False, None) if row is None else (True, row["archived_at"])


async def update_project(tx: Transaction, tenant_id: str, project_id: str, changes: dict[str, Any]) -> int:
    allowed = {"name", "description", "environments", "archived_at", "active", "updated_at", "require_review"}
    if set(changes) - allowed:
        raise ValueError(f"not updatable: {sorted(set(changes) - allowed)}")
    assignments = ", ".join(f"{column} = ?" for column in changes)
    return await tx.execute(
        f"UPDATE projects SET {assignments} WHERE tenant_id = ? AND id = ?",
        (*changes.values(), tenant_id, project_id),
    )


async def delete_attachments_of(tx: Transaction, tenant_id: str, project_id: str) -> list[str]:
    """Deletes the attachment rows of the project's results (they have no foreign key to the result
    tables, so they are found through them: call this before the results go); returns the keys of
    their objects, which the caller lets go once the transaction commits."""
    params = (tenant_id, project_id)
    attachments = await tx.fetch_all(
        "DELETE FROM attachments WHERE tenant_id = ? AND result_id IN ("
        "SELECT r.id FROM test_runs t JOIN test_results r ON r.run_id = t.id "
        "WHERE t.tenant_id = ? AND t.project_id = ? "
        "UNION ALL SELECT n.id FROM test_runs t JOIN unlinked_test_results n ON n.run_id = t.id "
        "WHERE t.tenant_id = ? AND t.project_id = ?) RETURNING storage_name, object_key",
        (tenant_id, *params, *params),
    )
    # the project's cases' own attachments go with the cases (foreign key); their objects with these
    cases = await tx.fetch_all(
        "SELECT DISTINCT object_key FROM case_attachments WHERE tenant_id = ? AND case_id IN ("
        "SELECT id FROM test_cases WHERE tenant_id = ? AND project_id = ?)",
        (tenant_id, *params),
    )
    return [row["object_key"] or row["storage_name"] for row in attachments] + [r["object_key"] for r in cases]


async def delete_project(tx: Transaction, tenant_id: str, project_id: str) -> dict[str, int]:
    """Deletes the project with what it still holds once its attachments and results are gone
    (``delete_attachments_of``, then the one writer of results); returns the counts of cases and runs.

    Runs, milestones, plans and sections go by the foreign keys' ON DELETE CASCADE. A case's project
    link is ON DELETE SET NULL (a case outlives a project deleted by other means), and a case's versions
    outlive the case, so those are deleted here explicitly. AI generations stay (their project link
    becomes NULL): they are the month's quota reservations, and deleting them would hand it back.
    """
    params = (tenant_id, project_id)
    runs = await tx.fetch_value("SELECT COUNT(*) FROM test_runs WHERE tenant_id = ? AND project_id = ?", params)
    # a case's history outlives the case on its own (results point at its versions), not with its project
    await tx.execute(
        "DELETE FROM case_versions WHERE case_id IN (SELECT id FROM test_cases WHERE tenant_id = ? AND project_id = ?) "
        "AND tenant_id = ?",
        (*params, tenant_id),
    )
    cases = await tx.execute("DELETE FROM test_cases WHERE tenant_id = ? AND project_id = ?", params)
    await tx.execute("DELETE FROM projects WHERE tenant_id = ? AND id = ?", params)
    return {"cases": cases, "runs": int(runs)}
