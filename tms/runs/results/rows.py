"""What every write of results shares (POST /runs/{id}/results, ingest, and whatever comes next).

- ``decode_bulk``: a body with a ``results`` array decoded typed in one pass, falling back to per-item
  checks only when an item is bad; ``off_loop`` runs such CPU work of big bodies in a thread.
- ``resolve_cases`` / ``link``: the cases the items name, two queries however many items;
  ``cases_still_exist`` (or ``case_versions``, which also says each case's version): the re-check inside
  the write transaction, so that a case deleted after the lookup (a concurrent DELETE) never gets a
  result: on a miss the caller resolves again under the lock.
- ``linked_row`` / ``unlinked_row``: the named rows (``tms.runs.results.store.LinkedRow``/``UnlinkedRow``)
  made from an item; ``failed_event``: the ``test_run_result.failed`` data.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import msgspec

from tms.db import Database, Row, Transaction
from tms.errors import InvalidInput, unreadable_json
from tms.ids import iso
from tms.library.cases import service as case_service
from tms.runs.results.models import BulkAnswer, ItemError, ResultIn
from tms.runs.results.store import LinkedRow, UnlinkedRow
from tms.runs.statuses import RESULT_STATUSES

T = TypeVar("T")
Stamp = tuple[str | None, str | None, str | None]  # (fingerprint, bug_ticket_key, bug_ticket_url)
_PATH = re.compile(r"`\$\.?([^`]*)`")
# index of a status in a run's counts (index 0 is the total), as in tms.runs.store.COUNT_COLUMNS
STATUS_INDEX = {status: i + 1 for i, status in enumerate(RESULT_STATUSES)}


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


def decode_bulk(
    raw: bytes | bytearray, fast: type[T], loose: type[Any]
) -> tuple[T | Any, list[ResultIn | None], dict[int, str]]:
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
    except (RecursionError, UnicodeDecodeError) as exc:
        raise InvalidInput(unreadable_json(exc), field="body") from None
    try:
        body = msgspec.json.decode(raw, type=loose)
    except msgspec.ValidationError as exc:
        message, field = _explain(exc)
        raise InvalidInput(message, field=field) from None
    except msgspec.DecodeError as exc:  # the typed pass may stop at a bad item before the broken JSON
        raise InvalidInput(f"The body is not valid JSON: {exc}") from None
    except (RecursionError, UnicodeDecodeError) as exc:
        raise InvalidInput(unreadable_json(exc), field="body") from None
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


CaseMaps = tuple[dict[str, Row], dict[str, Row]]


async def resolve_cases(db: Database | Transaction, tenant_id: str, items: Sequence[ResultIn | None]) -> CaseMaps:
    """(by code, by id) of every case the items name: two queries, however many items."""
    codes = {item.test_case_code for item in items if item is not None and item.test_case_code is not None}
    ids = {item.test_case_id for item in items if item is not None and item.test_case_id is not None}
    by_code = {row["code"]: row for row in await case_service.resolve_codes(db, tenant_id, list(codes))}
    by_id = {row["id"]: row for row in await case_service.resolve_ids(db, tenant_id, list(ids))}
    return by_code, by_id


async def cases_still_exist(tx: Transaction, tenant_id: str, case_ids: Collection[str]) -> bool:
    """Inside the write transaction: whether every case resolved before it began still exists.

    One primary-key lookup per case; only a miss (rare) costs a second resolve. A case edited
    meanwhile needs no re-check: the write simply orders after the edit's transaction.
    """
    return await case_versions(tx, tenant_id, case_ids) is not None


async def case_versions(tx: Transaction, tenant_id: str, case_ids: Collection[str]) -> dict[str, int] | None:
    """Inside the write transaction: the version of every case resolved before it began, or None when
    one of them is gone (as ``cases_still_exist``). Read under the write lock, so exact at the write."""
    versions = await case_service.versions_of(tx, tenant_id, list(case_ids))
    return versions if len(versions) == len(case_ids) else None


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


# The two row factories call the structs positionally, in their field (= column) order, on purpose:
# keyword calls with 17 arguments cost ~2 µs a row more, 0.2 s on a 100k-result ingest.
def linked_row(
    result_id: str, tenant_id: str, run_id: str, case: Row, title: str | None, item: ResultIn,
    framework: str | None, now: str, stamp: Stamp = (None, None, None), fields: str = "{}",
) -> LinkedRow:
    """``stamp`` is (fingerprint, bug_ticket_key, bug_ticket_url) from tms.failures.service.Stamper: the
    bug of a matching known issue when the item names none. ``fields``: the result fields' values as
    stored (JSON, checked by ``tms.library.fields.service.ResultFieldRules``)."""
    fingerprint, bug_key, bug_url = stamp
    return LinkedRow(
        result_id, tenant_id, run_id, case["id"], case["code"], title, item.status, item.comment,
        bug_key or item.bug_ticket_key, bug_url or item.bug_ticket_url, item.duration_ms, framework,
        item.error_message, item.error_stack, executed_at_text(item.executed_at), now, now, fingerprint,
        item.passed_on_retry, "automated", fields, item.file, item.line,
    )


def placeholder_row(result_id: str, tenant_id: str, run_id: str, case: Row, now: str) -> LinkedRow:
    """The UNKNOWN result a pre-populated run starts with for each of its cases."""
    return LinkedRow(
        id=result_id, tenant_id=tenant_id, run_id=run_id, test_case_id=case["id"], test_case_code=case["code"],
        title=case["title"], status="UNKNOWN", comment=None, bug_ticket_key=None, bug_ticket_url=None,
        duration_ms=None, framework=None, error_message=None, error_stack=None, executed_at=None,
        created_at=now, updated_at=now, fingerprint=None, passed_on_retry=0,
        source="manual",  # a case waiting for a tester
        custom_fields="{}", location_file=None, location_line=None,
    )


def unlinked_row(
    result_id: str, tenant_id: str, project_id: str, run_id: str, item: ResultIn, framework: str | None, now: str,
    stamp: Stamp = (None, None, None), fields: str = "{}",
) -> UnlinkedRow:
    fingerprint, bug_key, bug_url = stamp
    return UnlinkedRow(
        result_id, tenant_id, project_id, run_id, item.title, item.status, item.comment,
        bug_key or item.bug_ticket_key, bug_url or item.bug_ticket_url, item.duration_ms, framework,
        item.error_message, item.error_stack, executed_at_text(item.executed_at), now, now, fingerprint,
        item.passed_on_retry, "automated", fields, item.file, item.line,
    )


def failed_event(run: Row, result_id: str, case: Row | None, title: str | None, item: ResultIn) -> dict[str, Any]:
    """``data`` of test_run_result.failed, exactly the contract's fields."""
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


def retest_pairs(rows: Sequence[LinkedRow]) -> list[tuple[str, str | None]]:
    """(test_case_id, executed_at) of each stored row: what ``retest.clear_after_results`` takes."""
    return [(row.test_case_id, row.executed_at) for row in rows]


def bulk_answer(accepted: int, errors: dict[int, str]) -> BulkAnswer:
    return BulkAnswer(
        accepted=accepted,
        rejected=len(errors),
        errors=[ItemError(index=index, error=errors[index]) for index in sorted(errors)],
    )
