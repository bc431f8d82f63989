from __future__ import annotations

import json

from tms.db import Database, Row
from tms.ids import new_id, now_iso
from tms.models.projects import Project, ProjectCreate
from tms.services import audit
from tms.services.errors import InvalidInput, NotFound
from tms.store import projects as project_store


def project_from_row(row: Row) -> Project:
    return Project(
        id=row["id"],
        name=row["name"],
        description=row["description"],
        active=bool(row["active"]),
        environments=json.loads(row["environments"]),
        test_cases_count=row["test_cases_count"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


async def list_projects(db: Database, tenant_id: str) -> list[Project]:
    return [project_from_row(row) for row in await project_store.list_projects(db, tenant_id)]


async def get_project(db: Database, tenant_id: str, project_id: str) -> Project:
    row = await project_store.get_project(db, tenant_id, project_id)
    if row is None:
        raise NotFound(f"project {project_id} not found")
    return project_from_row(row)


async def get_active_project(db: Database, tenant_id: str) -> Project | None:
    row = await project_store.get_active_project(db, tenant_id)
    return None if row is None else project_from_row(row)


async def create_project(db: Database, tenant_id: str, body: ProjectCreate) -> Project:
    name = body.name.strip()
    if not name:
        raise InvalidInput("name must not be blank", field="name")
    environments = list(dict.fromkeys(env.strip() for env in body.environments if env.strip()))
    project_id = new_id()
    async with db.transaction() as tx:
        await project_store.insert_project(
            tx,
            project_id=project_id,
            tenant_id=tenant_id,
            name=name,
            description=body.description,
            environments_json=json.dumps(environments),
            created_at=now_iso(),
        )
        row = await project_store.get_project(tx, tenant_id, project_id)
        await audit.record(tx, tenant_id, "project.created", "project", project_id,
                           {"name": name, "environments": environments})
    assert row is not None
    return project_from_row(row)


async def mark_active(db: Database, tenant_id: str, project_id: str) -> None:
    """Web-interface only: the spec forbids marking a project active through the API."""
    async with db.transaction() as tx:
        if not await project_store.set_active_project(tx, tenant_id, project_id, now_iso()):
            raise NotFound(f"project {project_id} not found")
        await audit.record(tx, tenant_id, "project.activated", "project", project_id)
