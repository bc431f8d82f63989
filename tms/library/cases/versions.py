"""SQL of case_versions: one row per state a case has had (its history); every query filters on tenant_id.

A version keeps the shared steps its text used (``shared_steps``, migration 0044), as they were when it
was recorded: an old version reads as it was executed and approved then, whatever the shared steps
say today.
"""

from __future__ import annotations

import json
from collections import defaultdict

from tms.db import Database, Row, Transaction

VERSION_COLUMNS = (
    "version, code, title, bdd_content, status, priority, layer, is_e2e, automation_status, tags, tickets, "
    "section_id, project_id, actor_type, actor_id, actor_name, created_at, custom_fields, shared_steps"
)

# the shared steps the cases name themselves (shared_step_uses, by its case index)
_DIRECT = ("SELECT case_id, shared_step_id FROM shared_step_uses WHERE tenant_id = ? "
           "AND case_id IN (SELECT value FROM json_each(?))")
# each of those shared steps with the ones it uses, nested (shared_step_nesting walked downwards): a few
# rows per distinct shared step, however many cases name it
_CLOSURE = ("WITH RECURSIVE down (root, step_id) AS (SELECT value, value FROM json_each(?) "
            "UNION SELECT d.root, n.shared_step_id FROM shared_step_nesting n JOIN down d ON n.parent_id = d.step_id "
            "WHERE n.tenant_id = ?) "
            "SELECT d.root, s.name, s.version, s.steps FROM down d JOIN shared_steps s ON s.id = d.step_id "
            "WHERE s.tenant_id = ?")
# the cases' current state as their version rows, with the shared steps they use (JSON, or NULL)
_SNAPSHOT = (
    "INSERT INTO case_versions (tenant_id, case_id, version, code, title, bdd_content, status, priority, "
    "layer, is_e2e, automation_status, tags, tickets, section_id, project_id, custom_fields, shared_steps, "
    "actor_type, actor_id, actor_name, created_at) "
    "SELECT tenant_id, id, version, code, title, bdd_content, status, priority, layer, is_e2e, "
    "automation_status, tags, tickets, section_id, project_id, custom_fields, ?, ?, ?, ?, ? FROM test_cases "
    "WHERE +tenant_id = ? AND id IN (SELECT value FROM json_each(?))"
)


async def _shared_steps(tx: Transaction, tenant_id: str, case_ids: list[str]) -> dict[str, list[str]]:
    """{JSON [{name, version, steps}]: the case ids using them} per distinct set of shared steps the
    cases use, from the links (two index reads; the JSON made once per set, not once per case)."""
    direct: defaultdict[str, set[str]] = defaultdict(set)
    for row in await tx.fetch_all(_DIRECT, (tenant_id, json.dumps(case_ids))):
        direct[row["case_id"]].add(row["shared_step_id"])
    if not direct:
        return {}
    roots = sorted({step for steps in direct.values() for step in steps})
    reaches: defaultdict[str, dict[str, dict[str, object]]] = defaultdict(dict)
    for row in await tx.fetch_all(_CLOSURE, (json.dumps(roots), tenant_id, tenant_id)):
        reaches[row["root"]][row["name"]] = {"name": row["name"], "version": row["version"], "steps": row["steps"]}
    sets: defaultdict[frozenset[str], list[str]] = defaultdict(list)
    for case_id, named in direct.items():
        sets[frozenset(named)].append(case_id)
    out: dict[str, list[str]] = {}
    for named_set, cases in sets.items():
        used = {name: step for root in named_set for name, step in reaches[root].items()}
        out.setdefault(json.dumps([used[name] for name in sorted(used)]), []).extend(cases)
    return out


async def snapshot(
    tx: Transaction, tenant_id: str, case_ids: list[str], actor: tuple[str, str | None, str], at: str
) -> None:
    """Records the cases' current state (their current ``version``) as a version row with the shared
    steps it uses: two index reads of the links, then one INSERT ... SELECT per distinct set of shared
    steps (and one for the cases using none), sent as one batch.

    Called right after the write that set that state, in the same transaction.
    """
    if not case_ids:
        return
    actor_type, actor_id, actor_name = actor
    shared = await _shared_steps(tx, tenant_id, case_ids)
    using = {case_id for cases in shared.values() for case_id in cases}
    plain = [case_id for case_id in case_ids if case_id not in using] if using else case_ids
    batches = [(steps, cases) for steps, cases in shared.items()] + ([(None, plain)] if plain else [])
    await tx.executemany(_SNAPSHOT, [(steps, actor_type, actor_id, actor_name, at, tenant_id, json.dumps(cases))
                                     for steps, cases in batches])


async def list_versions(
    db: Database, tenant_id: str, case_id: str, limit: int, offset: int
) -> tuple[list[Row], int]:
    rows = await db.fetch_all(
        f"SELECT {VERSION_COLUMNS} FROM case_versions WHERE case_id = ? AND tenant_id = ? "
        "ORDER BY version DESC LIMIT ? OFFSET ?",
        (case_id, tenant_id, limit, offset),
    )
    total = await db.fetch_value(
        "SELECT COUNT(*) FROM case_versions WHERE case_id = ? AND tenant_id = ?", (case_id, tenant_id)
    )
    return rows, int(total)


async def get_version(db: Database, tenant_id: str, case_id: str, version: int) -> Row | None:
    return await db.fetch_one(
        f"SELECT {VERSION_COLUMNS} FROM case_versions WHERE case_id = ? AND version = ? AND tenant_id = ?",
        (case_id, version, tenant_id),
    )
