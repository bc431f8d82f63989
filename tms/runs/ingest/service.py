"""POST /api/v1/ingest: one request, one transaction, one COMPLETED run with all its results.

Built for 100k-result reports: the body is decoded typed in one pass, every named case is resolved
with two queries, ids are minted in bulk, rows are small structs (``tms.runs.results.store``) and each
table gets one executemany. The rows and all their side effects are written by ``tms.runs.writes``.
An Idempotency-Key makes a retried request (same key, same bytes) return the first answer.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from tms.db import Database
from tms.errors import Conflict, InvalidInput
from tms.failures.known_issues.service import Matcher
from tms.ids import new_id, now_iso
from tms.library.fields.values import ResultFieldRules
from tms.runs import writes
from tms.runs.ingest import idempotency as idempotency_store
from tms.runs.ingest import shards
from tms.runs.ingest.models import IngestAnswer, IngestBody, IngestBodyLoose
from tms.runs.results.models import ItemError, ResultIn
from tms.runs.results.rows import CaseMaps, case_versions, decode_bulk, off_loop, resolve_cases
from tms.runs.service import require_project
from tms.runs.writes import Batch, NewRun, RunRef, Settled

MAX_KEY_LENGTH = 255
_encoder = msgspec.json.Encoder()


def check_idempotency_key(key: str | None) -> str | None:
    if key is None:
        return None
    if not 1 <= len(key) <= MAX_KEY_LENGTH or not key.isascii() or not key.isprintable():
        raise InvalidInput(f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} printable ASCII characters",
                           field="Idempotency-Key")
    return key


async def _replay(row: dict[str, Any], request_sha256: str) -> tuple[int, bytes]:
    if row["request_sha256"] != request_sha256:
        raise Conflict("This Idempotency-Key was already used with a different request body; use a new key.")
    return int(row["response_status"]), bytes(row["response_body"])


# A body whose every item is rejected is a 400; its problem lists this many of the item errors.
NOTHING_STORED_SHOWN = 100


def _refuse_if_nothing_stored(batch: Batch) -> None:
    """No run without a result: a body none of whose items can be stored creates nothing, fires nothing."""
    if batch.stored:
        return
    errors = batch.errors
    shown = sorted(errors)[:NOTHING_STORED_SHOWN]
    more = f"; the first {len(shown)} are listed" if len(errors) > len(shown) else ""
    raise InvalidInput(
        f"No result could be stored: all {len(errors)} items of results were rejected{more}. "
        "Nothing was created.",
        field="results",
        errors=[{"field": f"results[{index}]", "message": errors[index]} for index in shown],
    )


def _prepare_new(tenant_id: str, run: RunRef, now: str, default_framework: str | None,
                 items: list[ResultIn | None], cases: CaseMaps, item_errors: dict[int, str], matcher: Matcher,
                 rules: ResultFieldRules) -> tuple[Batch, Settled]:
    """A new run holds nothing yet: its rows and what they do to it, all before the transaction."""
    batch = writes.prepare(tenant_id, run, now, default_framework, items, cases, item_errors, matcher, rules=rules)
    return batch, writes.settle(batch, run, {})


def _answer(run_id: str, batch: Batch, settled: Settled) -> tuple[int, bytes]:
    """(HTTP status, JSON body) of an ingest: 201 when every item was stored, 207 when some were rejected."""
    errors = batch.errors
    answer = IngestAnswer(
        run_id=run_id, accepted=batch.stored, rejected=len(errors),
        errors=[ItemError(index=index, error=errors[index]) for index in sorted(errors)],
        result_ids=settled.result_ids,
    )
    return 207 if errors else 201, _encoder.encode(answer)


async def ingest(
    db: Database, tenant_id: str, raw: bytes | bytearray, idempotency_key: str | None = None
) -> tuple[int, bytes]:
    """Returns (HTTP status, JSON body): 201 when every item was stored, 207 when some were rejected.

    A body none of whose items can be stored is a 400 (``InvalidInput``): no run, no event.
    """
    key = check_idempotency_key(idempotency_key)
    request_sha256 = hashlib.sha256(raw).hexdigest() if key else ""
    if key:
        previous = await idempotency_store.get_answer(db, tenant_id, key)
        if previous is not None:
            return await _replay(previous, request_sha256)

    body, items, item_errors = await off_loop(len(raw), decode_bulk, raw, IngestBody, IngestBodyLoose)
    if not items:
        raise InvalidInput("results must hold at least one result", field="results")
    if body.run_id is not None:
        # a shard: into an existing run, which stays open (tms.runs.ingest.shards)
        outcome = await shards.ingest_into_run(db, tenant_id, body, items, item_errors, key, request_sha256)
        return outcome if isinstance(outcome, tuple) else await _replay(outcome, request_sha256)
    await require_project(db, tenant_id, body.project_id)
    cases = await resolve_cases(db, tenant_id, items)

    now = now_iso()
    run = RunRef(new_id(), (body.run_name or "").strip() or now, body.project_id, body.environment)
    build = (tenant_id, run, now, body.framework, items)
    matcher = await writes.matcher_ahead(db, tenant_id, run.project_id, writes.texts_to_match(items))
    rules = await writes.fields_ahead(db, tenant_id, run.project_id, items)
    batch, settled = await off_loop(len(raw), _prepare_new, *build, cases, item_errors, matcher, rules)
    _refuse_if_nothing_stored(batch)

    async with db.transaction() as tx:
        if key:
            # the authoritative check, under the write lock: a concurrent retry may have just finished
            previous = await idempotency_store.get_answer(tx, tenant_id, key)
            if previous is not None:
                return await _replay(previous, request_sha256)
        await require_project(tx, tenant_id, run.project_id)
        versions = await case_versions(tx, tenant_id, batch.case_ids())
        if versions is None:
            # a case was deleted since the lookup: look again and rebuild, under the write lock (rare)
            batch, settled = await off_loop(len(raw), _prepare_new, *build, await resolve_cases(tx, tenant_id, items),
                                            item_errors, matcher, rules)
            _refuse_if_nothing_stored(batch)
            versions = await case_versions(tx, tenant_id, batch.case_ids()) or {}
        status_code, answer_body = _answer(run.id, batch, settled)
        skipped = {"known_issue_matching_skipped": matcher.over_budget} if matcher.over_budget else {}
        await writes.store_batch(
            tx, db, tenant_id, run, batch, settled, now, audit_action="run.ingested",
            audit_extra={"name": run.name, **skipped},
            new_run=NewRun(run.name, run.environment, "COMPLETED", now), versions=versions)
        if key:
            await idempotency_store.save_answer(tx, tenant_id, key, request_sha256, status_code, answer_body, now)
    return status_code, answer_body
