"""The retest queue: cases flagged because a linked bug was fixed (or by a person), cleared by a new result.

Every function that writes takes the caller's transaction, so a flag, its ``retest.required`` event
and the change that caused them (a tracker call, a PATCH, a result upsert, an ingest) commit together.

Flags set or cleared by hand (the web button) or by the tracker loop record ``case.retest_flagged`` /
``case.retest_cleared`` (one entry per call: the case's id when it is one case, the codes when more);
``PATCH /api/v1/cases/{id}`` records its ``needs_retest`` change in its own ``case.updated`` entry, and a
flag cleared by a new result is explained by that write's own entry.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tms.db import Database, Row, Transaction
from tms.errors import NotFound
from tms.failures.retest import store as retest_store
from tms.ids import now_iso
from tms.integrations import to_iso
from tms.notifications.events import emit_many
from tms.team.audit import service as audit

MANUAL_REASON = "flagged by hand"
# up to this many ids, look each up by primary key; beyond, read the (small) queue instead
_LOOKUP_LIMIT = 1000


async def cases_linked_to_bug(tx: Transaction | Database, tenant_id: str, keys: Iterable[str],
                              short_keys: Iterable[str] = (), short_key_sources: Iterable[str] = ()) -> list[Row]:
    """The tenant's cases linked to a bug (its key in their tickets or their results' bug key): id, code,
    project_id, needs_retest, retest_flagged_at. ``short_keys`` ('#12') count only in tickets of one of
    ``short_key_sources`` (see ``store.cases_linked_to_bug``)."""
    return await retest_store.cases_linked_to_bug(tx, tenant_id, keys, short_keys, short_key_sources)


def retest_required_data(row: Row, reason: str, bug_key: str | None, flagged_at: str) -> dict[str, Any]:
    """``data`` of retest.required, exactly the contract's fields."""
    return {
        "test_case_id": row["id"],
        "test_case_code": row["code"],
        "project_id": row["project_id"],
        "reason": reason,
        "bug_ticket_key": bug_key,
        "flagged_at": flagged_at,
    }


async def flag_for_retest(
    tx: Transaction,
    db: Database,
    tenant_id: str,
    case_ids: Iterable[str],
    reason: str = MANUAL_REASON,
    bug_key: str | None = None,
    at: str | None = None,
    *,
    audited: bool = True,
) -> list[Row]:
    """Flags the cases (ids of this tenant) and fires one ``retest.required`` per newly flagged case.

    Returns the newly flagged rows (id, code, project_id); cases already waiting are left as they
    are and fire nothing, so a redelivered or repeated flag never doubles the queue or the events.
    ``audited=False`` when the caller's own entry already records the change (the API's PATCH).
    """
    flagged_at = at or now_iso()
    newly = await retest_store.flag_cases(tx, tenant_id, case_ids, reason, bug_key, flagged_at)
    await emit_many(
        tx, db, tenant_id, "retest.required",
        [retest_required_data(row, reason, bug_key, flagged_at) for row in newly],
    )
    if newly and audited:
        await _record(tx, tenant_id, "case.retest_flagged", [row["id"] for row in newly],
                      [row["code"] for row in newly], {"reason": reason, "bug_ticket_key": bug_key})
    return newly


async def clear_retest(tx: Transaction, tenant_id: str, case_ids: Iterable[str], at: str | None = None, *,
                       audited: bool = True) -> int:
    """Takes the cases out of the queue by hand; fires nothing."""
    ids = sorted(set(case_ids))
    flagged = await retest_store.flagged_among(tx, tenant_id, ids) if audited else []
    cleared = await retest_store.clear_cases(tx, tenant_id, ids, at or now_iso())
    if cleared and flagged:
        codes = await retest_store.codes_of(tx, tenant_id, [row["id"] for row in flagged])
        await _record(tx, tenant_id, "case.retest_cleared", [row["id"] for row in flagged], codes, {})
    return cleared


async def _record(tx: Transaction, tenant_id: str, action: str, ids: list[str], codes: list[str],
                  extra: dict[str, Any]) -> None:
    """One entry per call, never one per case: a single case is the entity, more are listed by code."""
    if len(ids) == 1:
        changes: dict[str, Any] = {"needs_retest": [action.endswith("cleared"), action.endswith("flagged")],
                                   "code": codes[0] if codes else None, **extra}
        await audit.record(tx, tenant_id, action, "case", ids[0], changes)
    else:
        await audit.record(tx, tenant_id, action, "case", None, {"cases": len(ids), "codes": codes[:100], **extra})


async def clear_after_results(
    tx: Transaction, tenant_id: str, results: Iterable[tuple[str, str | None]], at: str | None = None
) -> int:
    """Clears the flag of every case that just got a result: call it in the results upsert or ingest
    transaction with ``(test_case_id, executed_at)`` pairs of the stored results.

    A result counts as the retest when it is recorded after the flag was set, unless it says it was
    executed before that (a late upload of an old report is not a retest of the fix). Cheap on the
    ingest path: one indexed read of the flagged cases and, only when some got a result, one UPDATE;
    timestamps are parsed only for those.
    """
    pairs = results if isinstance(results, list) else list(results)
    if not pairs:
        return 0
    case_ids = {case_id for case_id, _ in pairs}
    if len(case_ids) <= _LOOKUP_LIMIT:
        flagged_rows = await retest_store.flagged_among(tx, tenant_id, case_ids)
    else:
        # a big ingest: the queue (a partial index) is far smaller than the list of ids
        flagged_rows = [row for row in await retest_store.flagged_in_tenant(tx, tenant_id) if row["id"] in case_ids]
    if not flagged_rows:
        return 0
    flagged_at = {row["id"]: row["retest_flagged_at"] or "" for row in flagged_rows}
    # per case, the latest execution decides; a result without executed_at ran just now (None)
    executed: dict[str, str | None] = {}
    for case_id, executed_at in pairs:
        if case_id not in flagged_at:
            continue
        when = to_iso(executed_at) if executed_at else None
        if case_id not in executed:
            executed[case_id] = when
        elif executed[case_id] is not None:
            executed[case_id] = None if when is None else max(executed[case_id] or "", when)
    due = [case_id for case_id, when in executed.items() if when is None or when >= flagged_at[case_id]]
    if not due:
        return 0
    return await retest_store.clear_cases(tx, tenant_id, due, at or now_iso())


async def set_needs_retest(
    tx: Transaction, db: Database, tenant_id: str, case_id: str, needs_retest: bool, reason: str | None = None,
    *, audited: bool = False,
) -> bool:
    """What ``PATCH /api/v1/cases/{id}`` with ``needs_retest`` does, inside the PATCH transaction (whose
    ``case.updated`` entry records the change: ``audited`` is for callers without an entry of their own).

    True fires ``retest.required`` when the case was not waiting yet; False clears the flag.
    Returns whether anything changed.
    """
    if needs_retest:
        return bool(await flag_for_retest(tx, db, tenant_id, [case_id], (reason or "").strip() or MANUAL_REASON,
                                          audited=audited))
    return bool(await clear_retest(tx, tenant_id, [case_id], audited=audited))


async def flag_case_by_hand(db: Database, tenant_id: str, id_or_code: str, needs_retest: bool,
                            reason: str | None = None) -> Row:
    """The web UI's "Flag for retest" / "Clear" button: one transaction of its own."""
    async with db.transaction() as tx:
        case = await retest_store.find_case(tx, tenant_id, id_or_code)
        if case is None:
            raise NotFound(f"test case {id_or_code} not found")
        await set_needs_retest(tx, db, tenant_id, case["id"], needs_retest, reason, audited=True)
        row = await retest_store.find_case(tx, tenant_id, case["id"])
    assert row is not None
    return row


async def list_retest_queue(db: Database, tenant_id: str, project_id: str | None = None) -> list[Row]:
    """The cases waiting for a retest, oldest first: id, code, title, project_id, status, priority,
    automation_status, retest_reason, retest_bug_key, retest_flagged_at. For the dashboard and case list."""
    return await retest_store.retest_queue(db, tenant_id, project_id)

