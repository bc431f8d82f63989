"""Executing a run by hand: the step-by-step view of one result, "My work", and attachment upload.

The execution view lists the case's Gherkin steps (Background first, an Outline once per Examples
row) as a checklist; the tester marks each step, then the result (a status suggested from the steps),
comment, duration (a running timer), bug and attachments. "Save and next untested" walks the run.

Two testers on one result: the form carries the ``updated_at`` it was loaded with. The later save
wins, and when someone else saved in between, the saver is told whose change they replaced and when;
the page always shows who saved last, so the first tester sees the change when they come back.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from litestar import Request, Router, get, post
from litestar.plugins.flash import flash
from litestar.response import Redirect, Template

from tms.attachments import service as attachment_service
from tms.attachments import upload as attachment_upload
from tms.attachments.models import Attachment, AttachmentList
from tms.db import Database
from tms.errors import DomainError, NotFound
from tms.http.pages import AnyRequest, done, form_of, not_found, page_numbers, render, tenant_of, user_of
from tms.integrations import defects
from tms.library.comments.web import thread_context
from tms.library.fields import values as field_values
from tms.library.fields.models import CustomField
from tms.library.gherkin.service import EXPANDED_STEPS_LIMIT, load_checklist_page, page_bounds
from tms.runs.executions import durations
from tms.runs.executions import service as executions
from tms.runs.executions.models import ResultPatch, StepResult
from tms.runs.statuses import LABELS, RESULT_STATUSES
from tms.state import ConfigDep, DatabaseDep, app_state
from tms.team import service as team
from tms.team.signin.session import page_guard, session_api_guard, web_user

# (status, its word, its key): p f b s; a step is not marked "untested", it is left unmarked
STEP_STATUSES = tuple((status, LABELS[status], status[0].lower()) for status in RESULT_STATUSES if status != "UNKNOWN")
_steps_decoder = msgspec.json.Decoder(list[dict[str, Any]])


async def _execution(db: Database, tenant: str, result_id: str, *, count: bool = False) -> executions.Execution:
    try:
        execution = await executions.load_execution(db, tenant, result_id, count=count)
    except NotFound as exc:
        raise not_found("result") from exc
    if not execution.linked:
        raise not_found("test case result")
    return execution


async def _context(db: Database, request: AnyRequest, result_id: str, steps_page: int = 1) -> dict[str, Any]:
    tenant = tenant_of(request)
    execution = await _execution(db, tenant, result_id)
    row, run, case, fields = execution.row, execution.run, execution.case, execution.fields
    attachments = await attachment_service.attachments_by_result(db, tenant, [result_id])
    case_files = await attachment_service.case_attachments(db, tenant, case["id"]) if case else []
    position, total = await executions.position(db, tenant, row["run_id"], result_id)
    members = await team.list_users(db, tenant)
    steps = {s["index"]: s for s in _steps_decoder.decode(row["step_results"])} if row["step_results"] else {}
    # one page of the checklist (parsed off the event loop when long): a case stored before the limit
    # can expand to 100,000 steps, and the page's time and size must not grow with that
    page = await load_checklist_page(execution.text, steps_page)
    return {"result": row, "run": run, "case": case, "groups": page.groups, "checklist": page,
            "steps_limit": EXPANDED_STEPS_LIMIT, "steps": steps, "attachments": attachments[result_id],
            "case_attachments": case_files,
            "position": position, "run_total": total,
            "members": members, "names": {m["id"]: m["name"] or m["email"] for m in members},
            "assignable": [m for m in members if m["active"] and m["role"] != "viewer"],
            "step_statuses": STEP_STATUSES, "statuses": RESULT_STATUSES, "result_fields": fields,
            "custom_fields": [f for f in fields.values() if not f.retired],
            "can_write": user_of(request).has_role("tester"),
            # "Create issue" for a failed or blocked result, when a tracker can take it (issue 27)
            "can_file_issue": user_of(request).has_role("tester")
            and await defects.can_create_issues(db, tenant)}


def _form_from_row(row: dict[str, Any], steps: dict[int, dict[str, Any]],
                   fields: dict[str, CustomField]) -> dict[str, Any]:
    values = field_values.decode_values(row["custom_fields"])
    if not values:  # a result nobody filled in yet offers the fields' defaults
        values = {f.key: f.default for f in fields.values() if not f.retired and f.default is not None}
    return {**field_values.form_values(fields, values),
            "status": row["status"], "comment": row["comment"] or "", "bug_ticket_key": row["bug_ticket_key"] or "",
            "bug_ticket_url": row["bug_ticket_url"] or "", "duration": durations.words(row["duration_ms"] or 0),
            "assignee_id": row["assignee_id"] or "", "loaded_updated_at": row["updated_at"],
            "steps": {i: s["status"] for i, s in steps.items()},
            "notes": {i: s.get("comment") or "" for i, s in steps.items()}}


def _page_number(raw: object) -> int:
    try:
        return max(1, min(int(str(raw)), 2_147_483_647))
    except ValueError:
        return 1


@get("/results/{result_id:str}/execute")
async def execute_page(request: AnyRequest, db: DatabaseDep, result_id: str, steps_page: int = 1,
                       comments_offset: int = 0) -> Template:
    context = await _context(db, request, result_id, _page_number(steps_page))
    return render(request, "runs/execute.html", active_nav="runs", errors={},
                  form=_form_from_row(context["result"], context["steps"], context["result_fields"]), **context,
                  **await thread_context(db, request, "result", context["result"]["id"], comments_offset))


# A form field the API's struct (``ResultPatch``, ``StepResult``) refuses, in the tester's words
_REFUSED = {"status": "Choose the result's status.", "comment": "At most 20,000 characters.",
            "bug_ticket_key": "At most 100 characters.", "bug_ticket_url": "At most 2,000 characters.",
            "assignee_id": "Choose someone on the team.", "duration_ms": "Type the time it took, e.g. 1m 30s."}
_STEP_REFUSED = {"status": "Unknown step status.", "comment": "At most 2,000 characters."}
_REFUSED_AT = re.compile(r"`\$\.(\w+)")


def _refused(exc: msgspec.ValidationError) -> str | None:
    """The field of the struct msgspec names in its error (``$.comment`` -> ``comment``)."""
    match = _REFUSED_AT.search(str(exc))
    return match.group(1) if match else None


def _read_form(single: dict[str, str], first: int, last: int,
               kept: list[dict[str, Any]]) -> tuple[dict[str, Any], ResultPatch | None, dict[str, str]]:
    """(form as typed, the patch, errors by field): the form becomes the API's own ``ResultPatch``
    (``PATCH /results/{id}``), each field converted on its own so that every wrong one is named at once;
    only what the form alone has is read here (the duration's words, a step's mark and note, a link).

    The form holds one page of steps (``first`` .. ``last``); ``kept`` are the stored step results of
    the other pages, saved again unchanged."""
    errors: dict[str, str] = {}
    form: dict[str, Any] = {key: single.get(key, "") for key in ("status", "comment", "bug_ticket_key",
                                                                 "bug_ticket_url", "assignee_id",
                                                                 "loaded_updated_at", "duration")}
    key, url = form["bug_ticket_key"].strip(), form["bug_ticket_url"].strip()
    if url and (not url.lower().startswith(("http://", "https://")) or " " in url):
        errors["bug_ticket_url"] = "Enter an http:// or https:// address."
    duration: int | None = None
    try:
        duration = durations.parse(str(form["duration"]))
    except ValueError:
        errors["duration"] = "Type the time it took, e.g. 1m 30s, 45s or 1:30."
    steps, notes = {}, {}
    step_results = [item for item in kept if item["index"] < first]
    for index in range(first, last + 1):
        status = single.get(f"step_{index}", "")
        note = single.get(f"note_{index}", "")
        notes[index] = note
        if status:
            steps[index] = status
            item: dict[str, Any] = {"index": index, "status": status}
            if note.strip():
                item["comment"] = note.strip()
            try:
                msgspec.convert(item, StepResult)
            except msgspec.ValidationError as exc:
                name = "note" if _refused(exc) == "comment" else "step"
                errors[f"{name}_{index}"] = _STEP_REFUSED["comment" if name == "note" else "status"]
                continue
            step_results.append(item)
        elif note.strip():
            errors[f"step_{index}"] = "Mark the step before adding a note."
    step_results += [item for item in kept if item["index"] > last]
    form["steps"], form["notes"] = steps, notes
    patch = {"status": form["status"], "comment": form["comment"].strip() or None, "bug_ticket_key": key or None,
             "bug_ticket_url": url or None, "duration_ms": duration, "step_results": step_results or None,
             "assignee_id": form["assignee_id"] or None}
    for name, value in patch.items():
        if name not in errors and name != "step_results":
            try:
                msgspec.convert({name: value}, ResultPatch)
            except msgspec.ValidationError:
                errors[name] = _REFUSED[name]
    if errors:
        return form, None, errors
    try:
        return form, msgspec.convert(patch, ResultPatch), errors
    except msgspec.ValidationError as exc:
        return form, None, {"form": str(exc)}


@post("/results/{result_id:str}/execute", status_code=303)
async def save_execution(request: AnyRequest, db: DatabaseDep, config: ConfigDep,
                         result_id: str) -> Template | Redirect:
    tenant = tenant_of(request)
    # the result, its run, case and result fields, read once for the whole save; the form holds one
    # page of the checklist: its size is counted (off the event loop when long, never expanded), and
    # the stored marks of the other pages are kept
    execution = await _execution(db, tenant, result_id, count=True)
    row, fields, total = execution.row, execution.fields, execution.steps or 0
    single, multi = await form_of(request)
    steps_page, _, first, last = page_bounds(total, _page_number(single.get("steps_page", "1")))
    stored = _steps_decoder.decode(row["step_results"]) if row["step_results"] else []
    kept = [item for item in stored if not first <= item["index"] <= last and item["index"] <= total]
    # the full page context is read only when the form comes back with errors: a save stays cheap
    form, patch, errors = _read_form(single, first, last, kept)
    # the result fields: every active one is in the form, so a save gives them all (required ones checked)
    values, field_errors = field_values.values_from_form(fields, single, multi)
    errors.update(field_errors)
    form.update({name: value for name, value in single.items() if name.startswith("cf.")})  # kept as typed
    form.update(field_values.form_values(fields, {k: v for k, v in values.items() if isinstance(v, list)}))
    if not errors and patch is not None:
        try:
            saved = await executions.update_result(db, tenant_of(request), result_id,
                                                   msgspec.structs.replace(patch, custom_fields=values),
                                                   loaded_updated_at=form["loaded_updated_at"] or None,
                                                   config=config, ahead=execution)
        except DomainError as exc:
            errors[exc.field or "form"] = exc.detail
    if errors:
        return render(request, "runs/execute.html", status_code=400, active_nav="runs", errors=errors, form=form,
                      **await _context(db, request, result_id, steps_page))
    if saved.overwritten_by:
        flash(request, f"Saved. Note: {saved.overwritten_by} had changed this result at "
                          f"{(saved.overwritten_at or '')[:19].replace('T', ' ')} UTC after you opened it; "
                          "your save replaced their change (it is in the history).", "warning")
    run_id = row["run_id"]
    if single.get("next"):
        following = await executions.next_untested(db, tenant, run_id, result_id, user_of(request).id)
        if following:
            return done(request, f"/results/{following}/execute", "Saved.")
        return done(request, f"/runs/{run_id}", "Saved. No untested result is left in this run.")
    page_query = f"?steps_page={steps_page}" if steps_page > 1 else ""
    return done(request, f"/results/{result_id}/execute{page_query}", "Saved.")


@get("/my-work")
async def my_work(request: AnyRequest, db: DatabaseDep, offset: int = 0) -> Template:
    user = user_of(request)
    offset = max(0, offset)
    rows, total = await executions.my_work(db, tenant_of(request), user.id, 100, offset)
    return render(request, "runs/my_work.html", active_nav="my-work", rows=rows,
                  pager=page_numbers(total, 100, offset), pager_query="")


@post("/api/results/{result_id:str}/attachments", status_code=201, request_max_body_size=None)
async def upload_attachment(request: Request[Any, Any, Any], result_id: str) -> AttachmentList:
    """The execution view's upload (drag and drop, pasted screenshots): the API's own checks."""
    state = app_state(request)
    created = await attachment_upload.upload(
        state.db, web_user(request).tenant_id, result_id,
        content_type=request.headers.get("content-type", ""), content_length=request.content_length,
        body=request.stream(), store=state.attachment_store,
        max_bytes=int(state.config.get("attachments.max_bytes")))
    return AttachmentList(data=msgspec.convert(created, list[Attachment]))


def router() -> Router:
    return Router(path="/", route_handlers=[execute_page, save_execution, my_work], guards=[page_guard],
                  include_in_schema=False)


def upload_router() -> Router:
    return Router(path="/", route_handlers=[upload_attachment], guards=[session_api_guard], include_in_schema=False)
