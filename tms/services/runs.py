"""Test runs: creation (optionally pre-populated), status transitions and the completed event."""

from __future__ import annotations

from typing import Any

import msgspec

from tms.db import Database, Row, Transaction
from tms.ids import new_id, new_ids, now_iso
from tms.models.cases import Pagination
from tms.models.runs import RUN_STATUSES, Run, RunCounts, RunCreate, RunUpdate
from tms.services import events
from tms.services.errors import InvalidInput, NotFound
from tms.services.paging import check_choice, page_window
from tms.services.result_rows import placeholder_row
from tms.store import cases as case_store
from tms.store import projects as project_store
from tms.store import results as result_store
from tms.store import runs as run_store


def run_from_row(row: Row) -> Run:
    return Run(
        id=row["id"],
        name=row["name"],
        project_id=row["project_id"],
        environment=row["environment"],
        status=row["status"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        completed_at=row["completed_at"],
        counts=RunCounts(
            total=row["results_total"],
            passed=row["results_passed"],
            failed=row["results_failed"],
            broken=row["results_broken"],
            skipped=row["results_skipped"],
            unknown=row["results_unknown"],
        ),
    )


def completed_event(run: Row) -> dict[str, Any]:
    """``data`` of test_run.completed; the counts include unlinked results."""
    return {
        "run_id": run["id"],
        "run_name": run["name"],
        "project_id": run["project_id"],
        "environment": run["environment"],
        "total": run["results_total"],
        "passed": run["results_passed"],
        "failed": run["results_failed"],
        "broken": run["results_broken"],
        "skipped": run["results_skipped"],
    }


async def require_project(db: Database | Transaction, tenant_id: str, project_id: str) -> None:
    """An unknown project (or another tenant's) is a missing resource: 404, as for ids in paths."""
    if not await project_store.project_exists(db, tenant_id, project_id):
        raise NotFound(f"project {project_id} not found", field="project_id")


async def create_run(db: Database, tenant_id: str, body: RunCreate) -> Run:
    """A PENDING run; each of ``test_case_ids`` (cuids or codes) gets one UNKNOWN result.

    The placeholders are not reported results, so the run stays PENDING until the first real one.
    """
    name = body.name.strip()
    if not name:
        raise InvalidInput("name must not be blank", field="name")
    await require_project(db, tenant_id, body.project_id)
    refs = list(dict.fromkeys(body.test_case_ids))
    by_code = {row["code"]: row for row in await case_store.resolve_codes(db, tenant_id, refs)}
    by_id = {row["id"]: row for row in await case_store.resolve_ids(db, tenant_id, refs)}
    cases: dict[str, Row] = {}
    unknown = []
    for ref in refs:
        case = by_code.get(ref) or by_id.get(ref)
        if case is None:
            unknown.append(ref)
        else:
            cases.setdefault(case["id"], case)
    if unknown:
        shown = ", ".join(unknown[:20]) + (" …" if len(unknown) > 20 else "")
        raise InvalidInput(f"test_case_ids: no such test case in this tenant: {shown}", field="test_case_ids")

    run_id, now = new_id(), now_iso()
    rows = [
        placeholder_row(result_id, tenant_id, run_id, case, now)
        for result_id, case in zip(new_ids(len(cases)), cases.values(), strict=True)
    ]
    async with db.transaction() as tx:
        await run_store.insert_run(
            tx, run_id=run_id, tenant_id=tenant_id, project_id=body.project_id, name=name,
            environment=body.environment, status="PENDING", created_at=now,
            counts=(len(rows), 0, 0, 0, 0, len(rows)),
        )
        await result_store.upsert_linked(tx, rows)
        row = await run_store.get_run(tx, tenant_id, run_id)
    assert row is not None
    return run_from_row(row)


async def get_run(db: Database, tenant_id: str, run_id: str) -> Run:
    row = await run_store.get_run(db, tenant_id, run_id)
    if row is None:
        raise NotFound(f"run {run_id} not found")
    return run_from_row(row)


async def list_runs(
    db: Database,
    tenant_id: str,
    *,
    project_id: str | None = None,
    status: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> tuple[list[Run], Pagination]:
    limit, offset = page_window(limit, offset)
    check_choice(status, RUN_STATUSES, "status")
    rows, total = await run_store.list_runs(
        db, tenant_id, project_id=project_id, status=status, limit=limit, offset=offset
    )
    return [run_from_row(row) for row in rows], Pagination(total=total, limit=limit, offset=offset)


async def update_run(db: Database, tenant_id: str, run_id: str, body: RunUpdate) -> Run:
    """Sets name, environment or status (any status from any). Entering COMPLETED fires the event once;
    PATCHing a completed run to COMPLETED again fires nothing."""
    changes: dict[str, Any] = {}
    if body.name is not msgspec.UNSET:
        changes["name"] = body.name.strip()
        if not changes["name"]:
            raise InvalidInput("name must not be blank", field="name")
    if body.environment is not msgspec.UNSET:
        changes["environment"] = body.environment
    async with db.transaction() as tx:
        row = await run_store.get_run(tx, tenant_id, run_id)
        if row is None:
            raise NotFound(f"run {run_id} not found")
        now = now_iso()
        entering_completed = body.status == "COMPLETED" and row["status"] != "COMPLETED"
        if body.status is not msgspec.UNSET and body.status != row["status"]:
            changes["status"] = body.status
            if entering_completed:
                changes["completed_at"] = now
        if changes:
            changes["updated_at"] = now
            await run_store.update_run(tx, tenant_id, run_id, changes)
            row = await run_store.get_run(tx, tenant_id, run_id)
            assert row is not None
        if entering_completed:
            await events.emit(tx, db, tenant_id, "test_run.completed", completed_event(row))
    return run_from_row(row)
