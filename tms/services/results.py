"""Results of a run: per-item validation, linking to cases, upsert, failed events, listing.

A batch is checked item by item (a bad item is rejected on its own, never the batch), then written
with one executemany per table; the events for results that became FAILED go into the outbox in the
same transaction. The helpers here are shared with ingest.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import msgspec

from tms.db import Database, Row, Transaction
from tms.ids import iso, new_ids, now_iso
from tms.models.results import (
    RESULT_STATUSES,
    BulkAnswer,
    ItemError,
    Result,
    ResultIn,
    ResultsBody,
    ResultsBodyLoose,
)
from tms.services import events, failures, flaky, retest
from tms.services.attachments import attachments_by_result
from tms.services.errors import InvalidInput, NotFound
from tms.store import cases as case_store
from tms.store import results as result_store
from tms.store import runs as run_store

T = TypeVar("T")
_PATH = re.compile(r"`\$\.?([^`]*)`")
STATUS_INDEX = {status: i + 1 for i, status in enumerate(("PASSED", "FAILED", "BROKEN", "SKIPPED", "UNKNOWN"))}


def _explain(exc: msgspec.ValidationError) -> tuple[str, str | None]:
    """msgspec's message with its ``$.a.b`` path turned into a field name: (message, field)."""
    text = str(exc)
    match = _PATH.search(text)
    if not match:
        return text, None
    field = match.group(1) or None
    message = _PATH.sub(lambda m: m.group(1) or "body", text).replace(" - at ", " at ")
    return message, field


def _item_error(raw: Any, exc: msgspec.ValidationError) -> str:
    if isinstance(raw, dict) and raw.get("status") not in RESULT_STATUSES and "status" in raw:
        return f"status must be exactly one of {', '.join(RESULT_STATUSES)}, not {raw.get('status')!r}"
    message, _ = _explain(exc)
    return message


def decode_bulk(raw: bytes, fast: type[T], loose: type[Any]) -> tuple[T | Any, list[ResultIn | None], dict[int, str]]:
    """Decodes a body with a ``results`` array: (body, items, errors by index).

    The fast path decodes the whole body typed in one C pass; only when some item is wrong does the
    slow path run, which checks the top level strictly and then each item on its own.
    A problem with the body itself (bad JSON, unknown top-level field, ``results`` not a list) is a 400.
    """
    try:
        body = msgspec.json.decode(raw, type=fast)
        return body, list(body.results), {}  # type: ignore[attr-defined]
    except msgspec.ValidationError:
        pass
    except msgspec.DecodeError as exc:
        raise InvalidInput(f"The body is not valid JSON: {exc}") from None
    try:
        body = msgspec.json.decode(raw, type=loose)
    except msgspec.ValidationError as exc:
        message, field = _explain(exc)
        raise InvalidInput(message, field=field) from None
    except msgspec.DecodeError as exc:  # the typed pass may stop at a bad item before the broken JSON
        raise InvalidInput(f"The body is not valid JSON: {exc}") from None
    items: list[ResultIn | None] = []
    errors: dict[int, str] = {}
    for index, item in enumerate(body.results):
        try:
            items.append(msgspec.convert(item, ResultIn))
        except msgspec.ValidationError as exc:
            items.append(None)
            errors[index] = _item_error(item, exc)
    return body, items, errors


# Below this many body bytes the work is quicker than a hop to a thread and back.
THREAD_THRESHOLD = 1024 * 1024


async def off_loop(size: int, function: Callable[..., T], *args: Any) -> T:
    """Runs a CPU-bound step of a big report in a worker thread so the event loop keeps serving other
    requests between its GIL slices (a 100k-result report takes about a second of Python)."""
    if size < THREAD_THRESHOLD:
        return function(*args)
    return await asyncio.to_thread(function, *args)


def executed_at_text(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    # a time without an offset is taken as UTC; stored like every other timestamp (sortable text)
    return iso(moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC))


async def resolve_cases(
    db: Database | Transaction, tenant_id: str, items: Sequence[ResultIn | None]
) -> tuple[dict[str, Row], dict[str, Row]]:
    """(by code, by id) of every case the items name: two queries, however many items."""
    codes = {item.test_case_code for item in items if item is not None and item.test_case_code is not None}
    ids = {item.test_case_id for item in items if item is not None and item.test_case_id is not None}
    by_code = {row["code"]: row for row in await case_store.resolve_codes(db, tenant_id, list(codes))}
    by_id = {row["id"]: row for row in await case_store.resolve_ids(db, tenant_id, list(ids))}
    return by_code, by_id


def link(item: ResultIn, by_code: dict[str, Row], by_id: dict[str, Row]) -> Row | str | None:
    """The case an item names, an error message, or None when it names no case at all."""
    code, case_id = item.test_case_code, item.test_case_id
    if code is None and case_id is None:
        return None
    case = None
    if code is not None:
        case = by_code.get(code)
        if case is None:
            return f"test_case_code {code!r} does not exist in this tenant"
    if case_id is not None:
        by = by_id.get(case_id)
        if by is None:
            return f"test_case_id {case_id!r} does not exist in this tenant"
        if case is not None and case["id"] != by["id"]:
            return f"test_case_code {code!r} and test_case_id {case_id!r} name different test cases"
        case = by
    return case


def failed_event(run: Row, result_id: str, case: Row | None, title: str | None, item: ResultIn) -> dict[str, Any]:
    return {
        "run_id": run["id"],
        "run_name": run["name"],
        "project_id": run["project_id"],
        "result_id": result_id,
        "test_case_id": None if case is None else case["id"],
        "test_case_code": None if case is None else case["code"],
        "title": title,
        "error_message": item.error_message,
        "bug_ticket_key": item.bug_ticket_key,
    }


def bulk_answer(accepted: int, errors: dict[int, str]) -> BulkAnswer:
    return BulkAnswer(
        accepted=accepted,
        rejected=len(errors),
        errors=[ItemError(index=index, error=errors[index]) for index in sorted(errors)],
    )


async def _get_run(db: Database | Transaction, tenant_id: str, run_id: str) -> Row:
    run = await run_store.get_run(db, tenant_id, run_id)
    if run is None:
        raise NotFound(f"run {run_id} not found")
    return run


async def post_results(db: Database, tenant_id: str, run_id: str, raw: bytes) -> BulkAnswer:
    """Upserts the items of ``{"results": [...]}`` into the run: one row per (run, case), last write wins."""
    await _get_run(db, tenant_id, run_id)
    _, items, errors = await off_loop(len(raw), decode_bulk, raw, ResultsBody, ResultsBodyLoose)
    if not items:
        raise InvalidInput("results must hold at least one result", field="results")
    by_code, by_id = await resolve_cases(db, tenant_id, items)
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
    if not linked:
        return bulk_answer(0, errors)

    now = now_iso()
    fresh_ids = iter(new_ids(len(linked)))
    async with db.transaction() as tx:
        run = await _get_run(tx, tenant_id, run_id)  # re-read: the run may have changed meanwhile
        stamper = await failures.stamper_for(tx, tenant_id, run["project_id"])
        state = await result_store.current_for_cases(tx, run_id, list({case["id"] for _, _, case in linked}))
        deltas = [0, 0, 0, 0, 0, 0]
        rows, failed = [], []
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
            fingerprint, bug_key, bug_url = stamper.stamp(item.status, item.error_message, item.error_stack,
                                                          item.bug_ticket_key, item.bug_ticket_url)
            rows.append((
                result_id, tenant_id, run_id, case["id"], case["code"], title, item.status, item.comment,
                bug_key, bug_url, item.duration_ms, item.framework, item.error_message,
                item.error_stack, executed_at_text(item.executed_at), now, now, fingerprint, item.passed_on_retry,
            ))
            # fired when a result becomes FAILED: created FAILED or changed to FAILED, not when it stays so
            if item.status == "FAILED" and (previous is None or previous[1] != "FAILED"):
                failed.append(failed_event(run, result_id, case, title, item))
        await result_store.upsert_linked(tx, rows)
        await failures.record(tx, tenant_id, run["project_id"], run_id, now, stamper)
        flaky.touch_after_commit(tx, db, tenant_id, run["project_id"])
        await run_store.add_results(tx, tenant_id, run_id, tuple(deltas), now)  # type: ignore[arg-type]
        await events.emit_many(tx, db, tenant_id, "test_run_result.failed", failed)
        # a new result is the retest a flagged case waits for: (test_case_id, executed_at) of each row
        await retest.clear_after_results(tx, tenant_id, [(row[3], row[14]) for row in rows], now)
    return bulk_answer(len(linked), errors)


async def list_results(db: Database, tenant_id: str, run_id: str) -> list[Result]:
    await _get_run(db, tenant_id, run_id)
    rows = await result_store.list_for_run(db, tenant_id, run_id)
    attachments = await attachments_by_result(db, tenant_id, [row["id"] for row in rows])
    return [Result(**row, attachments=attachments.get(row["id"], [])) for row in rows]
