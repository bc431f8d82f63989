"""A run's failures grouped by fingerprint, two runs compared, and the write-time work of every write of
results: fingerprints, known-issue bug links, and the per-project first-seen and daily tables.

"new" is one primary-key lookup per cluster in ``failure_fingerprints`` (first_run_id is this run and no
known issue explains it), never a scan of the project's history.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tms.db import Database, Row, Transaction
from tms.errors import NotFound
from tms.failures import fingerprints, store
from tms.failures.flaky import service as flaky
from tms.failures.known_issues.service import Matcher, matcher_for, to_model
from tms.failures.models import Cluster, ClusterResult, CompareItem, Comparison
from tms.failures.quarantine import store as quarantine_store
from tms.failures.quarantine.service import active as active_quarantine
from tms.ids import iso_days_ago, now_iso
from tms.runs import store as run_store

FAILING = frozenset(("FAILED", "BROKEN"))


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
        fingerprint = fingerprints.fingerprint(message, stack)
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


async def restamp_one(tx: Transaction, tenant_id: str, project_id: str, run_id: str, status: str,
                      message: str | None, stack: str | None, bug_key: str | None, bug_url: str | None
                      ) -> tuple[str | None, str | None, str | None]:
    """For a write of one result (PATCH of a result's status): (fingerprint, bug key, bug URL) to store,
    with the first-seen and daily tables updated in the caller's transaction when it fails."""
    stamper = await stamper_for(tx, tenant_id, project_id)
    stamp = stamper.stamp(status, message, stack, bug_key, bug_url)
    await record(tx, tenant_id, project_id, run_id, now_iso(), stamper)
    return stamp


# ---- reads ----------------------------------------------------------------------------------------

async def _run(db: Database, tenant_id: str, run_id: str) -> Row:
    run = await run_store.get_run(db, tenant_id, run_id)
    if run is None:
        raise NotFound(f"run {run_id} not found")
    return run


async def clusters(db: Database, tenant_id: str, run_id: str) -> list[Cluster]:
    """The run's FAILED and BROKEN results grouped by fingerprint, largest cluster first."""
    run = await _run(db, tenant_id, run_id)
    rows = await store.run_failures(db, tenant_id, run_id)
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(row["fingerprint"], []).append(row)
    if not groups:
        return []
    project_id = run["project_id"]
    seen = await store.first_seen(db, tenant_id, project_id, list(groups))
    matcher = await matcher_for(db, tenant_id, project_id)
    quarantined = await active_quarantine(db, tenant_id, project_id)
    representatives = {fp: members[0] for fp, members in groups.items()}
    stacks = await store.stacks_of(db, tenant_id, [row["id"] for row in representatives.values()])
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
            results=[ClusterResult(id=r["id"], test_case_code=r["test_case_code"], title=r["title"],
                                   quarantined=(r["test_case_code"], r["title"]) in quarantined) for r in members],
            first_seen_at=None if origin is None else origin["first_seen_at"],
            new=issue is None and (origin is None or origin["first_run_id"] == run_id),
            known_issue=None if issue is None else to_model(issue),
            error_stack=stack,
            first_run_id=None if origin is None else origin["first_run_id"],
        ))
    answer.sort(key=lambda c: (-c.count, c.fingerprint))
    return answer


async def compare(db: Database, tenant_id: str, run_id: str, base_id: str | None = None) -> Comparison:
    """New failures, fixed, still failing, added and missing tests of ``run_id`` against ``base_id``
    (default: the previous run of the same project and environment). A base of another project or
    tenant is not found (404)."""
    run = await _run(db, tenant_id, run_id)
    if base_id:
        base = await run_store.get_run(db, tenant_id, base_id)
        if base is None or base["project_id"] != run["project_id"]:
            raise NotFound(f"run {base_id} not found in this run's project", field="base")
    else:
        base = await store.previous_run(db, tenant_id, run)
    result = Comparison(base_run_id=None if base is None else base["id"], new_failures=[], fixed=[],
                        still_failing=[], added=[], missing=[])
    status: str | None  # a missing test has none in this run
    if base is None:  # nothing to compare with: every test is added, its failures new
        for code, title, status in await store.run_outcomes(db, tenant_id, run_id):
            item = CompareItem(test_case_code=code, title=title, status=status, base_status=None)
            result.added.append(item)
            if status in FAILING:
                result.new_failures.append(item)
        return result
    for kind, code, title, status, base_status in await store.compare_runs(db, tenant_id, run_id, base["id"]):
        item = CompareItem(test_case_code=code, title=title, status=status, base_status=base_status)
        if kind == "missing":
            result.missing.append(item)
            continue
        if kind == "added":
            result.added.append(item)
        if status in FAILING:
            (result.still_failing if base_status in FAILING else result.new_failures).append(item)
        elif status == "PASSED" and base_status in FAILING:
            result.fixed.append(item)
    return result


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
    latest_run = await run_store.get_run(db, tenant_id, latest[0]) if latest else None
    new = [c for c in await clusters(db, tenant_id, latest[0]) if c.new] if latest else []
    top = await store.top_fingerprints(db, tenant_id, project_id, iso_days_ago(30)[:10], limit)
    window = await flaky.dashboard_window.compute(db, tenant_id, project_id, flaky_runs)
    flakiest = [test for test, _ in window[:limit]]
    quarantined = await quarantine_store.count_active(db, tenant_id, project_id, now_iso())
    return FailurePanel(latest_run, new, top, flakiest, quarantined)
