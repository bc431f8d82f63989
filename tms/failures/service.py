"""A run's failures grouped by fingerprint, two runs compared, and the write-time work of every write of
results: fingerprints, known-issue bug links, and the per-project first-seen and daily tables.

"new" is one primary-key lookup per cluster in ``failure_fingerprints`` (first_run_id is this run and no
known issue explains it), never a scan of the project's history.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import msgspec

from tms.db import Database, Row, Transaction
from tms.errors import NotFound
from tms.failures import fingerprints, store
from tms.failures.flaky import service as flaky
from tms.failures.known_issues.service import Matcher, matcher_for, to_model
from tms.failures.models import Cluster, ClusterResult, CompareItem, Comparison
from tms.failures.quarantine import store as quarantine_store
from tms.failures.quarantine.service import active as active_quarantine
from tms.ids import iso_days_ago, now_iso
from tms.library.cases.service import find_case_row
from tms.library.gherkin.service import checklist_page, off_loop
from tms.library.shared_steps import service as shared_steps
from tms.runs import service as run_service
from tms.runs.statuses import FAILING

# ---- write time ------------------------------------------------------------------------------------

@dataclass(slots=True)
class Stamper:
    """Stamps the rows of one write of results: fingerprint, and the bug of a matching known issue when
    the result names none. Collects what ``record`` writes to the first-seen and daily tables."""

    matcher: Matcher
    seen: dict[str, tuple[int, str | None]] = field(default_factory=dict)

    def stamp(self, status: str, message: str | None, stack: str | None, bug_key: str | None,
              bug_url: str | None) -> tuple[str | None, str | None, str | None]:
        """(fingerprint, bug_ticket_key, bug_ticket_url) to store for one result."""
        if status not in FAILING:
            return None, bug_key, bug_url
        return self.stamp_as(fingerprints.fingerprint(message, stack), message, stack, bug_key, bug_url)

    def stamp_as(self, fingerprint: str, message: str | None, stack: str | None, bug_key: str | None,
                 bug_url: str | None, *, seen: bool = True) -> tuple[str | None, str | None, str | None]:
        """``stamp`` of a failure whose fingerprint is known; ``seen=False`` leaves it out of the first-seen
        and daily tables (a manual failure). EMPTY (a failure that says nothing) is never recorded: it
        names no cause to be first seen or counted."""
        if seen and fingerprint != fingerprints.EMPTY:
            count, first_message = self.seen.get(fingerprint, (0, message))
            self.seen[fingerprint] = (count + 1, first_message)
        if bug_key is None and self.matcher:
            issue = self.matcher.match(fingerprint, message, stack)
            if issue is not None:
                return fingerprint, issue["bug_ticket_key"], bug_url or issue["bug_ticket_url"]
        return fingerprint, bug_key, bug_url


async def stamper_for(db: Database | Transaction, tenant_id: str, project_id: str) -> Stamper:
    return Stamper(await matcher_for(db, tenant_id, project_id))


async def record(tx: Transaction, tenant_id: str, project_id: str, run_id: str, at: str, stamper: Stamper) -> None:
    """In the write's transaction: first/last seen per fingerprint and today's counts (one row each)."""
    await store.record_fingerprints(tx, tenant_id, project_id, run_id, at, stamper.seen)


@dataclass(frozen=True, slots=True)
class ManualFailure:
    """What a tester wrote about one result executed by hand: its case, its step results (as stored: a
    JSON array of ``{index, status, comment?}``) and its comment."""

    case_id: str | None
    step_results: str | None
    comment: str | None


_steps_decoder = msgspec.json.Decoder(list[dict[str, Any]])


@lru_cache(maxsize=256)
def _step_text(text: str, index: int) -> str | None:
    """"Keyword text" of step ``index`` (1-based) of the case's checklist; None when it has no such step.
    Remembered: a tester saves the steps of one case again and again."""
    for group in checklist_page(text, index, 1).groups:
        for step in group.steps:
            if step.index == index:
                return f"{step.keyword} {step.text}"
    return None


async def _failed_step(db: Database | Transaction, tenant_id: str, manual: ManualFailure
                       ) -> tuple[str | None, str | None]:
    """(text of the first failed or broken step, the tester's note on it) of a manual result."""
    try:
        steps = _steps_decoder.decode(manual.step_results) if manual.step_results else []
    except msgspec.DecodeError:
        steps = []
    failed = sorted((s for s in steps if s.get("status") in FAILING and isinstance(s.get("index"), int)),
                    key=lambda s: int(s["index"]))
    if not failed:
        return None, None
    index, note = int(failed[0]["index"]), failed[0].get("comment")
    case = None if manual.case_id is None else await find_case_row(db, tenant_id, manual.case_id)
    text = None if case is None else await shared_steps.expanded_case_text(db, tenant_id, case["project_id"],
                                                                            case["bdd_content"])
    step = None if not text else await off_loop(text, _step_text, text, index)
    # a step the case no longer has (edited since): still this case's step, never another case's
    return step or f"step {index} of {manual.case_id}", note if isinstance(note, str) else None


async def stamp_one(db: Database | Transaction, tenant_id: str, stamper: Stamper, status: str,
                    message: str | None, stack: str | None, bug_key: str | None, bug_url: str | None,
                    *, manual: ManualFailure | None = None) -> tuple[str | None, str | None, str | None]:
    """``stamper.stamp`` of one result written alone. ``manual`` (the result's source is manual: a tester
    set it) fingerprints a failure by its failed step and note (``fingerprints.of_manual``), by its error
    text when the tester wrote neither, and leaves it out of ``stamper.seen``: the first-seen and daily
    tables (``new``, the top clusters) are about automated results. Known-issue patterns read the error
    text, as for any result (a matcher matched ahead has matched exactly that)."""
    if manual is None or status not in FAILING:
        return stamper.stamp(status, message, stack, bug_key, bug_url)
    step, note = await _failed_step(db, tenant_id, manual)
    fingerprint = fingerprints.of_manual(step, note, manual.comment)
    if fingerprint == fingerprints.EMPTY:
        fingerprint = fingerprints.fingerprint(message, stack)
    return stamper.stamp_as(fingerprint, message, stack, bug_key, bug_url, seen=False)


async def restamp_one(tx: Transaction, tenant_id: str, project_id: str, run_id: str, status: str,
                      message: str | None, stack: str | None, bug_key: str | None, bug_url: str | None,
                      *, manual: ManualFailure | None = None) -> tuple[str | None, str | None, str | None]:
    """For a write of one result (PATCH of a result's status): (fingerprint, bug key, bug URL) to store,
    with the first-seen and daily tables updated in the caller's transaction when it fails (never for a
    ``manual`` one: see ``stamp_one``)."""
    stamper = await stamper_for(tx, tenant_id, project_id)
    stamp = await stamp_one(tx, tenant_id, stamper, status, message, stack, bug_key, bug_url, manual=manual)
    await record(tx, tenant_id, project_id, run_id, now_iso(), stamper)
    return stamp


# ---- reads ----------------------------------------------------------------------------------------

async def _run(db: Database, tenant_id: str, run_id: str) -> Row:
    run = await run_service.run_row(db, tenant_id, run_id)
    if run is None:
        raise NotFound(f"run {run_id} not found")
    return run


async def fingerprint_messages(db: Database, tenant_id: str, project_id: str, fingerprints: list[str]
                               ) -> dict[str, str]:
    """fingerprint -> the first message seen with it: a known issue reads as its failure, not its hash."""
    rows = await store.first_seen(db, tenant_id, project_id, [f for f in fingerprints if f])
    return {fingerprint: row["error_message"] or "" for fingerprint, row in rows.items()}


async def clusters(db: Database, tenant_id: str, run_id: str) -> list[Cluster]:
    """The run's FAILED and BROKEN results grouped by fingerprint, largest cluster first.

    A failure that says nothing (fingerprint EMPTY) forms no cluster: it is listed alone, and it is
    ``new`` when its test was not failing in the run's default comparison base (``previous_run``), the
    only "seen before" such a failure has."""
    run = await _run(db, tenant_id, run_id)
    rows = await store.run_failures(db, tenant_id, run_id)
    groups: dict[str, list[Row]] = {}
    alone: list[Row] = []
    for row in rows:
        if row["fingerprint"] == fingerprints.EMPTY:
            alone.append(row)
        else:
            groups.setdefault(row["fingerprint"], []).append(row)
    if not rows:
        return []
    project_id = run["project_id"]
    seen = await store.first_seen(db, tenant_id, project_id, list(groups))
    matcher = await matcher_for(db, tenant_id, project_id)
    quarantined = await active_quarantine(db, tenant_id, project_id)
    representatives = {fp: members[0] for fp, members in groups.items()}
    stacks = await store.stacks_of(db, tenant_id, [row["id"] for row in representatives.values()])

    def members_of(members: list[Row]) -> list[ClusterResult]:
        return [ClusterResult(id=r["id"], test_case_code=r["test_case_code"], title=r["title"],
                              quarantined=(r["test_case_code"], r["title"]) in quarantined) for r in members]

    answer = []
    for fp, members in groups.items():
        first = representatives[fp]
        stack = stacks.get(first["id"])
        issue = matcher.match(fp, first["error_message"], stack) if matcher else None
        origin = seen.get(fp)
        answer.append(Cluster(
            fingerprint=fp,
            error_message=first["error_message"],
            count=len(members),
            results=members_of(members),
            first_seen_at=None if origin is None else origin["first_seen_at"],
            new=issue is None and (origin is None or origin["first_run_id"] == run_id),
            known_issue=None if issue is None else to_model(issue),
            error_stack=stack,
            first_run_id=None if origin is None else origin["first_run_id"],
        ))
    answer.sort(key=lambda c: (-c.count, c.fingerprint))
    if alone:
        base = await store.previous_run(db, tenant_id, run)
        failing = set() if base is None else await store.failing_in(db, tenant_id, base["id"], alone)
        for row in alone:
            issue = matcher.match(fingerprints.EMPTY, row["error_message"], None) if matcher else None
            answer.append(Cluster(
                fingerprint=fingerprints.EMPTY, error_message=row["error_message"], count=1,
                results=members_of([row]), first_seen_at=None,
                new=issue is None and _test_key(row) not in failing,
                known_issue=None if issue is None else to_model(issue), error_stack=None, first_run_id=None,
            ))
    return answer


def _test_key(row: Row) -> tuple[str | None, str | None]:
    """A test as comparisons match it: a linked one by its case code, an unlinked one by its title."""
    return (row["test_case_code"], None) if row["test_case_code"] else (None, row["title"])


async def compare(db: Database, tenant_id: str, run_id: str, base_id: str | None = None) -> Comparison:
    """New failures, fixed, still failing, added and missing tests of ``run_id`` against ``base_id``
    (default: the previous run of the same project and environment). A base of another project or
    tenant is not found (404).

    Each test is in one list at most: a test only in this run is ``added`` (whatever its status, shown
    beside it), only in the base ``missing``; the others are a new failure, fixed, still failing, or in
    no list (passing or skipped in both, or a change no list names)."""
    run = await _run(db, tenant_id, run_id)
    if base_id:
        base = await run_service.run_row(db, tenant_id, base_id)
        if base is None or base["project_id"] != run["project_id"]:
            raise NotFound(f"run {base_id} not found in this run's project", field="base")
    else:
        base = await store.previous_run(db, tenant_id, run)
    result = Comparison(base_run_id=None if base is None else base["id"], new_failures=[], fixed=[],
                        still_failing=[], added=[], missing=[])
    status: str | None  # a missing test has none in this run
    if base is None:  # nothing to compare with: every test is added
        for code, title, status in await store.run_outcomes(db, tenant_id, run_id):
            result.added.append(CompareItem(test_case_code=code, title=title, status=status, base_status=None))
        return result
    for kind, code, title, status, base_status in await store.compare_runs(db, tenant_id, run_id, base["id"]):
        item = CompareItem(test_case_code=code, title=title, status=status, base_status=base_status)
        if kind == "missing":
            result.missing.append(item)
        elif kind == "added":
            result.added.append(item)
        elif status in FAILING:
            (result.still_failing if base_status in FAILING else result.new_failures).append(item)
        elif status == "PASSED" and base_status in FAILING:
            result.fixed.append(item)
    return result


async def base_candidates(db: Database, tenant_id: str, run_id: str, limit: int = 20) -> tuple[list[Row], list[Row]]:
    """The runs a comparison of ``run_id`` may take as its base, newest first: up to ``limit`` of the
    same environment, then up to ``limit`` of the project's others (the compare page's picker)."""
    run = await _run(db, tenant_id, run_id)
    return await store.base_candidates(db, tenant_id, run, limit)


# ---- dashboard ------------------------------------------------------------------------------------

@dataclass(slots=True)
class FailurePanel:
    """The dashboard's failure figures, each from an index or a roll-up: the latest run's clusters
    (partial index + first-seen keys), the daily roll-up of the last 30 days, the flaky candidates of
    the last runs, the active quarantine entries."""

    latest_run: Row | None
    new_clusters: list[Cluster]
    top_clusters: list[Row]
    flakiest: list[Any]
    quarantined: int


async def panel(db: Database, tenant_id: str, project_id: str, *, flaky_runs: int = 30, limit: int = 5
                ) -> FailurePanel:
    latest = await store.last_runs(db, tenant_id, project_id, 1)
    latest_run = await run_service.run_row(db, tenant_id, latest[0]) if latest else None
    new = [c for c in await clusters(db, tenant_id, latest[0]) if c.new] if latest else []
    top = await store.top_fingerprints(db, tenant_id, project_id, iso_days_ago(30)[:10], limit)
    window = await flaky.dashboard_window.compute(db, tenant_id, project_id, flaky_runs)
    flakiest = [test for test, _ in window[:limit]]
    quarantined = await quarantine_store.count_active(db, tenant_id, project_id, now_iso())
    return FailurePanel(latest_run, new, top, flakiest, quarantined)
