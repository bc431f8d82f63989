"""POST /api/v1/ingest: one request, one transaction, one COMPLETED run with all its results.

Built for 100k-result reports: the body is decoded typed in one pass, every named case is resolved
with two queries, ids are minted in bulk, rows are plain tuples and each table gets one executemany.
An Idempotency-Key makes a retried request (same key, same bytes) return the first answer.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from tms.db import Database, Row
from tms.ids import new_id, new_ids, now_iso
from tms.models.ingest import IngestAnswer, IngestBody, IngestBodyLoose
from tms.models.results import ItemError, ResultIn
from tms.services import events, failures, flaky, retest
from tms.services.errors import Conflict, InvalidInput
from tms.services.results import (
    STATUS_INDEX,
    decode_bulk,
    executed_at_text,
    failed_event,
    link,
    off_loop,
    resolve_cases,
)
from tms.services.runs import completed_event, require_project
from tms.store import idempotency as idempotency_store
from tms.store import results as result_store
from tms.store import runs as run_store

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


def _build_rows(
    tenant_id: str,
    run: dict[str, Any],
    now: str,
    default_framework: str | None,
    items: list[ResultIn | None],
    by_code: dict[str, Row],
    by_id: dict[str, Row],
    errors: dict[int, str],
    stamper: failures.Stamper,
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], dict[str, tuple[str, str]], list[int], list[dict[str, Any]]]:
    """Row tuples of both tables, per-case state, unlinked counts by status and failed events.

    Items naming an unknown case are added to ``errors`` (by index) and skipped.
    """
    run_id, project_id = run["id"], run["project_id"]
    ids = new_ids(len(items))
    linked_rows: list[tuple[Any, ...]] = []
    native_rows: list[tuple[Any, ...]] = []
    # per case: (result id of its first row, last status): duplicates in one report upsert like POST results
    linked_state: dict[str, tuple[str, str]] = {}
    native_counts = [0, 0, 0, 0, 0, 0]
    failed: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        if item is None:
            continue
        case = link(item, by_code, by_id)
        if isinstance(case, str):
            errors[index] = case
            continue
        status = item.status
        executed_at = None if item.executed_at is None else executed_at_text(item.executed_at)
        framework = item.framework or default_framework
        # the fingerprint of a failure, and the bug of a matching known issue when the item names none
        fingerprint, bug_key, bug_url = stamper.stamp(status, item.error_message, item.error_stack,
                                                      item.bug_ticket_key, item.bug_ticket_url)
        if case is None:
            result_id = ids[index]
            native_rows.append((
                result_id, tenant_id, project_id, run_id, item.title, status, item.comment, bug_key,
                bug_url, item.duration_ms, framework, item.error_message, item.error_stack,
                executed_at, now, now, fingerprint, item.passed_on_retry,
            ))
            native_counts[STATUS_INDEX[status]] += 1
            if status == "FAILED":
                failed.append(failed_event(run, result_id, None, item.title, item))
            continue
        case_id = case["id"]
        previous = linked_state.get(case_id)
        result_id = ids[index] if previous is None else previous[0]
        linked_state[case_id] = (result_id, status)
        title = item.title or case["title"]
        linked_rows.append((
            result_id, tenant_id, run_id, case_id, case["code"], title, status, item.comment, bug_key,
            bug_url, item.duration_ms, framework, item.error_message, item.error_stack, executed_at,
            now, now, fingerprint, item.passed_on_retry,
        ))
        if status == "FAILED" and (previous is None or previous[1] != "FAILED"):
            failed.append(failed_event(run, result_id, case, title, item))
    return linked_rows, native_rows, linked_state, native_counts, failed


async def ingest(db: Database, tenant_id: str, raw: bytes, idempotency_key: str | None = None) -> tuple[int, bytes]:
    """Returns (HTTP status, JSON body): 201 when every item was stored, 207 when some were rejected."""
    key = check_idempotency_key(idempotency_key)
    request_sha256 = hashlib.sha256(raw).hexdigest() if key else ""
    if key:
        previous = await idempotency_store.get_answer(db, tenant_id, key)
        if previous is not None:
            return await _replay(previous, request_sha256)

    body, items, errors = await off_loop(len(raw), decode_bulk, raw, IngestBody, IngestBodyLoose)
    if not items:
        raise InvalidInput("results must hold at least one result", field="results")
    await require_project(db, tenant_id, body.project_id)
    by_code, by_id = await resolve_cases(db, tenant_id, items)

    run_id, now = new_id(), now_iso()
    run_name = (body.run_name or "").strip() or now
    project_id = body.project_id
    run = {"id": run_id, "name": run_name, "project_id": project_id, "environment": body.environment}
    stamper = await failures.stamper_for(db, tenant_id, project_id)
    rows = await off_loop(len(raw), _build_rows, tenant_id, run, now, body.framework, items, by_code, by_id,
                           errors, stamper)
    linked_rows, native_rows, linked_state, native_counts, failed = rows

    counts = native_counts
    counts[0] = len(native_rows) + len(linked_state)
    for _, status in linked_state.values():
        counts[STATUS_INDEX[status]] += 1
    accepted = len(linked_rows) + len(native_rows)
    answer = IngestAnswer(
        run_id=run_id, accepted=accepted, rejected=len(errors),
        errors=[ItemError(index=index, error=errors[index]) for index in sorted(errors)],
    )
    status_code = 207 if errors else 201
    answer_body = _encoder.encode(answer)
    run_row = {**run, **dict(zip(run_store.COUNT_COLUMNS, counts, strict=True))}

    async with db.transaction() as tx:
        if key:
            # the authoritative check, under the write lock: a concurrent retry may have just finished
            previous = await idempotency_store.get_answer(tx, tenant_id, key)
            if previous is not None:
                return await _replay(previous, request_sha256)
        await require_project(tx, tenant_id, project_id)
        await run_store.insert_run(
            tx, run_id=run_id, tenant_id=tenant_id, project_id=project_id, name=run_name,
            environment=body.environment, status="COMPLETED", created_at=now, counts=tuple(counts),  # type: ignore[arg-type]
        )
        if linked_rows:
            await result_store.upsert_linked(tx, linked_rows)
            # a new result is the retest a flagged case waits for: (test_case_id, executed_at) of each row
            await retest.clear_after_results(tx, tenant_id, [(row[3], row[14]) for row in linked_rows], now)
        if native_rows:
            await result_store.insert_native(tx, native_rows)
        await failures.record(tx, tenant_id, project_id, run_id, now, stamper)
        flaky.touch_after_commit(tx, db, tenant_id, project_id)
        await events.emit_many(tx, db, tenant_id, "test_run_result.failed", failed)
        await events.emit(tx, db, tenant_id, "test_run.completed", completed_event(run_row))
        if key:
            await idempotency_store.save_answer(tx, tenant_id, key, request_sha256, status_code, answer_body, now)
    return status_code, answer_body
