"""POST /api/v1/ingest: one request, one transaction, one COMPLETED run with all its results.

Built for 100k-result reports: the body is decoded typed in one pass, every named case is resolved
with two queries, ids are minted in bulk, rows are small structs (``tms.runs.results.store``) and each
table gets one executemany.
An Idempotency-Key makes a retried request (same key, same bytes) return the first answer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any, NamedTuple

import msgspec

from tms.db import Database
from tms.errors import Conflict, InvalidInput
from tms.failures import service as failures
from tms.failures.flaky import service as flaky
from tms.failures.known_issues import service as known_issues
from tms.failures.known_issues.service import Matcher
from tms.failures.retest import service as retest
from tms.ids import new_id, new_ids, now_iso
from tms.notifications import events
from tms.operations.metrics import INGESTED_RESULTS
from tms.runs import store as run_store
from tms.runs.ingest import idempotency as idempotency_store
from tms.runs.ingest import shards
from tms.runs.ingest.models import IngestAnswer, IngestBody, IngestBodyLoose
from tms.runs.results import store as result_store
from tms.runs.results.models import ItemError, ResultIn
from tms.runs.results.rows import (
    STATUS_INDEX,
    CaseMaps,
    case_versions,
    decode_bulk,
    failed_event,
    link,
    linked_row,
    off_loop,
    resolve_cases,
    retest_pairs,
    unlinked_row,
)
from tms.runs.results.store import LinkedRow, UnlinkedRow
from tms.runs.service import completed_event, require_project
from tms.team.audit import service as audit

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


class _Rows(NamedTuple):
    # every item's error by index: its own (from decoding) plus those naming an unknown case
    errors: dict[int, str]
    linked: list[LinkedRow]
    unlinked: list[UnlinkedRow]
    # per case: (result id of its first row, last status): duplicates in one report upsert like POST results
    linked_state: dict[str, tuple[str, str]]
    # the run's counts (tms.runs.store.COUNT_COLUMNS order); linked results are added once per case
    counts: list[int]
    failed: list[dict[str, Any]]
    # per item, the id of the result it landed in (None when rejected): items of one case share it
    result_ids: list[str | None]
    # fingerprints seen and known-issue bugs applied, for the first-seen and daily tables
    stamper: failures.Stamper


def _build_rows(
    tenant_id: str,
    run: dict[str, Any],
    now: str,
    default_framework: str | None,
    items: list[ResultIn | None],
    cases: CaseMaps,
    item_errors: dict[int, str],
    matcher: Matcher,
) -> _Rows:
    """The rows of both tables, the run's counts, the failed events and the errors.

    Items naming an unknown case are added to the errors (by index) and skipped; `result_ids` names
    the result each stored item landed in.
    """
    by_code, by_id = cases
    errors = dict(item_errors)
    run_id, project_id = run["id"], run["project_id"]
    ids = new_ids(len(items))
    result_ids: list[str | None] = [None] * len(items)
    linked: list[LinkedRow] = []
    unlinked: list[UnlinkedRow] = []
    linked_state: dict[str, tuple[str, str]] = {}
    counts = [0, 0, 0, 0, 0, 0]
    failed: list[dict[str, Any]] = []
    stamper = failures.Stamper(matcher)
    for index, item in enumerate(items):
        if item is None:
            continue
        case = link(item, by_code, by_id)
        if isinstance(case, str):
            errors[index] = case
            continue
        status = item.status
        framework = item.framework or default_framework
        # a failure's fingerprint, and the bug of a matching known issue when the item names none
        stamp = stamper.stamp(status, item.error_message, item.error_stack, item.bug_ticket_key,
                              item.bug_ticket_url)
        if case is None:
            result_id = ids[index]
            result_ids[index] = result_id
            unlinked.append(unlinked_row(result_id, tenant_id, project_id, run_id, item, framework, now, stamp))
            counts[STATUS_INDEX[status]] += 1
            if status == "FAILED":
                failed.append(failed_event(run, result_id, None, item.title, item))
            continue
        case_id = case["id"]
        previous = linked_state.get(case_id)
        result_id = ids[index] if previous is None else previous[0]
        result_ids[index] = result_id
        linked_state[case_id] = (result_id, status)
        title = item.title or case["title"]
        linked.append(linked_row(result_id, tenant_id, run_id, case, title, item, framework, now, stamp))
        if status == "FAILED" and (previous is None or previous[1] != "FAILED"):
            failed.append(failed_event(run, result_id, case, title, item))
    counts[0] = len(unlinked) + len(linked_state)
    for _, last_status in linked_state.values():
        counts[STATUS_INDEX[last_status]] += 1
    return _Rows(errors, linked, unlinked, linked_state, counts, failed, result_ids, stamper)


def _texts_to_match(items: list[ResultIn | None]) -> Iterator[tuple[str | None, str | None]]:
    """(message, stack) of each item the stamper will match against known issues: a failure naming no
    bug (lazily: ``known_issues.match_ahead`` walks it in its worker thread)."""
    return ((item.error_message, item.error_stack) for item in items
            if item is not None and item.status in failures.FAILING and item.bug_ticket_key is None)


# A body whose every item is rejected is a 400; its problem lists this many of the item errors.
NOTHING_STORED_SHOWN = 100


def _refuse_if_nothing_stored(rows: _Rows) -> None:
    """No run without a result: a body none of whose items can be stored creates nothing, fires nothing."""
    if rows.linked or rows.unlinked:
        return
    errors = rows.errors
    shown = sorted(errors)[:NOTHING_STORED_SHOWN]
    more = f"; the first {len(shown)} are listed" if len(errors) > len(shown) else ""
    raise InvalidInput(
        f"No result could be stored: all {len(errors)} items of results were rejected{more}. "
        "Nothing was created.",
        field="results",
        errors=[{"field": f"results[{index}]", "message": errors[index]} for index in shown],
    )


def _answer(run_id: str, rows: _Rows) -> tuple[int, bytes]:
    """(HTTP status, JSON body) of an ingest: 201 when every item was stored, 207 when some were rejected."""
    errors = rows.errors
    answer = IngestAnswer(
        run_id=run_id, accepted=len(rows.linked) + len(rows.unlinked), rejected=len(errors),
        errors=[ItemError(index=index, error=errors[index]) for index in sorted(errors)],
        result_ids=rows.result_ids,
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

    run_id, now = new_id(), now_iso()
    run_name = (body.run_name or "").strip() or now
    project_id = body.project_id
    run = {"id": run_id, "name": run_name, "project_id": project_id, "environment": body.environment}
    build = (tenant_id, run, now, body.framework, items)
    matcher = await known_issues.matcher_for(db, tenant_id, project_id)
    # patterns run here, in a worker thread, before the write transaction: neither the event loop nor
    # the write lock waits for them (tms.failures.known_issues.patterns bounds their cost)
    await known_issues.match_ahead(matcher, _texts_to_match(items))
    rows = await off_loop(len(raw), _build_rows, *build, cases, item_errors, matcher)
    _refuse_if_nothing_stored(rows)

    async with db.transaction() as tx:
        if key:
            # the authoritative check, under the write lock: a concurrent retry may have just finished
            previous = await idempotency_store.get_answer(tx, tenant_id, key)
            if previous is not None:
                return await _replay(previous, request_sha256)
        await require_project(tx, tenant_id, project_id)
        versions = await case_versions(tx, tenant_id, rows.linked_state.keys())
        if versions is None:
            # a case was deleted since the lookup: look again and rebuild, under the write lock (rare)
            rows = await off_loop(len(raw), _build_rows, *build, await resolve_cases(tx, tenant_id, items),
                                  item_errors, matcher)
            _refuse_if_nothing_stored(rows)
            versions = await case_versions(tx, tenant_id, rows.linked_state.keys()) or {}
        counts = rows.counts
        status_code, answer_body = _answer(run_id, rows)
        run_row = {**run, **dict(zip(run_store.COUNT_COLUMNS, counts, strict=True))}
        await run_store.insert_run(
            tx, run_id=run_id, tenant_id=tenant_id, project_id=project_id, name=run_name,
            environment=body.environment, status="COMPLETED", created_at=now, counts=tuple(counts),  # type: ignore[arg-type]
        )
        if rows.linked:
            await result_store.insert_linked(tx, rows.linked, versions)
            # a new result is the retest a flagged case waits for
            await retest.clear_after_results(tx, tenant_id, retest_pairs(rows.linked), now)
        if rows.unlinked:
            await result_store.insert_unlinked(tx, rows.unlinked)
        await failures.record(tx, tenant_id, project_id, run_id, now, rows.stamper)
        flaky.touch_after_commit(tx, db, tenant_id, project_id)
        await events.emit_many(tx, db, tenant_id, "test_run_result.failed", rows.failed)
        await events.emit(tx, db, tenant_id, "test_run.completed", completed_event(run_row))
        # one entry for the whole report, with counts: never one per result
        await audit.record(tx, tenant_id, "run.ingested", "run", run_id, {
            "name": run_name, "linked": len(rows.linked), "unlinked": len(rows.unlinked),
            "rejected": len(rows.errors), "failed": counts[2],
            **({"known_issue_matching_skipped": matcher.over_budget} if matcher.over_budget else {})})
        stored = len(rows.linked) + len(rows.unlinked)
        tx.after_commit(lambda: INGESTED_RESULTS.inc(stored))
        if key:
            await idempotency_store.save_answer(tx, tenant_id, key, request_sha256, status_code, answer_body, now)
    return status_code, answer_body
