"""The case side of shared steps: what a case's text names, expanded with the project's shared steps,
and the links that keep "used by" an index read.

Called by tms.library.cases.service inside its write transactions (``link_cases``), by the execution
view and the case page (``expanded``). It imports nothing of the cases domain, so the cases service can
call it while tms.library.shared_steps.service (which makes the new case versions) calls the cases service.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from tms.db import Database, Row, Transaction
from tms.errors import InvalidInput
from tms.library.gherkin.service import EXPANDED_STEPS_LIMIT, PARSE_THREAD_THRESHOLD, validate_gherkin, written_steps
from tms.library.gherkin.shared import expand, fits_by_lines, names_in
from tms.library.shared_steps import store

# the most shared steps one expansion may load (each level of nesting is one query)
CLOSURE_LIMIT = 1_000


async def closure(db: Database | Transaction, tenant_id: str, project_id: str, names: list[str],
                  known: Mapping[str, str] | None = None) -> dict[str, Row]:
    """{name: row} of the named shared steps and of those their steps name, level by level (one query
    a level). ``known``: steps to use instead of the stored ones (a shared step being saved)."""
    found: dict[str, Row] = {}
    known = known or {}
    wanted = [name for name in dict.fromkeys(names)]
    seen: set[str] = set()
    while wanted and len(found) < CLOSURE_LIMIT:
        seen.update(wanted)
        rows = await store.by_names(db, tenant_id, project_id, [name for name in wanted if name not in known])
        for row in rows:
            found[row["name"]] = row
        following: list[str] = []
        for name in wanted:
            steps = known.get(name) if name in known else found[name]["steps"] if name in found else None
            following.extend(n for n in names_in(steps) if n not in seen)
        wanted = list(dict.fromkeys(following))
    return found


def steps_of(rows: Mapping[str, Row], known: Mapping[str, str] | None = None) -> dict[str, str]:
    return {**{name: row["steps"] for name, row in rows.items()}, **(known or {})}


def _check(texts: list[tuple[str, str, dict[str, str]]]) -> None:
    """Each (where, text, steps by name) expanded strictly and validated (the step limit applies to the
    expanded checklist); CPU only, run in a worker thread for long texts."""
    for where, text, steps in texts:
        try:
            expanded = expand(text, steps, strict=True)
            if not fits_by_lines(expanded, EXPANDED_STEPS_LIMIT):
                validate_gherkin(expanded, written=written_steps(text))
        except InvalidInput as exc:
            raise InvalidInput(f"{where}{exc.detail}", field="bdd_content") from None


async def link_cases(tx: Transaction, tenant_id: str, cases: list[tuple[str, str | None, str]], *,
                     new: bool = False) -> None:
    """Checks and links the shared steps the cases' texts name ((case id, project id, text) each),
    in the caller's transaction: an unknown name, a case in no project naming one, or an expansion past
    the limits is a 400 naming ``bdd_content`` and nothing is written. ``new``: the cases have no links yet."""
    named = [(case_id, project_id, text, names_in(text)) for case_id, project_id, text in cases]
    using = [entry for entry in named if entry[3]]
    if not using and (new or not await store.linked_cases(tx, tenant_id, [case_id for case_id, *_ in cases])):
        return
    many = len(cases) > 1
    by_project: dict[str, dict[str, Row]] = {}
    checks: list[tuple[str, str, dict[str, str]]] = []
    links: list[tuple[str, str]] = []
    for index, (case_id, project_id, text, names) in enumerate(named):
        if not names:
            continue
        where = f"cases[{index}]: " if many else ""
        if project_id is None:
            raise InvalidInput(f"{where}bdd_content: a case in no project cannot use shared steps "
                               f"(it names {names[0]!r})", field="bdd_content")
        if project_id not in by_project:
            project_names = [n for _, p, _, ns in using if p == project_id for n in ns]
            by_project[project_id] = await closure(tx, tenant_id, project_id, project_names)
        rows = by_project[project_id]
        checks.append((where, text, steps_of(rows)))
        links.extend((rows[name]["id"], case_id) for name in names if name in rows)
    if sum(len(text) for _, text, _ in checks) < PARSE_THREAD_THRESHOLD:
        _check(checks)
    else:
        await asyncio.to_thread(_check, checks)
    await store.set_case_links(tx, tenant_id, [case_id for case_id, *_ in cases], links)


async def expanded(db: Database | Transaction, tenant_id: str, project_id: str | None, text: str | None) -> str | None:
    """The case's text with its shared steps expanded (as written when it names none, or they are gone)."""
    if text is None or project_id is None:
        return text
    names = names_in(text)
    if not names:
        return text
    steps = steps_of(await closure(db, tenant_id, project_id, names))
    if len(text) < PARSE_THREAD_THRESHOLD:
        return expand(text, steps)
    return await asyncio.to_thread(expand, text, steps)
