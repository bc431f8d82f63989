"""Results of a run: per-item validation, linking to cases, upsert, failed events, listing.

A batch is checked item by item (a bad item is rejected on its own, never the batch), then written
with one executemany per table; the events for results that became FAILED go into the outbox in the
same transaction. What this shares with ingest lives in ``tms.runs.results.rows``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tms.attachments.service import attachments_by_result
from tms.db import Database, Row, Transaction
from tms.errors import InvalidInput, NotFound
from tms.failures import service as failures
from tms.failures.flaky import service as flaky
from tms.failures.retest import service as retest
from tms.http.paging import page_window
from tms.ids import new_ids, now_iso
from tms.library.cases.models import Pagination
from tms.notifications import events
from tms.operations.metrics import INGESTED_RESULTS
from tms.runs import store as run_store
from tms.runs.results import store as result_store
from tms.runs.results.models import (
    RESULT_STATUSES,
    BulkAnswer,
    Result,
    ResultIn,
    ResultList,
    ResultsBody,
    ResultsBodyLoose,
)
from tms.runs.results.rows import (
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
from tms.runs.results.store import LinkedRow
from tms.team.audit import service as audit


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


async def post_results(db: Database, tenant_id: str, run_id: str, raw: bytes | bytearray) -> BulkAnswer:
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
        # one entry for the whole batch, with counts: never one per result
        await audit.record(tx, tenant_id, "run.results_posted", "run", run_id, {
            "accepted": len(rows), "created": deltas[0], "rejected": len(errors), "failed": len(failed)})
        tx.after_commit(lambda: INGESTED_RESULTS.inc(len(rows)))
    return bulk_answer(len(linked), errors)


# GET /runs/{id}/results pages by this many results by default, and at most by RESULTS_MAX_LIMIT
RESULTS_DEFAULT_LIMIT = 500
RESULTS_MAX_LIMIT = 5_000


async def list_results(
    db: Database, tenant_id: str, run_id: str, limit: int | None = None, offset: int | None = None, *,
    assignee_id: str | None = None, status: str | None = None,
) -> ResultList:
    """One page of the run's results, linked ones first, then unlinked, each in stored order; the
    attachments of the page's rows only. ``assignee_id`` and ``status`` narrow the list."""
    limit, offset = page_window(limit, offset, default=RESULTS_DEFAULT_LIMIT, maximum=RESULTS_MAX_LIMIT)
    await _get_run(db, tenant_id, run_id)
    if status is not None and status not in RESULT_STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(RESULT_STATUSES)}", field="status")
    if assignee_id is not None or status is not None:
        matching = await result_store.filtered_for_run(db, tenant_id, run_id, assignee_id=assignee_id,
                                                       status=status)
        total, rows = len(matching), matching[offset:offset + limit]
    else:
        linked_total, unlinked_total = await result_store.count_for_run(db, tenant_id, run_id)
        rows = await result_store.page_for_run(db, tenant_id, run_id, limit=limit, offset=offset,
                                               linked_total=linked_total)
        total = linked_total + unlinked_total
    attachments = await attachments_by_result(db, tenant_id, [row["id"] for row in rows])
    return ResultList(
        data=[result_from_row(row, attachments.get(row["id"], [])) for row in rows],
        pagination=Pagination(total=total, limit=limit, offset=offset),
    )


def result_from_row(row: Row, attachments: list[dict[str, Any]]) -> Result:
    """The API shape; step_results is passed through as the stored JSON text (never re-encoded)."""
    steps = row.pop("step_results", None)
    return Result(**row, attachments=attachments,
                  step_results=None if steps is None else msgspec.Raw(steps.encode()))
