"""Test runs: creation (optionally pre-populated), status transitions and the completed event."""

from __future__ import annotations

import re
from typing import Any

import msgspec

from tms.db import Database, Row, Transaction
from tms.errors import Conflict, InvalidInput, NotFound, TooLarge
from tms.http.paging import check_choice, page_window
from tms.ids import new_id, new_ids, now_iso
from tms.library.cases import service as case_service
from tms.library.cases.models import CODE_PATTERN, Pagination
from tms.library.projects import service as project_service
from tms.notifications import events
from tms.planning.milestones.service import require_milestone
from tms.runs import listing
from tms.runs import store as run_store
from tms.runs.models import (
    RERUN_MAX_CASES,
    RUN_STATUSES,
    Run,
    RunCompletedEvent,
    RunCounts,
    RunCreate,
    RunRerun,
    RunUpdate,
)
from tms.runs.results import store as result_store
from tms.runs.results.rows import placeholder_row
from tms.team.audit import service as audit

_CODE = re.compile(CODE_PATTERN)


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
        milestone_id=row["milestone_id"],
        plan_id=row["plan_id"],
        summary=row.get("summary"),
        kind=run_store.run_kind(row),
    )


def completed_event(run: Row) -> dict[str, Any]:
    """``data`` of test_run.completed; the counts include unlinked results."""
    return msgspec.structs.asdict(RunCompletedEvent.of(run))


async def require_project(db: Database | Transaction, tenant_id: str, project_id: str) -> None:
    """The project a new run (POST /runs, ingest, a plan) goes into: an unknown project (or another
    tenant's) is a missing resource, 404 as for ids in paths; an archived one refuses new runs, 409."""
    exists, archived_at = await project_service.archived_at(db, tenant_id, project_id)
    if not exists:
        raise NotFound(f"project {project_id} not found", field="project_id")
    if archived_at is not None:
        raise Conflict(f"project {project_id} is archived and takes no new runs or ingests; "
                       "unarchive it first (PATCH /api/v1/projects/{id} with archived false)",
                       field="project_id")


async def resolve_case_refs(
    db: Database | Transaction, tenant_id: str, refs: list[str], field: str = "test_case_ids"
) -> dict[str, Row]:
    """case id -> (id, code, title) of each case named by cuid or code, in order, without repeats;
    two queries however many. Any unknown reference is a 400 naming the first few."""
    refs = list(dict.fromkeys(refs))
    # codes match the contract's pattern and cuids never do: each ref is looked up where it can be
    # (10,000 cuids would otherwise cost 10,000 missed code probes); whatever that misses, both ways
    codes = [ref for ref in refs if _CODE.match(ref)]
    ids = [ref for ref in refs if not _CODE.match(ref)]
    by_code = {row["code"]: row for row in await case_service.resolve_codes(db, tenant_id, codes)} if codes else {}
    by_id = {row["id"]: row for row in await case_service.resolve_ids(db, tenant_id, ids)} if ids else {}
    missed = [ref for ref in refs if ref not in by_code and ref not in by_id]
    if missed:
        by_code.update((row["code"], row) for row in await case_service.resolve_codes(db, tenant_id, missed))
        by_id.update((row["id"], row) for row in await case_service.resolve_ids(db, tenant_id, missed))
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
        raise InvalidInput(f"{field}: no such test case in this tenant: {shown}", field=field)
    return cases


async def cases_in_run(db: Database, tenant_id: str, run_id: str, case_ids: list[str]) -> set[str]:
    """Which of these cases (a page of the case picker) the run already holds."""
    return await result_store.cases_held(db, tenant_id, run_id, case_ids)


async def create_run(db: Database, tenant_id: str, body: RunCreate) -> Run:
    """A PENDING run; each of ``test_case_ids`` (cuids or codes) gets one UNKNOWN result.

    The placeholders are not reported results, so the run stays PENDING until the first real one.
    """
    from tms.runs import writes  # here: tms.failures imports this module, and writes imports tms.failures
    name = body.name.strip()
    if not name:
        raise InvalidInput("name must not be blank", field="name")
    await require_project(db, tenant_id, body.project_id)
    cases = await resolve_case_refs(db, tenant_id, body.test_case_ids)
    if body.milestone_id is not None:
        await require_milestone(db, tenant_id, body.milestone_id, body.project_id)

    run_id, now = new_id(), now_iso()
    rows = [
        placeholder_row(result_id, tenant_id, run_id, case, now)
        for result_id, case in zip(new_ids(len(cases)), cases.values(), strict=True)
    ]
    async with db.transaction() as tx:
        await run_store.insert_run(
            tx, run_id=run_id, tenant_id=tenant_id, project_id=body.project_id, name=name,
            environment=body.environment, status="PENDING", created_at=now, milestone_id=body.milestone_id,
        )
        await writes.add_placeholders(tx, tenant_id, run_id, rows, now)
        await audit.record(tx, tenant_id, "run.created", "run", run_id,
                           {"name": name, "project_id": body.project_id, "environment": body.environment,
                            "cases": len(rows)})
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
    milestone_id: str | None = None,
    plan_id: str | None = None,
) -> tuple[list[Run], Pagination]:
    limit, offset = page_window(limit, offset)
    check_choice(status, RUN_STATUSES, "status")
    rows, total = await run_store.list_runs(
        db, tenant_id, project_id=project_id, status=status, limit=limit, offset=offset,
        milestone_id=milestone_id, plan_id=plan_id,
    )
    return [run_from_row(row) for row in rows], Pagination(total=total, limit=limit, offset=offset)


async def list_runs_newest(db: Database, tenant_id: str, *, project_id: str | None, status: str | None,
                           limit: int, offset: int) -> tuple[list[Run], int]:
    """(a page of runs, how many match) for the runs page: the newest first (the API lists oldest first)."""
    rows, total = await listing.list_runs_newest(db, tenant_id, project_id=project_id, status=status,
                                                 limit=limit, offset=offset)
    return [run_from_row(row) for row in rows], total


async def recent_runs(db: Database, tenant_id: str, project_id: str, limit: int) -> list[Run]:
    """The project's newest ``limit`` runs, newest first (the dashboard's)."""
    return [run_from_row(row) for row in await listing.newest_runs(db, tenant_id, project_id, limit)]


async def run_row(db: Database | Transaction, tenant_id: str, run_id: str) -> Row | None:
    """A run's stored row (``tms.runs.store.COLUMNS``), None for an unknown id or another tenant's."""
    return await run_store.get_run(db, tenant_id, run_id)


async def unlinked_count(db: Database, tenant_id: str, project_id: str) -> int:
    """The project's unlinked results, from the counter kept at write time (never a count of rows)."""
    return await result_store.unlinked_count(db, tenant_id, project_id)


async def insert_pending_run(tx: Transaction, tenant_id: str, *, run_id: str, project_id: str, name: str,
                             environment: str | None, created_at: str, milestone_id: str | None = None,
                             plan_id: str | None = None) -> None:
    """A new PENDING run without results, in the caller's transaction (a plan's runs, then filled by
    ``add_cases_to_run``)."""
    await run_store.insert_run(tx, run_id=run_id, tenant_id=tenant_id, project_id=project_id, name=name,
                               environment=environment, status="PENDING", created_at=created_at,
                               milestone_id=milestone_id, plan_id=plan_id)


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
    if body.summary is not msgspec.UNSET:
        changes["summary"] = body.summary.strip() or None if body.summary is not None else None
    async with db.transaction() as tx:
        row = await run_store.get_run(tx, tenant_id, run_id)
        if row is None:
            raise NotFound(f"run {run_id} not found")
        if body.milestone_id is not msgspec.UNSET and body.milestone_id != row["milestone_id"]:
            if body.milestone_id is not None:
                await require_milestone(tx, tenant_id, body.milestone_id, row["project_id"])
            changes["milestone_id"] = body.milestone_id
        now = now_iso()
        entering_completed = body.status == "COMPLETED" and row["status"] != "COMPLETED"
        if body.status is not msgspec.UNSET and body.status != row["status"]:
            changes["status"] = body.status
            if entering_completed:
                changes["completed_at"] = now
        if changes:
            changes["updated_at"] = now
            old = row
            await run_store.update_run(tx, tenant_id, run_id, changes)
            row = await run_store.get_run(tx, tenant_id, run_id)
            assert row is not None
            diff = audit.changes_between(old, row, ("name", "environment", "status", "summary"))
            if diff:
                action = "run.completed" if entering_completed else "run.updated"
                await audit.record(tx, tenant_id, action, "run", run_id, diff)
        if entering_completed:
            await events.emit(tx, db, tenant_id, "test_run.completed", completed_event(row))
    return run_from_row(row)


OPEN_STATUSES = ("PENDING", "IN_PROGRESS")


async def _open_run(tx: Transaction, tenant_id: str, run_id: str) -> Row:
    run = await run_store.get_run(tx, tenant_id, run_id)
    if run is None:
        raise NotFound(f"run {run_id} not found")
    if run["status"] not in OPEN_STATUSES:
        raise Conflict(f"run {run_id} is {run['status']}: cases can only be added to or removed from a "
                       "PENDING or IN_PROGRESS run")
    return run


async def add_cases_to_run(
    tx: Transaction, tenant_id: str, run_id: str, case_ids: list[str], *, resolved: dict[str, Row] | None = None
) -> int:
    """Adds each case (cuid or code) to the run as an ``UNKNOWN`` result, inside the caller's transaction.

    ``resolved`` (from ``resolve_case_refs`` in the same transaction) spares the look-up when the caller
    fills several runs with the same cases: a plan resolves its selection once for all its runs.

    A case the run already holds keeps its result. One executemany whatever the number of cases; the
    run's summary counts grow by the rows added (total and unknown) and its status stays as it is,
    because a placeholder is not a reported result. Records one audit entry with the count.
    Returns the number of results added. Unknown cases are a 400; a completed run a 409.
    """
    from tms.runs import writes  # here: tms.failures imports this module, and writes imports tms.failures
    await _open_run(tx, tenant_id, run_id)
    cases = resolved if resolved is not None else await resolve_case_refs(tx, tenant_id, case_ids, field="case_ids")
    if not cases:
        return 0
    now = now_iso()
    rows = [
        placeholder_row(result_id, tenant_id, run_id, case, now)
        for result_id, case in zip(new_ids(len(cases)), cases.values(), strict=True)
    ]
    added = await writes.add_placeholders(tx, tenant_id, run_id, rows, now)
    if added:
        await audit.record(tx, tenant_id, "run.cases_added", "run", run_id, {"added": added})
    return added


async def remove_cases_from_run(tx: Transaction, tenant_id: str, run_id: str, case_ids: list[str]) -> int:
    """Removes the cases' results (whatever their status) from an open run; keeps the counts right.

    Their attachments are collected by the daily orphan sweep. Returns the number of results removed.
    """
    from tms.runs import writes  # here: tms.failures imports this module, and writes imports tms.failures
    await _open_run(tx, tenant_id, run_id)
    cases = await resolve_case_refs(tx, tenant_id, case_ids, field="case_ids")
    removed = await writes.remove_cases(tx, tenant_id, run_id, list(cases), now_iso())
    if removed:
        await audit.record(tx, tenant_id, "run.cases_removed", "run", run_id, {"removed": removed})
    return removed


async def rerun(db: Database, tenant_id: str, run_id: str, body: RunRerun) -> Run:
    """A new PENDING run of the same project, environment and milestone holding the cases whose result in
    this run had one of ``body.statuses``, each assigned to whom its result was; one transaction.

    No such result is a 400 naming ``statuses``; more than RERUN_MAX_CASES cases a 413; an archived
    project a 409 (as for any new run). Unlinked results (no case) cannot be rerun and are left out.
    """
    from tms.runs import writes  # here: tms.failures imports this module, and writes imports tms.failures
    statuses: list[str] = list(dict.fromkeys(body.statuses))
    name = (body.name or "").strip()
    if body.name is not None and not name:
        raise InvalidInput("name must not be blank", field="name")
    async with db.transaction() as tx:
        source = await run_store.get_run(tx, tenant_id, run_id)
        if source is None:
            raise NotFound(f"run {run_id} not found")
        await require_project(tx, tenant_id, source["project_id"])
        cases = await result_store.rerun_sources(tx, tenant_id, run_id, statuses, RERUN_MAX_CASES + 1)
        if not cases:
            raise InvalidInput(f"no result of run {run_id} with a test case is {' or '.join(statuses)}: "
                               "nothing to rerun", field="statuses")
        if len(cases) > RERUN_MAX_CASES:
            raise TooLarge(f"a rerun holds at most {RERUN_MAX_CASES} cases; choose fewer statuses",
                           field="statuses")
        name = name or f"{source['name'][:191]} (rerun)"
        new_run, now = new_id(), now_iso()
        await run_store.insert_run(
            tx, run_id=new_run, tenant_id=tenant_id, project_id=source["project_id"], name=name,
            environment=source["environment"], status="PENDING", created_at=now, milestone_id=source["milestone_id"],
        )
        rows = [placeholder_row(result_id, tenant_id, new_run, case, now)
                for result_id, case in zip(new_ids(len(cases)), cases, strict=True)]
        await writes.add_placeholders(tx, tenant_id, new_run, rows, now)
        # each new result assigned to whom the result it repeats was
        await writes.set_assignees(tx, tenant_id, [(placeholder.id, case["assignee_id"]) for case, placeholder
                                                   in zip(cases, rows, strict=True) if case["assignee_id"]], now)
        await audit.record(tx, tenant_id, "run.created", "run", new_run,
                           {"name": name, "project_id": source["project_id"], "environment": source["environment"],
                            "cases": len(rows), "rerun_of": run_id, "statuses": statuses})
        row = await run_store.get_run(tx, tenant_id, new_run)
    assert row is not None
    return run_from_row(row)
