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

import msgspec

from tms.db import Database, Row, Transaction
from tms.errors import Conflict, InvalidInput, NotFound
from tms.ids import now_iso
from tms.runs import store as run_store
from tms.runs import writes
from tms.runs.ingest import idempotency as idempotency_store
from tms.runs.ingest.models import IngestAnswer, IngestBody
from tms.runs.results.models import ItemError, ResultIn
from tms.runs.results.rows import cases_still_exist, resolve_cases
from tms.runs.writes import Batch, RunRef

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


def _refuse_if_nothing_stored(batch: Batch) -> None:
    """As for a new run: a body none of whose items can be stored changes nothing."""
    if batch.stored:
        return
    errors = batch.errors
    shown = sorted(errors)[:NOTHING_STORED_SHOWN]
    raise InvalidInput(
        f"No result could be stored: all {len(errors)} items of results were rejected. Nothing was added "
        "to the run.",
        field="results",
        errors=[{"field": f"results[{index}]", "message": errors[index]} for index in shown],
    )


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
    run = RunRef.of(await shard_run(db, tenant_id, body))  # fail fast; re-checked under the lock
    now = now_iso()
    matcher = await writes.matcher_ahead(db, tenant_id, run.project_id, writes.texts_to_match(items))
    rules = await writes.fields_ahead(db, tenant_id, run.project_id, items)
    build = (tenant_id, run, now, body.framework, items)
    batch = writes.prepare(*build, await resolve_cases(db, tenant_id, items), item_errors, matcher, rules=rules)
    _refuse_if_nothing_stored(batch)
    async with db.transaction() as tx:
        if key:
            previous = await idempotency_store.get_answer(tx, tenant_id, key)
            if previous is not None:
                return previous
        run = RunRef.of(await shard_run(tx, tenant_id, body))
        if not await cases_still_exist(tx, tenant_id, batch.case_ids()):
            # a case was deleted since the lookup: look again, under the write lock (rare)
            batch = writes.prepare(*build, await resolve_cases(tx, tenant_id, items), item_errors, matcher,
                                   rules=rules)
            _refuse_if_nothing_stored(batch)
        settled = writes.settle(batch, run, await writes.stored_state(tx, run.id, batch))
        await writes.store_batch(tx, db, tenant_id, run, batch, settled, now, audit_action="run.ingested",
                                 audit_extra={"shard": True})
        answer = IngestAnswer(
            run_id=run.id, accepted=batch.stored, rejected=len(batch.errors),
            errors=[ItemError(index=index, error=batch.errors[index]) for index in sorted(batch.errors)],
            result_ids=settled.result_ids,
        )
        status_code, answer_body = (207 if batch.errors else 201), _encoder.encode(answer)
        if key:
            await idempotency_store.save_answer(tx, tenant_id, key, request_sha256, status_code, answer_body, now)
    return status_code, answer_body
