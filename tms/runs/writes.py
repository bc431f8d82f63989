"""The one writer of results (issue 23): every INSERT, UPDATE and DELETE of ``test_results`` and
``unlinked_test_results`` goes through here, and so does every side effect of writing them.

Entry points, each a thin caller:
- ingest (a new COMPLETED run), shards (``tms.runs.ingest.shards``) and ``POST /runs/{id}/results``:
  ``prepare`` (rows built and stamped, before the write transaction: known-issue patterns already
  matched in a worker thread by ``matcher_ahead``), ``settle`` (ids, counts and events against what the
  run holds) and ``store_batch`` (one transaction);
- one result changed by hand (``PATCH /results/{id}``, the execution view): ``save_one``, in the
  sibling module ``tms.runs.write_one`` (split off to keep each under ~400 lines);
- a run filled with or emptied of cases: ``add_placeholders`` / ``remove_cases``; bulk assignment:
  ``assign``; the retention sweep: ``delete_of_run`` / ``sweep_unlinked``; a project's deletion
  (``tms.library.projects.deletion``): ``delete_of_project``.

Side effects, each made here once: the run's counts (``RunCounts``) and PENDING -> IN_PROGRESS, the
``test_run_result.failed`` events (``ResultFailedEvent``), fingerprints and the first-seen tables
(``tms.failures.service``), known-issue bugs (the stamp), the flaky re-check after commit, the retest
flag, the audit entry, the case version (``tms.runs.results.store.upsert_linked``'s SQL) and ``source``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, NamedTuple

import msgspec

from tms.db import Database, Row, Transaction
from tms.errors import InvalidInput
from tms.failures import service as failures
from tms.failures.flaky import service as flaky
from tms.failures.known_issues import service as known_issues
from tms.failures.known_issues.service import Matcher
from tms.failures.retest import service as retest
from tms.ids import new_ids
from tms.library.fields import service as field_service
from tms.library.fields.values import NO_RESULT_FIELDS, ResultFieldRules
from tms.notifications import events
from tms.operations.metrics import INGESTED_RESULTS
from tms.runs import store as run_store
from tms.runs.models import ResultFailedEvent, RunCompletedEvent
from tms.runs.results import store as result_store
from tms.runs.results.models import ResultIn
from tms.runs.results.rows import CaseMaps, link, linked_row, unlinked_row
from tms.runs.results.store import Current, LinkedRow, UnlinkedRow
from tms.runs.statuses import FAILING, RESULT_STATUSES
from tms.runs.store import RunCounts
from tms.team.audit import service as audit

# where a result of each status is counted in RunCounts (total is 0, manual the last)
_SLOT = {status: RunCounts._fields.index(status.lower())
         for status in RESULT_STATUSES}
_MANUAL = RunCounts._fields.index("manual")
_STATUS_SOURCE = attrgetter("status", "source")


class Tally:
    """A change to a run's counts, added up result by result, read as a ``RunCounts``."""

    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values = [0] * len(RunCounts._fields)

    def add(self, status: str, source: str, sign: int = 1) -> None:
        """One result of this status and source more (``sign`` -1: one less; or that many)."""
        values = self._values
        values[0] += sign
        values[_SLOT[status]] += sign
        if source == "manual":
            values[_MANUAL] += sign

    def add_rows(self, rows: Iterable[LinkedRow] | Iterable[UnlinkedRow] | Iterable[Current], sign: int = 1) -> None:
        """``add`` of every row, counted in C (a batch's 80,000 unlinked rows: no Python call per row)."""
        for (status, source), count in Counter(map(_STATUS_SOURCE, rows)).items():
            self.add(status, source, sign * count)

    def counts(self) -> RunCounts:
        return RunCounts(*self._values)


class RunRef(NamedTuple):
    """The run a write goes into, as its rows and events name it."""

    id: str
    name: str
    project_id: str
    environment: str | None = None

    @staticmethod
    def of(row: Row) -> RunRef:
        return RunRef(row["id"], row["name"], row["project_id"], row["environment"])


def failed_event(run: RunRef, row: LinkedRow | UnlinkedRow, test_case_id: str | None,
                 test_case_code: str | None, bug_ticket_key: str | None) -> ResultFailedEvent:
    """The one place ``test_run_result.failed`` data is made (the contract's fields)."""
    return ResultFailedEvent(run_id=run.id, run_name=run.name, project_id=run.project_id, result_id=row.id,
                             test_case_id=test_case_id, test_case_code=test_case_code, title=row.title,
                             error_message=row.error_message, bug_ticket_key=bug_ticket_key,
                             custom_fields=msgspec.Raw(row.custom_fields),
                             file=row.location_file, line=row.location_line)


def event_data(event: msgspec.Struct) -> dict[str, Any]:
    return msgspec.structs.asdict(event)


# ---- a batch of results (ingest, shards, POST results) ----------------------------------------------

def texts_to_match(items: Sequence[ResultIn | None]) -> Iterator[tuple[str | None, str | None]]:
    """(message, stack) of each item the stamper will match against known issues: a failure naming no
    bug (lazily: ``known_issues.match_ahead`` walks it in its worker thread)."""
    return ((item.error_message, item.error_stack) for item in items
            if item is not None and item.status in FAILING and item.bug_ticket_key is None)


async def matcher_ahead(db: Database, tenant_id: str, project_id: str,
                        texts: Iterable[tuple[str | None, str | None]]) -> Matcher:
    """The project's known issues, their patterns already matched against the texts a write will stamp,
    in a worker thread and before the write transaction: neither the event loop nor the write lock waits
    for patterns (``tms.failures.known_issues.patterns`` bounds their cost)."""
    matcher = await known_issues.matcher_for(db, tenant_id, project_id)
    await known_issues.match_ahead(matcher, texts)
    return matcher


async def fields_ahead(db: Database, tenant_id: str, project_id: str,
                       items: Sequence[ResultIn | None]) -> ResultFieldRules:
    """The project's result fields (and the tenant's users when a `user` field needs them), read once
    before the write: ``prepare`` then checks each item's ``custom_fields`` in memory."""
    return await field_service.result_rules(db, tenant_id, project_id,
                                            (item.custom_fields for item in items if item is not None))


@dataclass(slots=True)
class Batch:
    """The rows of one write of many results, built and stamped before its transaction."""

    linked: list[LinkedRow]
    linked_at: list[int]     # index in the body of each linked row's item
    unlinked: list[UnlinkedRow]
    unlinked_at: list[int]
    errors: dict[int, str]   # every rejected item's reason, by index
    size: int                # items in the body
    stamper: failures.Stamper
    # the bug each row's item named itself (its event names that one, not a known issue's stamp)
    linked_bugs: list[str | None]
    unlinked_bugs: list[str | None]

    @property
    def stored(self) -> int:
        return len(self.linked) + len(self.unlinked)

    def case_ids(self) -> list[str]:
        return list(dict.fromkeys(row.test_case_id for row in self.linked))


NO_CASE = "each result must name test_case_code or test_case_id"


def prepare(tenant_id: str, run: RunRef, now: str, default_framework: str | None, items: Sequence[ResultIn | None],
            cases: CaseMaps, item_errors: Mapping[int, str], matcher: Matcher, *, linked_only: bool = False,
            rules: ResultFieldRules = NO_RESULT_FIELDS) -> Batch:
    """Rows of both tables, stamped (fingerprint, known-issue bug): CPU only, no database, so a big body
    runs it in a thread (``rows.off_loop``). An item naming an unknown case is rejected (by index), and so
    is one naming none when ``linked_only`` (POST results), and one whose ``custom_fields`` the project's
    result fields (``rules``, from ``fields_ahead``) refuse. Items of one case in the body share the first
    one's result id: the last one's fields win, as upserting them in turn would leave."""
    by_code, by_id = cases
    errors = dict(item_errors)
    ids = new_ids(len(items))
    first_id: dict[str, str] = {}
    batch = Batch([], [], [], [], errors, len(items), failures.Stamper(matcher), [], [])
    stamp = batch.stamper.stamp
    for index, item in enumerate(items):
        if item is None:
            continue
        case = link(item, by_code, by_id)
        if isinstance(case, str) or (case is None and linked_only):
            errors[index] = case if isinstance(case, str) else NO_CASE
            continue
        if item.custom_fields:
            try:
                values = rules.encoded(item.custom_fields)
            except InvalidInput as exc:
                errors[index] = exc.detail
                continue
        else:
            values = rules.defaults
        framework = item.framework or default_framework
        stamped = stamp(item.status, item.error_message, item.error_stack, item.bug_ticket_key, item.bug_ticket_url)
        if case is None:
            batch.unlinked.append(unlinked_row(ids[index], tenant_id, run.project_id, run.id, item, framework, now,
                                               stamped, values))
            batch.unlinked_at.append(index)
            batch.unlinked_bugs.append(item.bug_ticket_key)
            continue
        result_id = first_id.setdefault(case["id"], ids[index])
        batch.linked.append(linked_row(result_id, tenant_id, run.id, case, item.title or case["title"], item,
                                       framework, now, stamped, values))
        batch.linked_at.append(index)
        batch.linked_bugs.append(item.bug_ticket_key)
    return batch


class Settled(NamedTuple):
    """What a batch does to its run, given the run's stored results of the batch's cases."""

    counts: RunCounts
    failed: list[ResultFailedEvent]
    result_ids: list[str | None]  # per item of the body: the result it landed in (None: rejected)


def settle(batch: Batch, run: RunRef, stored: Mapping[str, Current]) -> Settled:
    """Pure: each linked row replaces its case's stored result (keeping its id; counts move from the old
    status and source to the new) or adds one; unlinked rows are added. ``test_run_result.failed`` fires
    for a result that becomes FAILED (created FAILED or changed to FAILED, not when it stays so)."""
    tally = Tally()
    failed: list[ResultFailedEvent] = []
    result_ids: list[str | None] = [None] * batch.size
    last: dict[str, Current] = {}
    for row, index, item_bug in zip(batch.linked, batch.linked_at, batch.linked_bugs, strict=True):
        case_id = row.test_case_id
        previous = last.get(case_id) or stored.get(case_id)
        result_id = row.id if previous is None else previous.id
        result_ids[index] = result_id
        last[case_id] = Current(result_id, row.status, row.source)
        if row.status == "FAILED" and (previous is None or previous.status != "FAILED"):
            event = failed_event(run, row, case_id, row.test_case_code, item_bug)
            failed.append(event if result_id == row.id else msgspec.structs.replace(event, result_id=result_id))
    if stored:
        tally.add_rows([stored[case_id] for case_id in last if case_id in stored], -1)
    tally.add_rows(last.values())
    tally.add_rows(batch.unlinked)
    for added, index, item_bug in zip(batch.unlinked, batch.unlinked_at, batch.unlinked_bugs, strict=True):
        result_ids[index] = added.id
        if added.status == "FAILED":
            failed.append(failed_event(run, added, None, None, item_bug))
    return Settled(tally.counts(), failed, result_ids)


async def stored_state(tx: Transaction, run_id: str, batch: Batch) -> dict[str, Current]:
    """Inside the write transaction: the run's stored results of the batch's cases."""
    return await result_store.current_for_cases(tx, run_id, batch.case_ids())


@dataclass(frozen=True, slots=True)
class NewRun:
    """The run an ingest creates in the same transaction as its results."""

    name: str
    environment: str | None
    status: str
    created_at: str


async def store_batch(
    tx: Transaction, db: Database, tenant_id: str, run: RunRef, batch: Batch, settled: Settled, now: str, *,
    audit_action: str, audit_extra: Mapping[str, Any], new_run: NewRun | None = None,
    versions: Mapping[str, int] | None = None,
) -> None:
    """Writes a settled batch and all its side effects, in the caller's transaction (the run and the
    cases already checked there). ``new_run``: the run is created here with the batch's counts (every
    result is new: the rows are appended, COPY on PostgreSQL) and, COMPLETED, fires test_run.completed."""
    if new_run is not None:
        await run_store.insert_run(tx, run_id=run.id, tenant_id=tenant_id, project_id=run.project_id,
                                   name=new_run.name, environment=new_run.environment, status=new_run.status,
                                   created_at=new_run.created_at, counts=settled.counts)
    if batch.linked:
        if new_run is not None:
            await result_store.insert_linked(tx, batch.linked, versions or {})
        else:
            await result_store.upsert_linked(tx, batch.linked)
        # a new result is the retest a flagged case waits for: (test_case_id, executed_at) of each row
        await retest.clear_after_results(tx, tenant_id, [(row.test_case_id, row.executed_at) for row in batch.linked],
                                         now)
    if batch.unlinked:
        await result_store.insert_unlinked(tx, batch.unlinked)
    await failures.record(tx, tenant_id, run.project_id, run.id, now, batch.stamper)
    flaky.touch_after_commit(tx, db, tenant_id, run.project_id)
    if new_run is None:
        await run_store.add_results(tx, tenant_id, run.id, settled.counts, now)
    await events.emit_many(tx, db, tenant_id, "test_run_result.failed", [event_data(e) for e in settled.failed])
    if new_run is not None and new_run.status == "COMPLETED":
        stored_run = {"id": run.id, "name": run.name, "project_id": run.project_id, "environment": run.environment,
                      **dict(zip(run_store.COUNT_COLUMNS, settled.counts, strict=True))}
        await events.emit(tx, db, tenant_id, "test_run.completed", event_data(RunCompletedEvent.of(stored_run)))
    # one entry for the whole batch, with counts: never one per result
    created = {} if new_run is not None else {"created": settled.counts.total}
    await audit.record(tx, tenant_id, audit_action, "run", run.id, {
        **audit_extra, **created, "linked": len(batch.linked), "unlinked": len(batch.unlinked),
        "rejected": len(batch.errors), "failed": len(settled.failed)})
    stored = batch.stored
    tx.after_commit(lambda: INGESTED_RESULTS.inc(stored))


# ---- placeholders, removal, assignment, retention ----------------------------------------------------

async def add_placeholders(tx: Transaction, tenant_id: str, run_id: str, rows: list[LinkedRow], now: str) -> int:
    """UNKNOWN results (source manual: cases waiting for a tester) for cases added to an open run; a case
    the run holds keeps its result. Counts grow by the rows added; the status stays (not a real result)."""
    added = await result_store.insert_placeholders(tx, run_id, rows)
    if added:
        await run_store.shift_counts(tx, tenant_id, run_id, RunCounts(total=added, unknown=added, manual=added), now)
    return added


async def set_assignees(tx: Transaction, tenant_id: str, pairs: list[tuple[str, str]], now: str) -> None:
    """A rerun's new results get the assignees of the results they repeat: (result id, assignee id) pairs."""
    if pairs:
        await result_store.set_assignees(tx, tenant_id, pairs, now)


async def remove_cases(tx: Transaction, tenant_id: str, run_id: str, case_ids: list[str], now: str) -> int:
    """Removes the run's results of these cases, whatever their status; the counts follow."""
    deleted = await result_store.delete_for_cases(tx, tenant_id, run_id, case_ids)
    if deleted:
        tally = Tally()
        for gone in deleted:
            tally.add(gone.status, gone.source, -1)
        await run_store.shift_counts(tx, tenant_id, run_id, tally.counts(), now)
    return len(deleted)


async def assign(tx: Transaction, tenant_id: str, run_id: str, result_ids: list[str], assignee_id: str | None,
                 now: str) -> int:
    return await result_store.assign(tx, tenant_id, run_id, result_ids, assignee_id, now)


async def delete_of_run(tx: Transaction, run_id: str, result_ids: list[str]) -> None:
    """The retention sweep: results of a run it removes whole (the run goes next; no counts to keep)."""
    await result_store.delete_of_run(tx, run_id, result_ids)


async def delete_of_project(tx: Transaction, tenant_id: str, project_id: str) -> None:
    """A project being deleted: all its results (its runs and counters go with it next)."""
    await result_store.delete_of_project(tx, tenant_id, project_id)


async def sweep_unlinked(tx: Transaction, tenant_id: str, cutoff: str, batch: int) -> int:
    """The retention sweep of old unlinked results (``retention.unlinked_days``)."""
    return await result_store.delete_unlinked_before(tx, tenant_id, cutoff, batch)
