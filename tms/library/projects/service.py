from __future__ import annotations

import json
from typing import Any

import msgspec

from tms.db import Database, Row, Transaction
from tms.errors import InvalidInput, NotFound
from tms.ids import new_id, now_iso
from tms.library.projects import store as project_store
from tms.library.projects.models import Project, ProjectCreate, ProjectUpdate
from tms.team.audit import service as audit


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
        archived=row["archived_at"] is not None,
        archived_at=row["archived_at"],
        require_review=bool(row["require_review"]),
    )


async def list_projects(db: Database, tenant_id: str) -> list[Project]:
    return [project_from_row(row) for row in await project_store.list_projects(db, tenant_id)]


async def get_project(db: Database, tenant_id: str, project_id: str) -> Project:
    row = await project_store.get_project(db, tenant_id, project_id)
    if row is None:
        raise NotFound(f"project {project_id} not found")
    return project_from_row(row)


async def get_active_project(db: Database, tenant_id: str, *, only_if_marked: bool = False) -> Project | None:
    """The project marked active; when none is, the tenant's only project (made through the API, which
    never marks one) is the pages' context all the same (issue 24), unless ``only_if_marked``."""
    row = await project_store.get_active_project(db, tenant_id)
    if row is not None:
        return project_from_row(row)
    if only_if_marked:
        return None
    projects = [p for p in await list_projects(db, tenant_id) if not p.archived]
    return projects[0] if len(projects) == 1 else None


async def create_project(db: Database, tenant_id: str, body: ProjectCreate) -> Project:
    name = body.name.strip()
    if not name:
        raise InvalidInput("name must not be blank", field="name")
    environments = _clean_environments(body.environments)
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


def _clean_environments(environments: list[str]) -> list[str]:
    return list(dict.fromkeys(env.strip() for env in environments if env.strip()))


async def list_open_projects(db: Database, tenant_id: str) -> list[Project]:
    """The projects the UI lists and offers in its pickers: archived ones are hidden."""
    return [project for project in await list_projects(db, tenant_id) if not project.archived]


_AUDITED = ("name", "description", "environments", "archived", "require_review")


async def update_project(db: Database, tenant_id: str, project_id: str, body: ProjectUpdate) -> Project:
    """Renames, describes, sets environments, archives or unarchives. Archiving the active project
    also clears its active mark: the dashboard must not default to a project the lists hide."""
    changes: dict[str, Any] = {}
    if body.name is not msgspec.UNSET:
        changes["name"] = body.name.strip()
        if not changes["name"]:
            raise InvalidInput("name must not be blank", field="name")
    if body.description is not msgspec.UNSET:
        changes["description"] = (body.description or "").strip() or None
    if body.environments is not msgspec.UNSET:
        changes["environments"] = json.dumps(_clean_environments(body.environments))
    if body.require_review is not msgspec.UNSET:
        changes["require_review"] = int(body.require_review)
    async with db.transaction() as tx:
        row = await project_store.get_project(tx, tenant_id, project_id)
        if row is None:
            raise NotFound(f"project {project_id} not found")
        old = project_from_row(row)
        now = now_iso()
        archiving = body.archived is True and not old.archived
        if archiving:
            changes["archived_at"] = now
            changes["active"] = 0
        elif body.archived is False and old.archived:
            changes["archived_at"] = None
        if changes:
            changes["updated_at"] = now
            await project_store.update_project(tx, tenant_id, project_id, changes)
            row = await project_store.get_project(tx, tenant_id, project_id)
            assert row is not None
        new = project_from_row(row)
        diff = audit.changes_between(msgspec.structs.asdict(old), msgspec.structs.asdict(new), _AUDITED)
        edited = {field: value for field, value in diff.items() if field != "archived"}
        if edited:
            await audit.record(tx, tenant_id, "project.updated", "project", project_id, edited)
        if "archived" in diff:
            action = "project.archived" if new.archived else "project.unarchived"
            await audit.record(tx, tenant_id, action, "project", project_id, {"archived": diff["archived"]})
    return new


async def requires_review(db: Database | Transaction, tenant_id: str, project_ids: list[str]) -> set[str]:
    """Which of these projects have require_review on."""
    return await project_store.requires_review(db, tenant_id, project_ids)


async def archived_at(db: Database | Transaction, tenant_id: str, project_id: str) -> tuple[bool, str | None]:
    """(exists, archived_at) of a project: one indexed look-up (the runs domain's check before a new run)."""
    return await project_store.archived_at(db, tenant_id, project_id)
