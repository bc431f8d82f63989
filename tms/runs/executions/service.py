"""Executing one result by hand: read it, change it (status, steps, comment, bug, assignee), assign
results in bulk, and the tester's queue ("My work").

Every change goes through ``update_result``, the one place that keeps the run's summary counts right,
moves a PENDING run to IN_PROGRESS at its first real result, fires ``test_run_result.failed`` when a
result becomes FAILED and records the audit entry, all in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from tms.attachments.service import attachments_by_result
from tms.config import Config
from tms.db import Database, Row, Transaction
from tms.errors import InvalidInput, NotFound
from tms.ids import now_iso
from tms.library.cases import service as case_service
from tms.library.fields import service as field_service
from tms.library.fields import values as field_values
from tms.library.fields.models import CustomField
from tms.library.gherkin.service import count_steps
from tms.library.shared_steps import service as shared_steps
from tms.notifications.inbox import service as inbox
from tms.runs import store as run_store
from tms.runs import write_one, writes
from tms.runs.executions import store
from tms.runs.executions.models import ResultPatch, StepResult
from tms.runs.results.models import Result
from tms.runs.results.service import result_from_row
from tms.runs.statuses import FAILING
from tms.runs.write_one import Source, StoredResult
from tms.team import service as team
from tms.team.audit import service as audit

_steps_encoder = msgspec.json.Encoder()
_FIELDS = ("status", "comment", "bug_ticket_key", "bug_ticket_url", "assignee_id", "duration_ms")


@dataclass(frozen=True, slots=True)
class Saved:
    result: Result
    # when the caller said which version it loaded and someone else saved since: who and when
    overwritten_by: str | None = None
    overwritten_at: str | None = None


def _shape(row: Row, attachments: list[dict[str, Any]]) -> Result:
    data = {key: value for key, value in row.items() if key not in ("run_id", "updated_by")}
    return result_from_row(data, attachments)


async def _row(db: Database | Transaction, tenant_id: str, result_id: str) -> tuple[Row, bool]:
    found = await store.get_result(db, tenant_id, result_id)
    if found is None:
        raise NotFound(f"result {result_id} not found")
    return found


async def get_result(db: Database, tenant_id: str, result_id: str) -> Result:
    row, _ = await _row(db, tenant_id, result_id)
    attachments = await attachments_by_result(db, tenant_id, [result_id])
    return _shape(row, attachments[result_id])


async def get_result_row(db: Database, tenant_id: str, result_id: str) -> tuple[Row, bool]:
    """The stored row (with run_id and updated_by) and whether it is linked to a case."""
    return await _row(db, tenant_id, result_id)


@dataclass(frozen=True, slots=True)
class Execution:
    """A result as the execution view shows and saves it, read once: the stored row (with run_id and
    updated_by), its run, its case, the checklist's text (shared steps expanded) and the project's
    result fields. An unlinked result (``linked`` false) has no page: nothing else is read for it."""
    row: Row
    linked: bool
    run: Row | None
    case: Row | None
    text: str | None
    fields: dict[str, CustomField]
    # the checklist's length (counted off the event loop when long, never expanded), when asked for
    steps: int | None = None


async def load_execution(db: Database, tenant_id: str, result_id: str, *, count: bool = False) -> Execution:
    """What the execution view (``count``: its save) needs of a result; a 404 for an unknown one."""
    row, linked = await _row(db, tenant_id, result_id)
    if not linked:
        return Execution(row, linked, None, None, None, {})
    run = await run_store.get_run(db, tenant_id, row["run_id"])
    case = await case_service.case_row(db, tenant_id, row["test_case_id"])
    text = await checklist_text(db, tenant_id, case)
    fields = await field_service.fields_of(db, tenant_id, run["project_id"] if run else None, "result")
    return Execution(row, linked, run, case, text, fields, await count_steps(text) if count else None)


async def position(db: Database, tenant_id: str, run_id: str, result_id: str) -> tuple[int, int]:
    """(the result's place in its run, 1-based; the run's linked results)."""
    return await store.neighbours(db, tenant_id, run_id, result_id)


async def next_untested(db: Database, tenant_id: str, run_id: str, result_id: str, user_id: str) -> str | None:
    """"Save and next untested": the run's next UNKNOWN result after this one assigned to the user,
    else anyone's, wrapping around; None when none is left."""
    return (await store.next_untested(db, tenant_id, run_id, result_id, user_id)
            or await store.next_untested(db, tenant_id, run_id, result_id, None))


async def check_assignee(db: Database | Transaction, tenant_id: str, user_id: str) -> None:
    """An assignee must be an active user of the same tenant; anyone else is a clear 400."""
    row = await team.get_member(db, tenant_id, user_id)
    if row is None:
        raise InvalidInput(f"assignee_id {user_id!r} is not a user of this team", field="assignee_id")
    if not row["active"]:
        raise InvalidInput(f"assignee_id {user_id!r} is deactivated and cannot be assigned results",
                           field="assignee_id")


def _check_steps(steps: list[StepResult], available: int) -> None:
    """Linear in the request's step results (at most ``STEP_RESULTS_MAX`` of them), whatever the case's
    size: ``available`` is the checklist's length, computed by arithmetic, never by expanding it."""
    seen: set[int] = set()
    for position, step in enumerate(steps):
        if step.index in seen:
            raise InvalidInput(f"step_results[{position}].index {step.index} appears twice",
                               field="step_results")
        if step.index > available:
            raise InvalidInput(f"step_results[{position}].index {step.index} is beyond the case's "
                               f"{available:,} steps", field="step_results")
        seen.add(step.index)


async def checklist_text(db: Database | Transaction, tenant_id: str, case: Row | None) -> str | None:
    """The text a case's checklist is built from: its Gherkin with its shared steps expanded, so that
    the execution view's steps and ``step_results``' indexes are the same list."""
    if case is None:
        return None
    return await shared_steps.expanded_case_text(db, tenant_id, case["project_id"], case["bdd_content"])


async def _case_text(db: Database | Transaction, tenant_id: str, case_id: str | None) -> str | None:
    case = None if case_id is None else await case_service.case_row(db, tenant_id, case_id)
    return await checklist_text(db, tenant_id, case)


async def update_result(
    db: Database, tenant_id: str, result_id: str, body: ResultPatch, *, loaded_updated_at: str | None = None,
    source: Source = "manual", config: Config | None = None, ahead: Execution | None = None,
) -> Saved:
    """Applies the fields the body sets (last write wins), written by ``tms.runs.write_one.save_one``: a
    change of status or steps makes the result's ``source`` this one (a person: manual).
    With ``loaded_updated_at`` (the version the caller showed its user), a save over someone else's newer
    change still wins, and the answer says whose change it replaced, so the first tester is told rather
    than silently overwritten. With ``config``, a new assignee is notified (issue 26). ``ahead`` is what
    the execution view already read of the result (``load_execution`` with ``count``): not read again."""
    if body.assignee_id not in (msgspec.UNSET, None):
        await check_assignee(db, tenant_id, body.assignee_id)
    before = ahead.row if ahead is not None else (await _row(db, tenant_id, result_id))[0]
    measured: tuple[str | None, int] | None = None
    if ahead is not None and ahead.steps is not None:
        measured = (ahead.text, ahead.steps)
    elif body.step_results not in (msgspec.UNSET, None):
        # the checklist's size before taking the write lock: parsing a long case (off the event loop)
        # must not hold every other writer
        text = await _case_text(db, tenant_id, before["test_case_id"])
        measured = (text, await count_steps(text))
    # known-issue patterns matched before the write lock, in a worker thread, against the failure the
    # save may stamp (a text changed meanwhile matches no pattern: the next save stamps it)
    failing = body.status in FAILING and body.bug_ticket_key in (msgspec.UNSET, None)
    run = ahead.run if ahead is not None else await run_store.get_run(db, tenant_id, before["run_id"])
    project_id = "" if run is None else run["project_id"]
    matcher = await writes.matcher_ahead(db, tenant_id, project_id, [(before["error_message"], before["error_stack"])]
                                         if failing else [])
    given = None if body.custom_fields is msgspec.UNSET else body.custom_fields or {}
    # required result fields: when the save gives values or records an outcome (a status but UNKNOWN)
    require = given is not None or body.status not in (msgspec.UNSET, "UNKNOWN")
    rules = field_values.NO_RESULT_FIELDS
    if project_id and (given is not None or require):
        rules = (await field_service.rules_of(db, tenant_id, ahead.fields, [given]) if ahead is not None
                 else await field_service.result_rules(db, tenant_id, project_id, [given]))
    async with db.transaction() as tx:
        row, linked = await _row(tx, tenant_id, result_id)
        if not linked and (body.assignee_id is not msgspec.UNSET or body.step_results is not msgspec.UNSET):
            field = "assignee_id" if body.assignee_id is not msgspec.UNSET else "step_results"
            raise InvalidInput(f"{field}: an unlinked result (no test case) has no steps and cannot be assigned",
                               field=field)
        changes: dict[str, Any] = {}
        for field in _FIELDS:
            value = getattr(body, field)
            if value is not msgspec.UNSET and value != row[field]:
                changes[field] = value
        if body.step_results is not msgspec.UNSET:
            steps = body.step_results
            if steps is not None:
                text = await _case_text(tx, tenant_id, row["test_case_id"])
                # the case changed since it was measured (rare): measure again, under the lock
                available = measured[1] if measured is not None and measured[0] == text else await count_steps(text)
                _check_steps(steps, available)
                encoded = _steps_encoder.encode(sorted(steps, key=lambda s: s.index)).decode()
            else:
                encoded = None
            if encoded != row["step_results"]:
                changes["step_results"] = encoded
        if given is not None or require:
            values = rules.merged(field_values.decode_values(row["custom_fields"]), given, require=require)
            encoded_values = field_values.encode(values)
            if encoded_values != (row["custom_fields"] or "{}"):
                changes["custom_fields"] = encoded_values
        overwritten = (loaded_updated_at is not None and row["updated_at"] != loaded_updated_at)
        if not changes:
            attachments = await attachments_by_result(db, tenant_id, [result_id])
            return Saved(_shape(row, attachments[result_id]))
        now = now_iso()
        changes["updated_at"] = now
        if linked:
            changes["updated_by"] = audit.current_actor().name
        new_status = changes.get("status")
        if new_status is not None and new_status != "UNKNOWN":
            changes["executed_at"] = now
        diff = {field: [row[field], value] for field, value in changes.items() if field in _FIELDS}
        if "custom_fields" in changes:
            diff["custom_fields"] = [field_values.decode_values(row["custom_fields"]),
                                     field_values.decode_values(changes["custom_fields"])]
        if "step_results" in changes:
            diff["step_results"] = [_count_steps(row["step_results"]), _count_steps(changes["step_results"])]
        await write_one.save_one(tx, db, tenant_id, StoredResult(row, linked), changes, now, source=source,
                                 matcher=matcher, audit_changes=diff)
        if config is not None and changes.get("assignee_id"):
            title = row["title"] or row["test_case_code"] or "a result"
            await _notify_assigned(tx, config, tenant_id, changes["assignee_id"], f"'{title}'", run,
                                   f"/results/{result_id}/execute")
        fresh, _ = await _row(tx, tenant_id, result_id)
    attachments = await attachments_by_result(db, tenant_id, [result_id])
    return Saved(_shape(fresh, attachments[result_id]),
                 overwritten_by=(row["updated_by"] or "someone") if overwritten else None,
                 overwritten_at=row["updated_at"] if overwritten else None)


def _count_steps(encoded: str | None) -> str | None:
    """The audit shows step results as a short summary, not the whole JSON."""
    if not encoded:
        return None
    steps = msgspec.json.decode(encoded)
    marked: dict[str, int] = {}
    for step in steps:
        marked[step["status"]] = marked.get(step["status"], 0) + 1
    return ", ".join(f"{n} {status.lower()}" for status, n in sorted(marked.items()))


async def _notify_assigned(tx: Transaction, config: Config, tenant_id: str, assignee_id: str, what: str,
                           run: Row | None, link: str) -> None:
    actor = audit.current_actor()
    where = f" in run '{run['name']}'" if run is not None else ""
    await inbox.notify(tx, config, tenant_id=tenant_id, user_id=assignee_id, kind="assignment",
                       title=f"{actor.name} assigned you {what}{where}", link=link, actor_id=actor.id)


async def assign_results(db: Database, tenant_id: str, run_id: str, result_ids: list[str],
                         assignee_id: str | None, *, config: Config | None = None) -> int:
    """Assigns results of one run to a user (or to nobody): one UPDATE, one audit entry with the count.
    Ids that are not linked results of this run are a 400 naming how many. With ``config``, the assignee
    gets one notification for the lot (issue 26)."""
    run = await run_store.get_run(db, tenant_id, run_id)
    if run is None:
        raise NotFound(f"run {run_id} not found")
    ids = list(dict.fromkeys(result_ids))
    if assignee_id is not None:
        await check_assignee(db, tenant_id, assignee_id)
    async with db.transaction() as tx:
        found = await store.count_in_run(tx, tenant_id, run_id, ids)
        if found != len(ids):
            raise InvalidInput(f"result_ids: {len(ids) - found} of {len(ids)} are not results of this run "
                               "linked to a test case", field="result_ids")
        changed = await writes.assign(tx, tenant_id, run_id, ids, assignee_id, now_iso())
        await audit.record(tx, tenant_id, "run.results_assigned", "run", run_id,
                           {"assigned": changed, "assignee_id": assignee_id})
        if config is not None and assignee_id is not None and changed:
            what = f"{changed} result{'s' if changed != 1 else ''}"
            await _notify_assigned(tx, config, tenant_id, assignee_id, what, run, f"/runs/{run_id}?assignee=me")
    return changed


async def my_work(db: Database, tenant_id: str, user_id: str, limit: int, offset: int) -> tuple[list[Row], int]:
    return await store.my_work(db, tenant_id, user_id, limit, offset)
