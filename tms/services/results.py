"""Results of a run: per-item validation, linking to cases, upsert, failed events, listing.

A batch is checked item by item (a bad item is rejected on its own, never the batch), then written
with one executemany per table; the events for results that became FAILED go into the outbox in the
same transaction. What this shares with ingest lives in ``tms.services.result_rows``.
"""

from __future__ import annotations

from tms.db import Database, Row, Transaction
from tms.ids import new_ids, now_iso
from tms.models.results import BulkAnswer, Result, ResultIn, ResultsBody, ResultsBodyLoose
from tms.services import events, failures, flaky, retest
from tms.services.attachments import attachments_by_result
from tms.services.errors import InvalidInput, NotFound
from tms.services.result_rows import (
    STATUS_INDEX,
    CaseMaps,
    bulk_answer,
    cases_still_exist,
    decode_bulk,
    failed_event,
    link,
    linked_row,
    off_loop,
    resolve_cases,
    retest_pairs,
)
from tms.store import results as result_store
from tms.store import runs as run_store
from tms.store.results import LinkedRow


async def _get_run(db: Database | Transaction, tenant_id: str, run_id: str) -> Row:
    run = await run_store.get_run(db, tenant_id, run_id)
    if run is None:
        raise NotFound(f"run {run_id} not found")
    return run


def _link_all(
    items: list[ResultIn | None], cases: CaseMaps, item_errors: dict[int, str]
) -> tuple[list[tuple[int, ResultIn, Row]], dict[int, str]]:
    """(index, item, case) of every item naming an existing case, and all errors by index (the
    items' own plus those naming no case or an unknown one)."""
    by_code, by_id = cases
    errors = dict(item_errors)
    linked: list[tuple[int, ResultIn, Row]] = []
    for index, item in enumerate(items):
        if item is None:
            continue
        case = link(item, by_code, by_id)
        if case is None:
            errors[index] = "each result must name test_case_code or test_case_id"
        elif isinstance(case, str):
            errors[index] = case
        else:
            linked.append((index, item, case))
    return linked, errors


async def post_results(db: Database, tenant_id: str, run_id: str, raw: bytes) -> BulkAnswer:
    """Upserts the items of ``{"results": [...]}`` into the run: one row per (run, case), last write wins."""
    await _get_run(db, tenant_id, run_id)
    _, items, errors = await off_loop(len(raw), decode_bulk, raw, ResultsBody, ResultsBodyLoose)
    if not items:
        raise InvalidInput("results must hold at least one result", field="results")
    item_errors = errors
    linked, errors = _link_all(items, await resolve_cases(db, tenant_id, items), item_errors)
    if not linked:
        return bulk_answer(0, errors)

    now = now_iso()
    async with db.transaction() as tx:
        run = await _get_run(tx, tenant_id, run_id)  # re-read: the run may have changed meanwhile
        if not await cases_still_exist(tx, tenant_id, {case["id"] for _, _, case in linked}):
            # a case was deleted since the lookup: look again, under the write lock
            linked, errors = _link_all(items, await resolve_cases(tx, tenant_id, items), item_errors)
            if not linked:
                return bulk_answer(0, errors)
        fresh_ids = iter(new_ids(len(linked)))
        stamper = await failures.stamper_for(tx, tenant_id, run["project_id"])
        state = await result_store.current_for_cases(tx, run_id, list({case["id"] for _, _, case in linked}))
        deltas = [0, 0, 0, 0, 0, 0]
        rows: list[LinkedRow] = []
        failed = []
        for _, item, case in linked:
            previous = state.get(case["id"])
            result_id = next(fresh_ids) if previous is None else previous[0]
            if previous is None:
                deltas[0] += 1
            else:
                deltas[STATUS_INDEX[previous[1]]] -= 1
            deltas[STATUS_INDEX[item.status]] += 1
            state[case["id"]] = (result_id, item.status)
            title = item.title or case["title"]
            stamp = stamper.stamp(item.status, item.error_message, item.error_stack, item.bug_ticket_key,
                                  item.bug_ticket_url)
            rows.append(linked_row(result_id, tenant_id, run_id, case, title, item, item.framework, now, stamp))
            # fired when a result becomes FAILED: created FAILED or changed to FAILED, not when it stays so
            if item.status == "FAILED" and (previous is None or previous[1] != "FAILED"):
                failed.append(failed_event(run, result_id, case, title, item))
        await result_store.upsert_linked(tx, rows)
        await failures.record(tx, tenant_id, run["project_id"], run_id, now, stamper)
        flaky.touch_after_commit(tx, db, tenant_id, run["project_id"])
        await run_store.add_results(tx, tenant_id, run_id, tuple(deltas), now)  # type: ignore[arg-type]
        await events.emit_many(tx, db, tenant_id, "test_run_result.failed", failed)
        # a new result is the retest a flagged case waits for: (test_case_id, executed_at) of each row
        await retest.clear_after_results(tx, tenant_id, retest_pairs(rows), now)
    return bulk_answer(len(linked), errors)


async def list_results(db: Database, tenant_id: str, run_id: str) -> list[Result]:
    await _get_run(db, tenant_id, run_id)
    rows = await result_store.list_for_run(db, tenant_id, run_id)
    attachments = await attachments_by_result(db, tenant_id, [row["id"] for row in rows])
    return [Result(**row, attachments=attachments.get(row["id"], [])) for row in rows]
