"""Test plans: a selection of a project's cases (listed, by section, by tag) started as one PENDING
run per environment, each pre-populated with every selected case as an UNKNOWN result.

A plan's progress is read from its runs' summaries. Deleting a plan keeps its runs and their results
(executed work is history); they only lose their plan_id.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tms.db import Database, Row, Transaction
from tms.errors import InvalidInput, NotFound
from tms.http.paging import page_window
from tms.ids import new_id, new_ids, now_iso
from tms.library.cases.models import Pagination
from tms.planning.milestones.service import require_milestone
from tms.planning.plans import store as plan_store
from tms.planning.plans.models import Plan, PlanCreate, PlanSelection, PlanUpdate
from tms.runs.models import RunCounts
from tms.runs.service import add_cases_to_run, insert_pending_run, require_project, resolve_case_refs
from tms.team.audit import service as audit

_selection = msgspec.json.Decoder(PlanSelection)
_COUNT_KEYS = ("total", "passed", "failed", "broken", "skipped", "unknown")


def _shown(values: list[str]) -> str:
    return ", ".join(values[:20]) + (" …" if len(values) > 20 else "")


def plan_from_row(row: Row, runs: list[Row]) -> Plan:
    sums = dict.fromkeys(_COUNT_KEYS, 0)
    for run in runs:
        for key in _COUNT_KEYS:
            sums[key] += run[f"results_{key}"]
    return Plan(
        id=row["id"],
        project_id=row["project_id"],
        milestone_id=row["milestone_id"],
        name=row["name"],
        description=row["description"],
        run_ids=[run["id"] for run in runs],
        counts=RunCounts(**sums),
        case_count=row["case_count"],
        selection=_selection.decode(row["selection"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


async def _load(db: Database | Transaction, tenant_id: str, plan_id: str) -> Plan:
    row = await plan_store.get_plan(db, tenant_id, plan_id)
    if row is None:
        raise NotFound(f"plan {plan_id} not found")
    return plan_from_row(row, await plan_store.runs_of(db, tenant_id, [plan_id]))


async def get_plan(db: Database, tenant_id: str, plan_id: str) -> Plan:
    return await _load(db, tenant_id, plan_id)


async def list_plans(
    db: Database,
    tenant_id: str,
    *,
    project_id: str | None = None,
    milestone_id: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> tuple[list[Plan], Pagination]:
    limit, offset = page_window(limit, offset)
    rows, total = await plan_store.list_plans(db, tenant_id, project_id=project_id, milestone_id=milestone_id,
                                              limit=limit, offset=offset)
    runs_by_plan: dict[str, list[Row]] = {row["id"]: [] for row in rows}
    for run in await plan_store.runs_of(db, tenant_id, list(runs_by_plan)):
        runs_by_plan[run["plan_id"]].append(run)
    plans = [plan_from_row(row, runs_by_plan[row["id"]]) for row in rows]
    return plans, Pagination(total=total, limit=limit, offset=offset)


def _clean(values: list[str]) -> list[str]:
    return list(dict.fromkeys(value.strip() for value in values if value.strip()))


async def _selected_cases(db: Database, tenant_id: str, body: PlanCreate) -> list[str]:
    """The ids of the selected cases, after checking every reference names something of this project."""
    refs = _clean(body.case_ids)
    section_ids = _clean(body.section_ids)
    tags = _clean(body.tags)
    if not (refs or section_ids or tags):
        raise InvalidInput("choose the plan's cases: give case_ids, section_ids or tags", field="case_ids")

    case_ids: list[str] = []
    if refs:
        found = await plan_store.resolve_refs(db, tenant_id, refs)
        named = {ref for case_id, code, _ in found for ref in (case_id, code)}
        unknown = [ref for ref in refs if ref not in named]
        if unknown:
            raise InvalidInput(f"case_ids: no such test case in this tenant: {_shown(unknown)}", field="case_ids")
        elsewhere = sorted({code for _, code, project in found if project != body.project_id})
        if elsewhere:
            raise InvalidInput(f"case_ids: these cases belong to another project: {_shown(elsewhere)}",
                               field="case_ids")
        case_ids = list(dict.fromkeys(case_id for case_id, _, _ in found))

    if section_ids:
        known = await plan_store.known_sections(db, tenant_id, body.project_id, section_ids)
        missing = [section_id for section_id in section_ids if section_id not in known]
        if missing:
            raise InvalidInput(f"section_ids: no such section in this project: {_shown(missing)}",
                               field="section_ids")

    selected = await plan_store.select_cases(db, tenant_id, body.project_id, case_ids=case_ids, tags=tags,
                                             section_ids=section_ids)
    if not selected:
        field = "tags" if tags and not section_ids else "section_ids" if section_ids and not tags else "case_ids"
        raise InvalidInput("the plan selects no test case: no case of this project is in these sections or "
                           "carries these tags", field=field)
    return selected


async def project_tags(db: Database, tenant_id: str, project_id: str) -> list[str]:
    """The distinct tags of a project's cases, for the plan form's hint."""
    return await plan_store.project_tags(db, tenant_id, project_id)


async def project_sections(db: Database, tenant_id: str, project_id: str) -> list[Row]:
    """id, parent_id, name of the project's sections, for the plan form."""
    return await plan_store.project_sections(db, tenant_id, project_id)


async def preview_cases(db: Database, tenant_id: str, body: PlanCreate) -> int:
    """How many cases the plan would take (the form's Preview), with the same checks as creating it."""
    return len(await _selected_cases(db, tenant_id, body))


async def create_plan(db: Database, tenant_id: str, body: PlanCreate) -> Plan:
    """One transaction: the plan, its runs (PENDING, one per environment, or one without), and one
    UNKNOWN result per selected case in each run (one executemany per run)."""
    name = body.name.strip()
    if not name:
        raise InvalidInput("name must not be blank", field="name")
    await require_project(db, tenant_id, body.project_id)
    if body.milestone_id is not None:
        await require_milestone(db, tenant_id, body.milestone_id, body.project_id)
    selected = await _selected_cases(db, tenant_id, body)
    environments = _clean(body.environments)

    plan_id, now = new_id(), now_iso()
    selection = PlanSelection(case_ids=_clean(body.case_ids), section_ids=_clean(body.section_ids),
                              tags=_clean(body.tags), environments=environments)
    run_ids = new_ids(max(1, len(environments)))
    async with db.transaction() as tx:
        await require_project(tx, tenant_id, body.project_id)  # archived meanwhile? refuse under the lock
        if body.milestone_id is not None:
            await require_milestone(tx, tenant_id, body.milestone_id, body.project_id)
        await plan_store.insert_plan(tx, {
            "id": plan_id, "tenant_id": tenant_id, "project_id": body.project_id, "milestone_id": body.milestone_id,
            "name": name, "description": (body.description or "").strip() or None,
            "selection": msgspec.json.encode(selection).decode(), "case_count": len(selected), "created_at": now,
        })
        results = 0
        cases = await resolve_case_refs(tx, tenant_id, selected, field="case_ids")  # once for every run
        slots: list[str | None] = [*environments] or [None]  # no environment: one run without
        for run_id, environment in zip(run_ids, slots, strict=True):
            await insert_pending_run(
                tx, tenant_id, run_id=run_id, project_id=body.project_id,
                name=name if environment is None else f"{name} · {environment}", environment=environment,
                created_at=now, milestone_id=body.milestone_id, plan_id=plan_id,
            )
            # the one way a run is filled with cases, whoever fills it (plans, the New run page, the API)
            results += await add_cases_to_run(tx, tenant_id, run_id, selected, resolved=cases)
        await audit.record(tx, tenant_id, "plan.created", "plan", plan_id, {
            "project_id": body.project_id, "name": name, "milestone_id": body.milestone_id, "cases": len(selected),
            "runs": len(run_ids), "results": results, "environments": environments, "run_ids": run_ids,
        })
        return await _load(tx, tenant_id, plan_id)


async def update_plan(db: Database, tenant_id: str, plan_id: str, body: PlanUpdate) -> Plan:
    """Name, description or milestone; a new milestone takes the plan's runs along."""
    changes: dict[str, Any] = {}
    if body.name is not msgspec.UNSET:
        changes["name"] = body.name.strip()
        if not changes["name"]:
            raise InvalidInput("name must not be blank", field="name")
    if body.description is not msgspec.UNSET:
        changes["description"] = (body.description or "").strip() or None
    async with db.transaction() as tx:
        row = await plan_store.get_plan(tx, tenant_id, plan_id)
        if row is None:
            raise NotFound(f"plan {plan_id} not found")
        if body.milestone_id is not msgspec.UNSET and body.milestone_id != row["milestone_id"]:
            if body.milestone_id is not None:
                await require_milestone(tx, tenant_id, body.milestone_id, row["project_id"])
            changes["milestone_id"] = body.milestone_id
        diff = audit.changes_between(row, changes, [field for field in changes])
        if diff:
            await plan_store.update_plan(tx, tenant_id, plan_id, {**changes, "updated_at": now_iso()})
            await audit.record(tx, tenant_id, "plan.updated", "plan", plan_id, diff)
        return await _load(tx, tenant_id, plan_id)


async def delete_plan(db: Database, tenant_id: str, plan_id: str) -> None:
    async with db.transaction() as tx:
        row = await plan_store.get_plan(tx, tenant_id, plan_id)
        if row is None:
            raise NotFound(f"plan {plan_id} not found")
        runs = await plan_store.delete_plan(tx, tenant_id, plan_id)
        await audit.record(tx, tenant_id, "plan.deleted", "plan", plan_id,
                           {"name": row["name"], "runs_kept": runs})


