"""A defect filed from a failed or blocked result (issue 27): the draft (case, failed step or error
and stack, environment, links), the tracker call through the project's integration, and the bug
key and URL set on the result, claimed first so that two clicks file one issue."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import msgspec

from tms.config import Config
from tms.db import Database, Row
from tms.errors import Conflict, InvalidInput, NotFound
from tms.ids import iso_days_ago, now_iso
from tms.integrations import outbound
from tms.integrations import store as integration_store
from tms.integrations.models import Defect, DefectCreate, DefectDraft
from tms.integrations.outbound import TrackerError
from tms.integrations.service import (
    KIND_LABELS,
    TrackerFailed,
    allow_private,
    missing_outbound,
    outbound_ready,
    tracker_target,
    tracker_timeout,
)
from tms.library.cases import service as cases
from tms.library.cases.models import Case
from tms.library.gherkin import service as gherkin
from tms.library.shared_steps import service as shared_steps
from tms.runs import service as runs
from tms.runs.executions import service as executions
from tms.runs.executions.models import ResultPatch
from tms.runs.models import Run
from tms.runs.results.models import Result
from tms.runs.statuses import FAILING
from tms.team.audit import service as audit

# --- create a defect from a failed result ---------------------------------------------------------

FAILING_STATUSES = FAILING
# a claim older than this is a crashed creation's leftover (the tracker call itself times out long before)
CLAIM_STALE_SECONDS = 300
_MAX_STACK = 8_000
_MAX_BODY = 60_000  # GitHub refuses bodies over 65,536 characters

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Failure:
    """What a defect is about: the result, its run, its case (when it has one) and the failed step."""

    result: Result
    run: Run
    case: Case | None
    failed_step: str | None


async def _failure(db: Database, tenant_id: str, result_id: str) -> Failure:
    result = await executions.get_result(db, tenant_id, result_id)
    row, _ = await executions.get_result_row(db, tenant_id, result_id)
    run = await runs.get_run(db, tenant_id, row["run_id"])
    case: Case | None = None
    if result.test_case_id:
        try:
            case = await cases.get_case(db, tenant_id, result.test_case_id)
        except NotFound:
            case = None
    # the case's checklist as step_results index it: its shared steps expanded
    gherkin_text = None if case is None else await shared_steps.expanded_case_text(db, tenant_id, case.project_id,
                                                                                    case.bdd_content)
    return Failure(result, run, case, _failed_step(result, gherkin_text))


def _failed_step(result: Result, gherkin_text: str | None) -> str | None:
    """'3. When I pay — the note' for the first failed or broken step, when steps were marked."""
    if result.step_results is None:
        return None
    try:
        steps = msgspec.json.decode(result.step_results)
    except msgspec.DecodeError:
        return None
    failed = next((s for s in steps if isinstance(s, dict) and s.get("status") in FAILING_STATUSES), None)
    if failed is None or not isinstance(failed.get("index"), int):
        return None
    index: int = failed["index"]
    text = ""
    if gherkin_text is not None:
        page = gherkin.checklist_page(gherkin_text, (index - 1) // gherkin.STEPS_PAGE_SIZE + 1)
        for group in page.groups:
            for step in group.steps:
                if step.index == index:
                    text = f"{step.keyword.strip()} {step.text}"
    note = f" — {failed['comment']}" if failed.get("comment") else ""
    return f"{index}. {text or '(step)'}{note}"


def _fenced(text: str) -> str:
    fence = "````" if "```" in text else "```"
    return f"{fence}\n{text}\n{fence}"


def draft(failure: Failure, base_url: str) -> DefectDraft:
    """The issue "Create issue" proposes: a title, and a body (Markdown that reads as plain text in Jira)."""
    result, run, case = failure.result, failure.run, failure.case
    what = case.title if case is not None else (result.title or "(unnamed test)")
    code = case.code if case is not None else result.test_case_code
    environment = run.environment or "no environment"
    verb = "is broken" if result.status == "BROKEN" else "fails"
    title = f"{code + ' ' if code else ''}{what} {verb} ({environment})"
    base = base_url.rstrip("/")
    link = f"{base}/results/{result.id}/execute" if result.test_case_id else f"{base}/runs/{run.id}"
    lines = [f"Test case: {code + ' — ' if code else ''}{what}" + (f" ({base}/cases/{code})" if case else ""),
             f"Run: {run.name} — {base}/runs/{run.id}", f"Environment: {environment}",
             f"Status: {result.status}" + (f" at {result.executed_at}" if result.executed_at else ""),
             f"Result: {link}", ""]
    if failure.failed_step:
        lines += [f"Failed step: {failure.failed_step}", ""]
    if result.error_message:
        lines += ["Error:", _fenced(result.error_message[:4_000]), ""]
    if result.error_stack:
        stack = result.error_stack[:_MAX_STACK] + ("\n…" if len(result.error_stack) > _MAX_STACK else "")
        lines += ["Stack trace:", _fenced(stack), ""]
    if result.comment:
        lines += ["Comment:", result.comment[:2_000], ""]
    if result.attachments:
        lines.append("Attachments:")
        lines += [f"- {a.get('fileName') or a.get('id')}: {base}/web/attachments/{a.get('id')}"
                  for a in result.attachments]
        lines.append("")
    lines.append("Reported from TMS.")
    return DefectDraft(title=title[:250], body="\n".join(lines)[:_MAX_BODY])


async def defect_draft(db: Database, config: Config, tenant_id: str, result_id: str) -> tuple[DefectDraft, Failure]:
    failure = await _failure(db, tenant_id, result_id)
    return draft(failure, config.base_url), failure


async def defect_integrations(db: Database, tenant_id: str) -> list[Row]:
    """The tenant's integrations that can create issues (for the "Create issue" form)."""
    return [row for row in await integration_store.list_integrations(db, tenant_id) if outbound_ready(row)]


async def can_create_issues(db: Database, tenant_id: str) -> bool:
    """Whether "Create issue" may be offered: an integration of the tenant has outbound credentials."""
    return bool(await defect_integrations(db, tenant_id))


async def create_defect(db: Database, config: Config, tenant_id: str, result_id: str, body: DefectCreate) -> Defect:
    """Creates the issue in the tracker, then sets the result's bug key and URL (one write).

    No transaction is open while the tracker is called: a claim row (its own short transaction) keeps a
    second click from creating a second issue. A tracker that refuses or does not answer leaves the
    result as it was (``TrackerFailed``, 502) and the claim released, so the same request can be retried.
    """
    integration = await integration_store.get_outbound(db, tenant_id, body.integration_id)
    if integration is None:
        raise NotFound(f"integration {body.integration_id} not found", field="integration_id")
    if not outbound_ready(integration):
        raise InvalidInput(missing_outbound(integration), field="integration_id")
    proposed, failure = await defect_draft(db, config, tenant_id, result_id)
    result = failure.result
    if result.status not in FAILING_STATUSES:
        raise Conflict(f"result {result_id} is {result.status}: issues are created from failed or broken results")
    if result.bug_ticket_key:
        raise Conflict(f"result {result_id} is already linked to {result.bug_ticket_key}; clear its bug key first")
    title = (body.title or proposed.title).strip() or proposed.title
    text = body.body if body.body is not None else proposed.body
    target = tracker_target(config, integration)
    at = now_iso()
    async with db.transaction() as tx:
        claimed = await integration_store.claim_defect(
            tx, tenant_id, result_id, integration["id"], at, iso_days_ago(CLAIM_STALE_SECONDS / 86_400))
    if not claimed:
        raise Conflict(f"an issue is being created for result {result_id} right now; reload in a moment")
    try:
        try:
            async with outbound.client(allow_private=allow_private(config)) as http:
                issue = await outbound.create_issue(http, target, title, text, seconds=tracker_timeout(config))
        except TrackerError as exc:
            log.info("integration %s: creating an issue for result %s failed: %s", integration["id"], result_id, exc)
            raise TrackerFailed(f"{KIND_LABELS[integration['kind']]} did not create the issue: {exc}. "
                                "Nothing was linked; try again.") from None
        patch = ResultPatch(bug_ticket_key=issue.key[:100], bug_ticket_url=issue.url)
        try:
            await executions.update_result(db, tenant_id, result_id, patch)
        except Exception:
            # the issue exists but the result could not take it (deleted meanwhile): say which, for a person
            log.warning("integration %s: created %s but could not link it to result %s",
                        integration["id"], issue.key, result_id)
            raise
        source = integration["kind"]
        async with db.transaction() as tx:
            await integration_store.save_issues(tx, [(tenant_id, source, issue.key.upper(), integration["id"],
                                                      issue.title or title, issue.status, issue.url, None, now_iso())])
            await audit.record(tx, tenant_id, "integration.defect_created", "result", result_id,
                               {"integration_id": integration["id"], "bug_ticket_key": issue.key})
    finally:
        async with db.transaction() as tx:
            await integration_store.release_defect(tx, tenant_id, result_id)
    return Defect(result_id=result_id, integration_id=integration["id"], bug_ticket_key=issue.key[:100],
                  bug_ticket_url=issue.url, title=title)
