"""The one writer of results (``tms.runs.writes``), its part for one result changed by hand
(``PATCH /results/{id}``, the execution view): ``save_one``, with every side effect of a manual save.
Split off ``tms.runs.writes`` unchanged (issue 23: modules under ~400 lines); the counts (``Tally``),
the run reference and the event data are shared from there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

import msgspec

from tms.db import Database, Row, Transaction
from tms.failures import service as failures
from tms.failures.flaky import service as flaky
from tms.failures.known_issues.service import Matcher
from tms.failures.retest import service as retest
from tms.notifications import events
from tms.runs import store as run_store
from tms.runs.models import ResultFailedEvent
from tms.runs.results import store as result_store
from tms.runs.statuses import FAILING
from tms.runs.writes import RunRef, Tally, event_data
from tms.team.audit import service as audit

Source = Literal["automated", "manual"]


class StoredResult(NamedTuple):
    """One stored result as a manual save reads it (``tms.runs.executions.store.get_result``)."""

    row: Row
    linked: bool


async def save_one(
    tx: Transaction, db: Database, tenant_id: str, stored: StoredResult, changes: dict[str, Any], now: str, *,
    source: Source, matcher: Matcher, audit_changes: Mapping[str, Any],
) -> None:
    """Applies ``changes`` (columns of ``results.store.UPDATABLE``, ``updated_at`` included) to one result
    in the caller's transaction, with every side effect of a result written by hand: a new status gets its
    fingerprint or loses it (and a known issue's bug; ``matcher`` was matched ahead), the run's counts
    move (a real result moves a PENDING run to IN_PROGRESS), test_run_result.failed fires when the result
    becomes FAILED, the retest flag clears, the flaky re-check runs after commit, the audit entry.
    ``source`` is the result's source from now on when the save sets its outcome (status or steps)."""
    row, linked = stored
    old_source = row["source"]
    if ("status" in changes or "step_results" in changes) and source != old_source:
        changes["source"] = source
    new_status: str | None = changes.get("status")
    run_row = await run_store.get_run(tx, tenant_id, row["run_id"])
    assert run_row is not None
    run = RunRef.of(run_row)
    # a tester's failure is fingerprinted by its failed step and note, and stays out of the first-seen
    # tables (``new`` and the top clusters are about automated results): a new note restamps it too
    manual = None
    if changes.get("source", old_source) == "manual":
        manual = failures.ManualFailure(case_id=row.get("test_case_id"),
                                        step_results=changes.get("step_results", row.get("step_results")),
                                        comment=changes.get("comment", row.get("comment")))
    status_now: str = new_status if new_status is not None else row["status"]
    notes_changed = manual is not None and status_now in FAILING and (
        "step_results" in changes or "comment" in changes)
    if new_status is not None or notes_changed:
        key = changes.get("bug_ticket_key", row["bug_ticket_key"])
        url = changes.get("bug_ticket_url", row["bug_ticket_url"])
        stamper = failures.Stamper(matcher)
        fingerprint, stamped_key, stamped_url = await failures.stamp_one(
            tx, tenant_id, stamper, status_now, row["error_message"], row["error_stack"], key, url, manual=manual)
        await failures.record(tx, tenant_id, run.project_id, run.id, now, stamper)
        changes["fingerprint"] = fingerprint
        if stamped_key != key:
            changes["bug_ticket_key"], changes["bug_ticket_url"] = stamped_key, stamped_url
    await result_store.update_one(tx, tenant_id, row["id"], linked, changes)
    source_now = changes.get("source", old_source)
    if new_status is not None or source_now != old_source:
        tally = Tally()
        tally.add(row["status"], old_source, -1)
        tally.add(new_status if new_status is not None else row["status"], str(source_now))
        if new_status is not None and new_status != "UNKNOWN":
            # a real result: moves a PENDING run to IN_PROGRESS like any reported result
            await run_store.add_results(tx, tenant_id, run.id, tally.counts(), now)
        else:
            await run_store.shift_counts(tx, tenant_id, run.id, tally.counts(), now)
    if new_status is not None:
        if new_status == "FAILED" and row["status"] != "FAILED":
            await events.emit(tx, db, tenant_id, "test_run_result.failed", event_data(ResultFailedEvent(
                run_id=run.id, run_name=run.name, project_id=run.project_id, result_id=row["id"],
                test_case_id=row["test_case_id"], test_case_code=row["test_case_code"], title=row["title"],
                error_message=row["error_message"],
                bug_ticket_key=changes.get("bug_ticket_key", row["bug_ticket_key"]),
                custom_fields=msgspec.Raw(changes.get("custom_fields", row["custom_fields"]) or "{}"),
                file=row["file"], line=row["line"])))
        if linked and new_status != "UNKNOWN":
            await retest.clear_after_results(tx, tenant_id, [(row["test_case_id"], now)], now)
        flaky.touch_after_commit(tx, db, tenant_id, run.project_id)
    await audit.record(tx, tenant_id, "result.updated", "result", row["id"],
                       {**audit_changes, "run_id": [None, row["run_id"]]})
