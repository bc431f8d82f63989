"""Milestones: a project's dated goals. Progress is read from the run summaries of the runs that
belong to a milestone (``test_runs.results_*``), never aggregated over results."""

from __future__ import annotations

from typing import Any

import msgspec

from tms.db import Database, Row, Transaction
from tms.errors import InvalidInput, NotFound
from tms.http.paging import check_choice, page_window
from tms.ids import new_id, now_iso
from tms.library.cases.models import Pagination
from tms.library.projects import service as project_service
from tms.planning.milestones import store as milestone_store
from tms.planning.milestones.models import MILESTONE_STATUSES, Milestone, MilestoneCreate, MilestoneUpdate
from tms.runs.models import RunCounts
from tms.team.audit import service as audit

_AUDITED = ("name", "description", "due_on", "status")


def milestone_from_row(row: Row, totals: Row | None) -> Milestone:
    def total(key: str) -> int:
        return 0 if totals is None else int(totals[key])

    return Milestone(
        id=row["id"],
        project_id=row["project_id"],
        name=row["name"],
        description=row["description"],
        due_on=row["due_on"],
        status=row["status"],
        counts=RunCounts(total=total("total"), passed=total("passed"), failed=total("failed"),
                         broken=total("broken"), skipped=total("skipped"), unknown=total("unknown")),
        runs_count=total("runs_count"),
        completed_at=row["completed_at"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


async def _load(db: Database | Transaction, tenant_id: str, milestone_id: str) -> Milestone:
    row = await milestone_store.get_milestone(db, tenant_id, milestone_id)
    if row is None:
        raise NotFound(f"milestone {milestone_id} not found")
    totals = await milestone_store.run_totals(db, tenant_id, [milestone_id])
    return milestone_from_row(row, totals.get(milestone_id))


async def get_milestone(db: Database, tenant_id: str, milestone_id: str) -> Milestone:
    return await _load(db, tenant_id, milestone_id)


async def list_milestones(
    db: Database,
    tenant_id: str,
    *,
    project_id: str | None = None,
    status: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> tuple[list[Milestone], Pagination]:
    limit, offset = page_window(limit, offset)
    check_choice(status, MILESTONE_STATUSES, "status")
    rows, total = await milestone_store.list_milestones(db, tenant_id, project_id=project_id, status=status,
                                                        limit=limit, offset=offset)
    totals = await milestone_store.run_totals(db, tenant_id, [row["id"] for row in rows])
    milestones = [milestone_from_row(row, totals.get(row["id"])) for row in rows]
    return milestones, Pagination(total=total, limit=limit, offset=offset)


async def require_milestone(db: Database | Transaction, tenant_id: str, milestone_id: str, project_id: str) -> None:
    """A milestone named in a run's or plan's body: unknown (or another tenant's) is 404, one of
    another project is 400."""
    row = await milestone_store.get_milestone(db, tenant_id, milestone_id)
    if row is None:
        raise NotFound(f"milestone {milestone_id} not found", field="milestone_id")
    if row["project_id"] != project_id:
        raise InvalidInput(f"milestone {milestone_id} belongs to another project", field="milestone_id")


def _text(value: str | None) -> str | None:
    return (value or "").strip() or None


async def create_milestone(db: Database, tenant_id: str, body: MilestoneCreate) -> Milestone:
    name = body.name.strip()
    if not name:
        raise InvalidInput("name must not be blank", field="name")
    milestone_id = new_id()
    async with db.transaction() as tx:
        exists, _ = await project_service.archived_at(tx, tenant_id, body.project_id)
        if not exists:
            raise NotFound(f"project {body.project_id} not found", field="project_id")
        row = {
            "id": milestone_id, "tenant_id": tenant_id, "project_id": body.project_id, "name": name,
            "description": _text(body.description),
            "due_on": None if body.due_on is None else body.due_on.isoformat(), "created_at": now_iso(),
        }
        await milestone_store.insert_milestone(tx, row)
        await audit.record(tx, tenant_id, "milestone.created", "milestone", milestone_id,
                           {"project_id": body.project_id, "name": name, "due_on": row["due_on"]})
        return await _load(tx, tenant_id, milestone_id)


async def update_milestone(db: Database, tenant_id: str, milestone_id: str, body: MilestoneUpdate) -> Milestone:
    """Changes name, description, due date or status; COMPLETED records when, OPEN forgets it."""
    changes: dict[str, Any] = {}
    if body.name is not msgspec.UNSET:
        changes["name"] = body.name.strip()
        if not changes["name"]:
            raise InvalidInput("name must not be blank", field="name")
    if body.description is not msgspec.UNSET:
        changes["description"] = _text(body.description)
    if body.due_on is not msgspec.UNSET:
        changes["due_on"] = None if body.due_on is None else body.due_on.isoformat()
    async with db.transaction() as tx:
        old = await _load(tx, tenant_id, milestone_id)
        now = now_iso()
        if body.status is not msgspec.UNSET and body.status != old.status:
            changes["status"] = body.status
            changes["completed_at"] = now if body.status == "COMPLETED" else None
        if not changes:
            return old
        changes["updated_at"] = now
        await milestone_store.update_milestone(tx, tenant_id, milestone_id, changes)
        new = await _load(tx, tenant_id, milestone_id)
        diff = audit.changes_between(msgspec.structs.asdict(old), msgspec.structs.asdict(new), _AUDITED)
        if diff:
            await audit.record(tx, tenant_id, "milestone.updated", "milestone", milestone_id, diff)
        return new


async def delete_milestone(db: Database, tenant_id: str, milestone_id: str) -> None:
    """Its runs (and plans) stay, with milestone_id null."""
    async with db.transaction() as tx:
        row = await milestone_store.get_milestone(tx, tenant_id, milestone_id)
        if row is None:
            raise NotFound(f"milestone {milestone_id} not found")
        runs = await milestone_store.delete_milestone(tx, tenant_id, milestone_id)
        await audit.record(tx, tenant_id, "milestone.deleted", "milestone", milestone_id,
                           {"name": row["name"], "runs_unlinked": runs})
