"""Results of a run: per-item validation, linking to cases, upsert, failed events, listing.

A batch is checked item by item (a bad item is rejected on its own, never the batch), then written
with one executemany per table; the events for results that became FAILED go into the outbox in the
same transaction. What this shares with ingest lives in ``tms.runs.results.rows``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import msgspec

from tms.attachments.service import attachments_by_result
from tms.db import Database, Row, Transaction
from tms.errors import InvalidInput, NotFound
from tms.http.paging import page_window
from tms.ids import now_iso
from tms.library.cases.models import Pagination
from tms.library.fields import values as field_values
from tms.runs import listing, writes
from tms.runs import store as run_store
from tms.runs.results import store as result_store
from tms.runs.results.models import (
    BulkAnswer,
    Result,
    ResultList,
    ResultsBody,
    ResultsBodyLoose,
)
from tms.runs.results.rows import bulk_answer, cases_still_exist, decode_bulk, off_loop, resolve_cases
from tms.runs.statuses import FAILING, RESULT_STATUSES
from tms.runs.writes import RunRef


async def _get_run(db: Database | Transaction, tenant_id: str, run_id: str) -> Row:
    run = await run_store.get_run(db, tenant_id, run_id)
    if run is None:
        raise NotFound(f"run {run_id} not found")
    return run


async def post_results(db: Database, tenant_id: str, run_id: str, raw: bytes | bytearray) -> BulkAnswer:
    """Upserts the items of ``{"results": [...]}`` into the run: one row per (run, case), last write wins.
    Each item names a case (an item naming none is rejected); ``tms.runs.writes`` writes them."""
    run = RunRef.of(await _get_run(db, tenant_id, run_id))
    _, items, item_errors = await off_loop(len(raw), decode_bulk, raw, ResultsBody, ResultsBodyLoose)
    if not items:
        raise InvalidInput("results must hold at least one result", field="results")
    now = now_iso()
    matcher = await writes.matcher_ahead(db, tenant_id, run.project_id, writes.texts_to_match(items))
    rules = await writes.fields_ahead(db, tenant_id, run.project_id, items)
    build = (tenant_id, run, now, None, items)
    batch = writes.prepare(*build, await resolve_cases(db, tenant_id, items), item_errors, matcher, linked_only=True,
                           rules=rules)
    if not batch.stored:
        return bulk_answer(0, batch.errors)
    async with db.transaction() as tx:
        run = RunRef.of(await _get_run(tx, tenant_id, run_id))  # re-read: the run may have changed meanwhile
        if not await cases_still_exist(tx, tenant_id, batch.case_ids()):
            # a case was deleted since the lookup: look again, under the write lock
            batch = writes.prepare(*build, await resolve_cases(tx, tenant_id, items), item_errors, matcher,
                                   linked_only=True, rules=rules)
            if not batch.stored:
                return bulk_answer(0, batch.errors)
        settled = writes.settle(batch, run, await writes.stored_state(tx, run.id, batch))
        await writes.store_batch(tx, db, tenant_id, run, batch, settled, now, audit_action="run.results_posted",
                                 audit_extra={"accepted": batch.stored})
    return bulk_answer(batch.stored, batch.errors)


async def require_run(db: Database, tenant_id: str, run_id: str) -> None:
    """404 for an unknown run (or another tenant's)."""
    await _get_run(db, tenant_id, run_id)


def chunks_for_run(db: Database, tenant_id: str, run_id: str, *, status: str | None, assignee_id: str | None,
                   offset: int) -> AsyncIterator[list[Row]]:
    """Every result of the run after ``offset``, a chunk at a time (``results.store.chunks_for_run``)."""
    return result_store.chunks_for_run(db, tenant_id, run_id, status=status, assignee_id=assignee_id, offset=offset)


async def count_matching(db: Database, tenant_id: str, run_id: str, *, status: str | None,
                         assignee_id: str | None) -> int:
    return await result_store.count_matching(db, tenant_id, run_id, status=status, assignee_id=assignee_id)


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


@dataclass(frozen=True, slots=True)
class RunPage:
    """What a run's page shows of its results: a page of linked and one of unlinked rows (each with its
    ``attachments``), their totals for the pagers, and the tabs' counts."""
    linked: list[Row]
    unlinked: list[Row]
    linked_total: int
    unlinked_total: int
    by_status: dict[str, int]
    assignee_counts: dict[str | None, int]


async def run_page(db: Database, tenant_id: str, run_id: str, *, status: str | None, assignee: str | None,
                   limit: int, offset: int, unlinked_offset: int) -> RunPage:
    """The run page's results (issue 24: failed and blocked first when nothing filters), narrowed by
    ``status`` and ``assignee`` (a user id, or "none" for the unassigned; the unlinked ones have none).
    One scan of the run's linked rows gives the status tabs, the assignee filter and the page count."""
    linked_counts, assignee_counts, pairs = await listing.linked_counts(db, tenant_id, run_id)
    unlinked_counts = await listing.unlinked_status_counts(db, tenant_id, run_id)
    by_status = {s: linked_counts.get(s, 0) + unlinked_counts.get(s, 0) for s in RESULT_STATUSES}
    if assignee:
        wanted = None if assignee == "none" else assignee
        linked_total = sum(n for (s, a), n in pairs.items() if a == wanted and (not status or s == status))
        linked = await listing.result_page(db, tenant_id, run_id, unlinked=False, status=status,
                                           limit=limit, offset=offset, assignee=assignee)
    elif status:
        linked_total = linked_counts.get(status, 0)
        linked = await result_store.page_for_run(db, tenant_id, run_id, unlinked=False, offset=offset,
                                                 status=status, limit=limit, linked_total=linked_total)
    else:
        linked_total = sum(linked_counts.values())
        linked = await result_store.page_failures_first(
            db, tenant_id, run_id, limit=limit, offset=offset,
            failing_total=sum(linked_counts.get(s, 0) for s in FAILING))
    unlinked_total = 0 if assignee else (unlinked_counts.get(status, 0) if status else sum(unlinked_counts.values()))
    unlinked = [] if assignee else await result_store.page_for_run(
        db, tenant_id, run_id, unlinked=True, offset=unlinked_offset, status=status, limit=limit,
        linked_total=linked_total)
    # attachments of the shown rows only (one query per 500 ids)
    attachments = await attachments_by_result(db, tenant_id, [r["id"] for r in linked + unlinked])
    for row in linked + unlinked:
        row["attachments"] = attachments.get(row["id"], [])
    return RunPage(linked, unlinked, linked_total, unlinked_total, by_status, assignee_counts)


def result_from_row(row: Row, attachments: list[dict[str, Any]]) -> Result:
    """The API shape; step_results is passed through as the stored JSON text (never re-encoded), and
    custom_fields decoded only when the result holds any."""
    steps = row.pop("step_results", None)
    values = field_values.decode_values(row.pop("custom_fields", None))
    return Result(**row, attachments=attachments, custom_fields=values,
                  step_results=None if steps is None else msgspec.Raw(steps.encode()))
