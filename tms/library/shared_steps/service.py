"""Shared steps: a project's named lists of Gherkin steps, used by cases through `* shared: <name>`.

The rules: a name is unique in its project and one line; the steps are step lines alone
(``gherkin.shared.validate_steps``); a shared step may use others but never itself, directly or
through another (a 400 naming ``steps``). A change of name or steps makes a new version of every case
using it (``cases.service.new_versions``), in the transaction that saves it, and a rename rewrites the
`* shared:` lines of the cases and shared steps naming it. The cases that would exceed the checklist's
limits with the new steps are named in a 400 before anything is written. A used one is not deleted (409).
The case side (links kept on a case's save, expansion for reading) is ``uses``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import msgspec

from tms.db import Database, Row, Transaction
from tms.errors import Conflict, InvalidInput, NotFound
from tms.http.paging import page_window
from tms.ids import new_id, now_iso
from tms.library.cases import service as case_service
from tms.library.cases.models import Pagination, SharedStepUsed
from tms.library.gherkin.service import EXPANDED_STEPS_LIMIT, PARSE_THREAD_THRESHOLD, validate_gherkin, written_steps
from tms.library.gherkin.shared import expand, fits_by_lines, names_in, rename_in, validate_steps
from tms.library.projects import service as project_service
from tms.library.shared_steps import store, uses
from tms.library.shared_steps.models import (
    USED_BY_LIMIT,
    CaseRef,
    SharedStep,
    SharedStepCreate,
    SharedStepUpdate,
)
from tms.team.audit import service as audit

# the names the editor's autocomplete offers (a project with more is one with a naming problem)
NAMES_LIMIT = 1_000


def step_from_row(row: Row, users: tuple[list[Row], int] | None = None) -> SharedStep:
    step = SharedStep(id=row["id"], project_id=row["project_id"], name=row["name"], steps=row["steps"],
                      version=row["version"], created_at=row["created_at"], updated_at=row["updated_at"])
    if users is not None:
        step.used_by = [CaseRef(id=r["id"], code=r["code"], title=r["title"]) for r in users[0]]
        step.used_by_total = users[1]
    return step


async def _checked_steps(steps: str) -> None:
    if len(steps) < PARSE_THREAD_THRESHOLD:
        validate_steps(steps)
    else:
        await asyncio.to_thread(validate_steps, steps)


async def _row_or_404(db: Database | Transaction, tenant_id: str, step_id: str) -> Row:
    row = await store.get_step(db, tenant_id, step_id)
    if row is None:
        raise NotFound(f"shared step {step_id} not found")
    return row


async def list_steps(db: Database, tenant_id: str, project_id: str, limit: int | None = None,
                     offset: int | None = None) -> tuple[list[SharedStep], Pagination]:
    """A project's shared steps by name (an unknown project, or another tenant's, is a 404)."""
    await project_service.get_project(db, tenant_id, project_id)
    limit, offset = page_window(limit, offset)
    rows, total = await store.list_for_project(db, tenant_id, project_id, limit, offset)
    return [step_from_row(row) for row in rows], Pagination(total=total, limit=limit, offset=offset)


async def names(db: Database, tenant_id: str, project_id: str) -> list[str]:
    """The project's shared step names (the case editor's autocomplete)."""
    return await store.names_for_project(db, tenant_id, project_id, NAMES_LIMIT)


async def get_step(db: Database, tenant_id: str, step_id: str) -> SharedStep:
    row = await _row_or_404(db, tenant_id, step_id)
    return step_from_row(row, await store.users(db, tenant_id, step_id, USED_BY_LIMIT))


async def expanded_case_text(db: Database | Transaction, tenant_id: str, project_id: str | None,
                             text: str | None) -> str | None:
    """A case's Gherkin with its shared steps expanded: what the case page and the execution view show
    and what ``step_results`` index."""
    return await uses.expanded(db, tenant_id, project_id, text)


async def version_text(text: str, used: Sequence[SharedStepUsed]) -> str:
    """A case version's Gherkin with the shared steps it used expanded as they were when it was recorded
    (``used``: the version's ``shared_steps``); as written when it recorded none."""
    if not used:
        return text
    steps = {step.name: step.steps for step in used}
    if len(text) < PARSE_THREAD_THRESHOLD:
        return expand(text, steps)
    return await asyncio.to_thread(expand, text, steps)


async def _no_cycle(tx: Transaction, tenant_id: str, project_id: str, name: str, steps: str,
                    old_name: str | None = None) -> dict[str, Row]:
    """The shared steps ``steps`` use (by name, nested ones too); a 400 naming ``steps`` when one is
    unknown or one leads back to this shared step."""
    known = {name: steps} if old_name is None else {name: steps, old_name: steps}
    rows = await uses.closure(tx, tenant_id, project_id, names_in(steps), known)
    expand(f"* shared: {name}\n", uses.steps_of(rows, known), strict=True, field="steps")
    return rows


async def create_step(db: Database, tenant_id: str, body: SharedStepCreate) -> SharedStep:
    name = body.name
    await _checked_steps(body.steps)
    await project_service.get_project(db, tenant_id, body.project_id)
    now = now_iso()
    step_id = new_id()
    async with db.transaction() as tx:
        if await store.name_taken(tx, tenant_id, body.project_id, name):
            raise Conflict(f"the project already has a shared step named {name!r}", field="name")
        rows = await _no_cycle(tx, tenant_id, body.project_id, name, body.steps)
        await store.insert_step(tx, {"id": step_id, "tenant_id": tenant_id, "project_id": body.project_id,
                                     "name": name, "steps": body.steps, "version": 1, "created_at": now,
                                     "updated_at": now})
        await store.set_nesting(tx, tenant_id, step_id, [rows[n]["id"] for n in names_in(body.steps) if n in rows])
        await audit.record(tx, tenant_id, "shared_step.created", "shared_step", step_id,
                           {"project_id": body.project_id, "name": name})
        row = await _row_or_404(tx, tenant_id, step_id)
    return step_from_row(row, ([], 0))


def _check_users(cases: list[Row], steps: dict[str, str]) -> None:
    """Each using case, expanded with the new steps, must stay within the checklist's limits."""
    for case in cases:
        try:
            text = case["bdd_content"]
            expanded = expand(text, steps, strict=True)
            if not fits_by_lines(expanded, EXPANDED_STEPS_LIMIT):  # most cases: no parse needed
                validate_gherkin(expanded, written=written_steps(text))
        except InvalidInput as exc:
            raise InvalidInput(f"steps: with these steps {case['code']} would not be a valid case: {exc.detail}",
                               field="steps") from None


async def _check_plan(db: Database, tenant_id: str, row: Row, name: str, steps: str) -> list[str]:
    """The cases using the shared step (each gets a new version), checked with the new steps before the
    write lock (parsing is the slow part): a 400 naming the first one the new steps would make invalid."""
    user_ids = await store.user_case_ids(db, tenant_id, row["id"])
    if steps != row["steps"] and user_ids:
        renamed = name != row["name"]
        cases = await case_service.case_rows(db, tenant_id, user_ids)
        texts = {c["id"]: rename_in(c["bdd_content"], row["name"], name) for c in cases} if renamed else {}
        wanted = [n for c in cases for n in names_in(texts.get(c["id"], c["bdd_content"]))]
        known = {name: steps, row["name"]: steps}
        mapping = uses.steps_of(await uses.closure(db, tenant_id, row["project_id"], wanted, known), known)
        shown = [{**c, "bdd_content": texts.get(c["id"], c["bdd_content"])} for c in cases]
        if sum(len(c["bdd_content"]) for c in shown) < PARSE_THREAD_THRESHOLD:
            _check_users(shown, mapping)
        else:
            await asyncio.to_thread(_check_users, shown, mapping)
    return user_ids


async def update_step(db: Database, tenant_id: str, step_id: str, body: SharedStepUpdate) -> SharedStep:
    """Renames it or changes its steps: one transaction writes it, a new version of every case using it
    (a rename rewrites the `* shared:` lines naming it), and the audit entry; the answer lists the cases."""
    row = await _row_or_404(db, tenant_id, step_id)
    name = row["name"] if body.name is msgspec.UNSET else body.name
    steps = row["steps"] if body.steps is msgspec.UNSET else body.steps
    if name == row["name"] and steps == row["steps"]:
        return step_from_row(row, await store.users(db, tenant_id, step_id, USED_BY_LIMIT))
    await _checked_steps(steps)
    planned = await _check_plan(db, tenant_id, row, name, steps)
    now = now_iso()
    async with db.transaction() as tx:
        current = await _row_or_404(tx, tenant_id, step_id)
        if current["version"] != row["version"]:
            raise Conflict(f"shared step {row['name']!r} changed while this was saved: reload it and try again",
                           field="steps")
        if name != row["name"] and await store.name_taken(tx, tenant_id, row["project_id"], name):
            raise Conflict(f"the project already has a shared step named {name!r}", field="name")
        nested = await _no_cycle(tx, tenant_id, row["project_id"], name, steps, row["name"])
        changes: dict[str, Any] = {"name": name, "steps": steps, "version": row["version"] + 1, "updated_at": now}
        await store.update_step(tx, tenant_id, step_id, changes)
        await store.set_nesting(tx, tenant_id, step_id, [nested[n]["id"] for n in names_in(steps) if n in nested])
        texts: dict[str, str] = {}
        if name != row["name"]:
            # the `* shared:` lines naming it, rewritten in the rows as they are now (under the write lock)
            direct = await store.direct_case_ids(tx, tenant_id, step_id)
            texts = {c["id"]: rename_in(c["bdd_content"], row["name"], name)
                     for c in await case_service.case_rows(tx, tenant_id, direct)}
            for parent in await store.parents_of(tx, tenant_id, step_id):
                await store.update_step(tx, tenant_id, parent["id"], {
                    "steps": rename_in(parent["steps"], row["name"], name), "version": parent["version"] + 1,
                    "updated_at": now})
        # the cases that came to use it since the check get their new version too
        user_ids = list(dict.fromkeys([*planned, *await store.user_case_ids(tx, tenant_id, step_id)]))
        await case_service.new_versions(tx, tenant_id, user_ids, now, texts)
        diff = audit.changes_between(row, {**row, **changes}, ("name", "steps"))
        await audit.record(tx, tenant_id, "shared_step.updated", "shared_step", step_id,
                           {**diff, "case_versions": len(user_ids)})
        updated = await _row_or_404(tx, tenant_id, step_id)
        users = await store.users(tx, tenant_id, step_id, USED_BY_LIMIT)
    return step_from_row(updated, users)


async def delete_step(db: Database, tenant_id: str, step_id: str) -> None:
    """Deletes an unused shared step; one that cases or other shared steps use is a 409 naming them."""
    async with db.transaction() as tx:
        row = await _row_or_404(tx, tenant_id, step_id)
        cases, total = await store.users(tx, tenant_id, step_id, 20)
        if total:
            codes = ", ".join(case["code"] for case in cases) + (" …" if total > len(cases) else "")
            raise Conflict(f"shared step {row['name']!r} is used by {total} case(s): {codes}; "
                           "remove its `* shared:` lines first", field="used_by")
        parents = await store.parents_of(tx, tenant_id, step_id)
        if parents:
            raise Conflict(f"shared step {row['name']!r} is used by the shared step(s) "
                           f"{', '.join(repr(p['name']) for p in parents)}", field="used_by")
        await store.delete_step(tx, tenant_id, step_id)
        await audit.record(tx, tenant_id, "shared_step.deleted", "shared_step", step_id,
                           {"project_id": row["project_id"], "name": row["name"]})
