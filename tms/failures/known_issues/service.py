"""Known issues: a bug that explains failures, matched by fingerprint or by an RE2 pattern.

At write time (tms.failures.service.stamp) a failure that matches an open known issue gets the bug's
key and URL when it names none, and its cluster is not "new". The tracker loop closes a known issue
when its bug is resolved (close_for_bug), and its tests join the retest queue.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from typing import Any

import msgspec

from tms.db import Database, Row, Transaction
from tms.errors import InvalidInput, NotFound
from tms.failures import fingerprints
from tms.failures import store as failure_store
from tms.failures.known_issues import store
from tms.failures.known_issues.models import KnownIssue, KnownIssueCreate, KnownIssueUpdate
from tms.failures.known_issues.patterns import (
    MATCH_BUDGET_SECONDS,
    MAX_PATTERNS_PER_PROJECT,
    OverBudget,
    PatternSet,
    acceptable,
    compile_pattern,
    subject,
)
from tms.failures.retest import service as retest
from tms.http.paging import check_choice, page_window
from tms.ids import new_id, now_iso
from tms.library.cases.models import Pagination
from tms.runs.service import require_project
from tms.team.audit import service as audit

log = logging.getLogger(__name__)

FIELDS = ("fingerprint", "pattern", "bug_ticket_key", "bug_ticket_url", "note", "status")


def to_model(row: Row) -> KnownIssue:
    return KnownIssue(**{field: row[field] for field in KnownIssue.__struct_fields__})


class Matcher:
    """The open known issues of one project, ready to match failures: a dict for fingerprints, and the
    patterns (``tms.failures.known_issues.patterns``: those passing today's rules, the oldest
    ``MAX_PATTERNS_PER_PROJECT``) as one ``PatternSet``, built on first use. Built once per write, used
    for every failed row of it.

    Pattern matching spends at most ``budget`` seconds per matcher (compiling the Set included); past
    it a failure's text is left unmatched (``over_budget`` counts them, and the first is logged). Ingest
    calls ``match_ahead`` in a worker thread before its write transaction; after that ``match`` answers
    from those results alone and never runs a pattern on the event loop. Other writers (one result,
    shards, POST results) and the run page's clusters match on demand within the same budget.
    """

    def __init__(self, issues: list[Row], *, budget: float = MATCH_BUDGET_SECONDS, where: str = "") -> None:
        self.by_fingerprint: dict[str, Row] = {}
        self._with_pattern: list[Row] = []
        for issue in issues:
            # EMPTY (a failure that says nothing) is never matched: an old issue holding it would take every
            # failure without a message (every manual failure without a note)
            fingerprint = issue["fingerprint"]
            if fingerprint and fingerprint != fingerprints.EMPTY and fingerprint not in self.by_fingerprint:
                self.by_fingerprint[fingerprint] = issue
            if issue["pattern"]:
                self._with_pattern.append(issue)
        self._patterns: tuple[PatternSet, list[Row]] | None = None
        self._budget = budget
        self._spent = 0.0
        # (message, stack) -> the issue its text matched (None: none, or not matched within the budget)
        self._known: dict[tuple[str | None, str | None], Row | None] = {}
        self._settled = False
        self.over_budget = 0
        self._where = where

    def __bool__(self) -> bool:
        return bool(self.by_fingerprint or self._with_pattern)

    @property
    def has_patterns(self) -> bool:
        return bool(self._with_pattern)

    def match(self, fingerprint: str | None, message: str | None, stack: str | None) -> Row | None:
        if fingerprint is not None:
            issue = self.by_fingerprint.get(fingerprint)
            if issue is not None:
                return issue
        if not self._with_pattern:
            return None
        key = (message, stack)
        if key in self._known:
            return self._known[key]
        if self._settled:
            return None  # not among the texts matched ahead: no pattern runs here (on the event loop)
        issue = self._known[key] = self._match_text(message, stack)
        return issue

    def match_ahead(self, texts: Iterable[tuple[str | None, str | None]]) -> None:
        """Blocking (call it in a worker thread): match the patterns against these (message, stack) of
        the failures a write will stamp, in order, within the budget. Afterwards ``match`` runs no
        pattern: a text not matched here matches no pattern."""
        for message, stack in texts:
            key = (message, stack)
            if key in self._known:
                continue
            if self.by_fingerprint and fingerprints.fingerprint(message, stack) in self.by_fingerprint:
                continue  # its fingerprint names an issue, which wins over any pattern
            self._known[key] = self._match_text(message, stack)
        self._settled = True

    def _pattern_set(self) -> tuple[PatternSet, list[Row]]:
        if self._patterns is None:
            usable = [issue for issue in self._with_pattern if acceptable(issue["pattern"])]
            usable = usable[:MAX_PATTERNS_PER_PROJECT]
            self._patterns = PatternSet([issue["pattern"] for issue in usable]), usable
        return self._patterns

    def _match_text(self, message: str | None, stack: str | None) -> Row | None:
        if self._spent >= self._budget:
            self._skipped()
            return None
        started = time.perf_counter()
        try:
            patterns, issues = self._pattern_set()
            index = patterns.first_match(subject(message, stack), started + self._budget - self._spent)
        except OverBudget:
            self._skipped()
            return None
        finally:
            self._spent += time.perf_counter() - started
        return None if index is None else issues[index]

    def _skipped(self) -> None:
        if not self.over_budget:
            log.warning("known-issue patterns %s: matching budget of %.1f s spent; failures from here on keep "
                        "no known-issue bug", self._where, self._budget)
        self.over_budget += 1


async def matcher_for(db: Database | Transaction, tenant_id: str, project_id: str) -> Matcher:
    return Matcher(await store.open_for_project(db, tenant_id, project_id),
                   where=f"of tenant {tenant_id} project {project_id}")


async def match_ahead(matcher: Matcher, texts: Iterable[tuple[str | None, str | None]]) -> None:
    """Matches the patterns against the (message, stack) of the failures a write will stamp, in a
    worker thread (RE2 releases the GIL as it searches: the event loop keeps serving); ``texts`` is
    consumed there too, so a lazy one costs the loop nothing. Call it before the write transaction, so
    that neither the loop nor the write lock waits for patterns."""
    if matcher.has_patterns:
        await asyncio.to_thread(matcher.match_ahead, texts)
    else:
        matcher.match_ahead(())


def _refuse_empty(fingerprint: str | None) -> None:
    if fingerprint == fingerprints.EMPTY:
        raise InvalidInput(
            "fingerprint refused: it is the fingerprint of a failure without any message or stack (or a "
            "manual failure without a failed step or note), which names no cause: as a known issue it would "
            "take every such failure. Link the bug on the result, or give a pattern", field="fingerprint")


def _check(fingerprint: str | None, pattern: str | None) -> None:
    if fingerprint is None and pattern is None:
        raise InvalidInput("give a fingerprint or a pattern (or both)", field="fingerprint")
    if pattern is not None:
        compile_pattern(pattern)


async def _check_pattern_room(tx: Transaction, tenant_id: str, project_id: str) -> None:
    """Under the write lock: one more open known issue with a pattern still fits the project."""
    if await store.count_open_patterns(tx, tenant_id, project_id) >= MAX_PATTERNS_PER_PROJECT:
        raise InvalidInput(
            f"pattern refused: a project holds at most {MAX_PATTERNS_PER_PROJECT:,} open known issues with a "
            "pattern and this one has them all; close or delete one, or match by fingerprint", field="pattern")


async def create(db: Database, tenant_id: str, body: KnownIssueCreate, *, run_id: str | None = None) -> KnownIssue:
    """Creates an open known issue. With a fingerprint, the failures of that fingerprint in ``run_id``
    (default: the last run of the project that had it) that name no bug get this one."""
    _check(body.fingerprint, body.pattern)
    _refuse_empty(body.fingerprint)
    await require_project(db, tenant_id, body.project_id)
    issue_id, now = new_id(), now_iso()
    row = {"id": issue_id, "tenant_id": tenant_id, "project_id": body.project_id, "fingerprint": body.fingerprint,
           "pattern": body.pattern, "bug_ticket_key": body.bug_ticket_key.strip(),
           "bug_ticket_url": body.bug_ticket_url, "note": body.note, "created_at": now}
    if not row["bug_ticket_key"]:
        raise InvalidInput("bug_ticket_key must not be blank", field="bug_ticket_key")
    async with db.transaction() as tx:
        await require_project(tx, tenant_id, body.project_id)
        if body.pattern is not None:
            await _check_pattern_room(tx, tenant_id, body.project_id)
        await store.insert(tx, row)
        linked = 0
        if body.fingerprint:
            target = run_id or await failure_store.last_run_of(tx, tenant_id, body.project_id, body.fingerprint)
            if target:
                linked = await failure_store.link_bug(tx, tenant_id, target, body.fingerprint,
                                                      row["bug_ticket_key"], body.bug_ticket_url)
        await audit.record(tx, tenant_id, "known_issue.created", "known_issue", issue_id,
                           {"bug_ticket_key": row["bug_ticket_key"], "fingerprint": body.fingerprint,
                            "pattern": body.pattern, "results_linked": linked})
        stored = await store.get(tx, tenant_id, issue_id)
    assert stored is not None
    return to_model(stored)


async def get(db: Database, tenant_id: str, issue_id: str) -> KnownIssue:
    row = await store.get(db, tenant_id, issue_id)
    if row is None:
        raise NotFound(f"known issue {issue_id} not found")
    return to_model(row)


async def list_issues(db: Database, tenant_id: str, *, project_id: str | None = None, status: str | None = None,
                      limit: int | None = None, offset: int | None = None) -> tuple[list[KnownIssue], Pagination]:
    limit, offset = page_window(limit, offset)
    check_choice(status, ("OPEN", "CLOSED"), "status")
    rows, total = await store.page(db, tenant_id, project_id=project_id, status=status, limit=limit, offset=offset)
    return [to_model(row) for row in rows], Pagination(total=total, limit=limit, offset=offset)


async def update(db: Database, tenant_id: str, issue_id: str, body: KnownIssueUpdate) -> KnownIssue:
    changes: dict[str, Any] = {f: getattr(body, f) for f in FIELDS if getattr(body, f) is not msgspec.UNSET}
    _refuse_empty(changes.get("fingerprint"))
    if "bug_ticket_key" in changes:
        changes["bug_ticket_key"] = changes["bug_ticket_key"].strip()
        if not changes["bug_ticket_key"]:
            raise InvalidInput("bug_ticket_key must not be blank", field="bug_ticket_key")
    async with db.transaction() as tx:
        old = await store.get(tx, tenant_id, issue_id)
        if old is None:
            raise NotFound(f"known issue {issue_id} not found")
        merged = {**old, **changes}
        _check(merged["fingerprint"], merged["pattern"])
        counted = bool(old["pattern"]) and old["status"] == "OPEN"
        if merged["pattern"] and merged["status"] == "OPEN" and not counted:
            await _check_pattern_room(tx, tenant_id, old["project_id"])
        diff = audit.changes_between(old, merged, FIELDS)
        if diff:
            now = now_iso()
            if "status" in diff:
                changes["closed_at"] = now if merged["status"] == "CLOSED" else None
            await store.update(tx, tenant_id, issue_id, {**changes, "updated_at": now})
            await audit.record(tx, tenant_id, "known_issue.updated", "known_issue", issue_id, diff)
        row = await store.get(tx, tenant_id, issue_id)
    assert row is not None
    return to_model(row)


async def delete(db: Database, tenant_id: str, issue_id: str) -> None:
    async with db.transaction() as tx:
        old = await store.get(tx, tenant_id, issue_id)
        if old is None or not await store.delete(tx, tenant_id, issue_id):
            raise NotFound(f"known issue {issue_id} not found")
        await audit.record(tx, tenant_id, "known_issue.deleted", "known_issue", issue_id,
                           {"bug_ticket_key": old["bug_ticket_key"]})


async def close_for_bug(tx: Transaction, db: Database, tenant_id: str, keys: list[str], bug_key: str | None) -> int:
    """The tracker loop resolved a bug: close its open known issues, and flag for retest the cases that
    failed with their fingerprints in the last run that had each. Returns how many were closed."""
    issues = await store.open_with_bug_keys(tx, tenant_id, keys)
    if not issues:
        return 0
    at = now_iso()
    await store.close(tx, tenant_id, [issue["id"] for issue in issues], at)
    case_ids: list[str] = []
    for issue in issues:
        if issue["fingerprint"]:
            run_id = await failure_store.last_run_of(tx, tenant_id, issue["project_id"], issue["fingerprint"])
            if run_id:
                case_ids += await failure_store.cases_failing_with(tx, tenant_id, run_id, issue["fingerprint"])
    if case_ids:
        await retest.flag_for_retest(tx, db, tenant_id, case_ids, f"bug {bug_key} resolved", bug_key, at)
    await audit.record_many(tx, tenant_id, [
        audit.Entry("known_issue.closed", "known_issue", issue["id"], {"status": ["OPEN", "CLOSED"],
                                                                        "bug_ticket_key": bug_key})
        for issue in issues
    ])
    return len(issues)
