from __future__ import annotations

from tms.db import Database, Row, Transaction

# test_cases_count is computed, never stored, so it can never drift from the library.
_PROJECT_COLUMNS = (
    "p.id, p.name, p.description, p.active, p.environments, p.created_at, p.updated_at, "
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
