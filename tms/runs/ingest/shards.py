"""An ingest with ``run_id``: one shard of a parallel CI job, added to an existing run.

The run must belong to the body's project and tenant (404 otherwise, as for any foreign id) and
must not be finished: a COMPLETED (or SYNCED) run is a 409 saying to complete the run after the
shards. Results are written as ``POST /runs/{id}/results`` writes them: a result naming a case
replaces that case's result in the run (same result id, counts moved from the old status to the
new), unlinked results are appended. The run is not completed and fires no ``test_run.completed``
(``tms run complete`` does that once); ``test_run_result.failed`` fires for results that become
FAILED. The first stored results move a PENDING run to IN_PROGRESS.

Shards may arrive at the same time: the run's current results for the named cases are read inside
the write transaction, so two shards naming the same case upsert one after the other, never both
counting it as new.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tms.db import Database, Row, Transaction
from tms.errors import Conflict, InvalidInput, NotFound
from tms.failures import service as failures
from tms.failures.flaky import service as flaky
from tms.failures.retest import service as retest
from tms.ids import new_ids, now_iso
from tms.notifications import events
from tms.operations.metrics import INGESTED_RESULTS
from tms.runs import store as run_store
from tms.runs.ingest import idempotency as idempotency_store
from tms.runs.ingest.models import IngestAnswer, IngestBody
from tms.runs.results import store as result_store
from tms.runs.results.models import ItemError, ResultIn
from tms.runs.results.rows import (
    STATUS_INDEX,
    CaseMaps,
    cases_still_exist,
    failed_event,
    link,
    linked_row,
    resolve_cases,
    retest_pairs,
    unlinked_row,
)
from tms.runs.results.store import LinkedRow, UnlinkedRow
from tms.team.audit import service as audit

FINISHED = ("COMPLETED", "SYNCED")
NOTHING_STORED_SHOWN = 100
_encoder = msgspec.json.Encoder()


def check_shard_body(body: IngestBody) -> None:
    """A shard adds to a run that already has its name and environment: naming them again is an error."""
    for field in ("run_name", "environment"):
        if getattr(body, field) is not None:
            raise InvalidInput(f"{field} cannot be combined with run_id: the run already has its {field}",
                               field=field)


async def shard_run(db: Database | Transaction, tenant_id: str, body: IngestBody) -> Row:
    run_id = body.run_id or ""
    run = await run_store.get_run(db, tenant_id, run_id)
    if run is None or run["project_id"] != body.project_id:
        raise NotFound(f"run {run_id} not found in project {body.project_id}", field="run_id")
    if run["status"] in FINISHED:
        raise Conflict(f"run {run_id} is {run['status']}: results can no longer be added to it; send every shard "
                       "before completing the run (tms run complete)")
    return run


def _split(
    items: list[ResultIn | None], cases: CaseMaps, item_errors: dict[int, str]
) -> tuple[list[tuple[ResultIn, Row]], list[ResultIn], dict[int, str]]:
    """(item, case) of items naming a case, items naming none, and every error by index."""
    by_code, by_id = cases
    errors = dict(item_errors)
    linked: list[tuple[ResultIn, Row]] = []
    unlinked: list[ResultIn] = []
    for index, item in enumerate(items):
        if item is None:
            continue
        case = link(item, by_code, by_id)
        if isinstance(case, str):
            errors[index] = case
        elif case is None:
            unlinked.append(item)
        else:
            linked.append((item, case))
    if not linked and not unlinked:
        # as for a new run: a body none of whose items can be stored changes nothing
        shown = sorted(errors)[:NOTHING_STORED_SHOWN]
        raise InvalidInput(
            f"No result could be stored: all {len(errors)} items of results were rejected. Nothing was added "
            "to the run.",
            field="results",
            errors=[{"field": f"results[{index}]", "message": errors[index]} for index in shown],
        )
    return linked, unlinked, errors


async def ingest_into_run(
    db: Database,
    tenant_id: str,
    body: IngestBody,
    items: list[ResultIn | None],
    item_errors: dict[int, str],
    key: str | None,
    request_sha256: str,
) -> tuple[int, bytes] | Row:
    """(HTTP status, JSON answer); or, when the Idempotency-Key was used meanwhile, its stored answer row
    for the caller to replay (it compares the request's hash)."""
    check_shard_body(body)
    await shard_run(db, tenant_id, body)  # fail fast, before resolving cases; re-checked under the lock
    linked, unlinked, errors = _split(items, await resolve_cases(db, tenant_id, items), item_errors)
    now = now_iso()
    async with db.transaction() as tx:
        if key:
            previous = await idempotency_store.get_answer(tx, tenant_id, key)
            if previous is not None:
                return previous
        run = await shard_run(tx, tenant_id, body)
        if not await cases_still_exist(tx, tenant_id, {case["id"] for _, case in linked}):
            # a case was deleted since the lookup: look again, under the write lock (rare)
            linked, unlinked, errors = _split(items, await resolve_cases(tx, tenant_id, items), item_errors)
        run_id = run["id"]
        stamper = await failures.stamper_for(tx, tenant_id, run["project_id"])
        # where each item of the body landed (result_ids of the answer), found by the item object
        position = {id(item): index for index, item in enumerate(items) if item is not None}
        result_ids: list[str | None] = [None] * len(items)
        ids = iter(new_ids(len(linked) + len(unlinked)))
        state = await result_store.current_for_cases(tx, run_id, list({case["id"] for _, case in linked}))
        deltas = [0, 0, 0, 0, 0, 0]
        linked_rows: list[LinkedRow] = []
        unlinked_rows: list[UnlinkedRow] = []
        failed: list[dict[str, Any]] = []
        for item, case in linked:
            previous_row = state.get(case["id"])
            result_id = next(ids) if previous_row is None else previous_row[0]
            if previous_row is None:
                deltas[0] += 1
            else:
                deltas[STATUS_INDEX[previous_row[1]]] -= 1
            deltas[STATUS_INDEX[item.status]] += 1
            state[case["id"]] = (result_id, item.status)
            result_ids[position[id(item)]] = result_id
            title = item.title or case["title"]
            stamp = stamper.stamp(item.status, item.error_message, item.error_stack, item.bug_ticket_key,
                                  item.bug_ticket_url)
            linked_rows.append(linked_row(result_id, tenant_id, run_id, case, title, item,
                                          item.framework or body.framework, now, stamp))
            # fired when a result becomes FAILED: created FAILED or changed to FAILED, not when it stays so
            if item.status == "FAILED" and (previous_row is None or previous_row[1] != "FAILED"):
                failed.append(failed_event(run, result_id, case, title, item))
        for item in unlinked:
            result_id = next(ids)
            result_ids[position[id(item)]] = result_id
            deltas[0] += 1
            deltas[STATUS_INDEX[item.status]] += 1
            stamp = stamper.stamp(item.status, item.error_message, item.error_stack, item.bug_ticket_key,
                                  item.bug_ticket_url)
            unlinked_rows.append(unlinked_row(result_id, tenant_id, run["project_id"], run_id, item,
                                              item.framework or body.framework, now, stamp))
            if item.status == "FAILED":
                failed.append(failed_event(run, result_id, None, item.title, item))
        if linked_rows:
            await result_store.upsert_linked(tx, linked_rows)
            # a new result is the retest a flagged case waits for
            await retest.clear_after_results(tx, tenant_id, retest_pairs(linked_rows), now)
        if unlinked_rows:
            await result_store.insert_unlinked(tx, unlinked_rows)
        await failures.record(tx, tenant_id, run["project_id"], run_id, now, stamper)
        flaky.touch_after_commit(tx, db, tenant_id, run["project_id"])
        await run_store.add_results(tx, tenant_id, run_id, tuple(deltas), now)  # type: ignore[arg-type]
        await events.emit_many(tx, db, tenant_id, "test_run_result.failed", failed)
        # one entry for the whole shard, with counts: never one per result
        await audit.record(tx, tenant_id, "run.ingested", "run", run_id, {
            "shard": True, "linked": len(linked_rows), "unlinked": len(unlinked_rows), "rejected": len(errors),
            "failed": len(failed)})
        stored = len(linked_rows) + len(unlinked_rows)
        tx.after_commit(lambda: INGESTED_RESULTS.inc(stored))
        answer = IngestAnswer(
            run_id=run_id, accepted=len(linked_rows) + len(unlinked_rows), rejected=len(errors),
            errors=[ItemError(index=index, error=errors[index]) for index in sorted(errors)],
            result_ids=result_ids,
        )
        status_code, answer_body = (207 if errors else 201), _encoder.encode(answer)
        if key:
            await idempotency_store.save_answer(tx, tenant_id, key, request_sha256, status_code, answer_body, now)
    return status_code, answer_body
