"""Flaky tests: how often a test's outcome flips over the last N runs of its project, plus the reporter's
evidence of passing only on a retry; and the automation status that follows from it.

Over the runs a test appears in (oldest first, SKIPPED and UNKNOWN left out), a *flip* is a change
between passing and failing (FAILED or BROKEN) from one run to the next, and a run where it passed only
on a retry counts as a flip inside that run:

    flip_rate = (flips + passes on retry) / (runs - 1 + passes on retry)

A linked case with a verdict in at least 5 of the runs whose flip rate reaches ``[flaky] threshold``
(over ``[flaky] runs`` runs) moves to
automation status FLAKY; a FLAKY case whose flip rate falls below half the threshold moves back to
AUTOMATED. Each move is audited (``case.flaky_detected`` / ``case.flaky_cleared``), records a new version of
the case (by the system actor) and fires the outbox event ``test_case.flaky_changed``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from typing import Any

from tms.db import Database, Row, Transaction
from tms.errors import InvalidInput
from tms.failures import store as failure_store
from tms.failures.flaky import store
from tms.failures.flaky.models import FlakyTest
from tms.failures.quarantine.service import active as active_quarantine
from tms.http.paging import page_window
from tms.ids import now_iso
from tms.library.cases.models import Pagination
from tms.library.cases.service import record_versions
from tms.notifications import events
from tms.runs.service import require_project
from tms.team.audit import service as audit

log = logging.getLogger(__name__)

PASSING = "PASSED"
MAX_RUNS = 200
# a case is judged only once it has a verdict (passed, failed or broken) in this many runs of the window:
# two runs, one red one green, say little
MIN_VERDICTS = 5
# the automation statuses a flaky move may change into FLAKY: never MANUAL (nor ARCHIVED, nor FLAKY itself)
MOVABLE = frozenset(("AUTOMATED", "IN_PROGRESS"))


# An outcome is one letter (tms.failures.store): F failed, B broken, S skipped, U unknown, P passed, R passed
# only on a retry; "-" marks a run that does not hold the test.
_STATUS = {"F": "FAILED", "B": "BROKEN", "S": "SKIPPED", "U": "UNKNOWN", "P": "PASSED", "R": "PASSED"}
_UNDECIDED = str.maketrans("", "", "-SU")
_AS_PASS_OR_FAIL = str.maketrans("RB", "PF")


def judge(parts: list[str], last: str, code: str | None, title: str | None) -> FlakyTest | None:
    """The FlakyTest of one test, or None when it does not flip-flop.

    ``parts`` holds its outcomes in run order, one string per environment (one letter each; "-" for a
    run that does not hold it), ``last`` its latest outcome in any. Flips are counted within each
    environment: a test passing on staging and failing in production is not flipping. It flip-flops when
    in some environment it changed at least twice (a test that changed once and stayed changed is a
    regression or a fix), or when it passed on a retry; and it is judged only once it has a verdict in
    ``MIN_VERDICTS`` runs, but for a pass on a retry (the reporter saw it flip inside one run).
    String operations only: they run in C, whatever the window."""
    flips = retried = pairs = decided_runs = passes = present = 0
    flip_flops = False
    for part in parts:
        present += len(part) - part.count("-")
        decided = part.translate(_UNDECIDED)
        if not decided:
            continue
        verdicts = decided.translate(_AS_PASS_OR_FAIL)
        # "PF" and "FP" cannot overlap themselves: their counts are the changes between neighbours
        changes = verdicts.count("PF") + verdicts.count("FP")
        flip_flops = flip_flops or changes >= 2
        flips += changes
        retried += decided.count("R")
        pairs += len(decided) - 1
        decided_runs += len(decided)
        passes += verdicts.count("P")
    if not retried and (not flip_flops or decided_runs < MIN_VERDICTS):
        return None
    return FlakyTest(
        test_case_code=code, title=title, flip_rate=round((flips + retried) / max(1, pairs + retried), 4),
        passes=passes, failures=decided_runs - passes, runs=present, last_status=_STATUS[last],
        quarantined=False, passed_on_retry=retried,
    )


def linked_history(absent: str, marks: str) -> str:
    """A linked test's outcomes: ``absent`` ("P" for each run holding it, "-" for the others) with its
    marks (``"<pos><letter>,..."``) put in."""
    letters = list(absent)
    for mark in marks.split(","):
        letters[int(mark[:-1])] = mark[-1]
    return "".join(letters)


def split_linked(history: str, groups: list[list[int]] | None) -> tuple[list[str], str]:
    """(one outcome string per environment, the latest outcome) of a linked test's history."""
    last = history.rstrip("-")[-1:] or "U"
    if groups is None:
        return [history], last
    return ["".join(map(history.__getitem__, positions)) for positions in groups], last


def split_unlinked(outcomes: str, environment_of: list[int] | None) -> tuple[list[str], str]:
    """(one outcome string per environment, the latest outcome) of an unlinked test's outcomes
    (``"<pos><letter>,..."``, possibly several in one run)."""
    ordered = sorted((int(o[:-1]), o[-1]) for o in outcomes.split(","))
    last = ordered[-1][1]
    if environment_of is None:
        return ["".join(letter for _, letter in ordered)], last
    parts: dict[int, list[str]] = {}
    for pos, letter in ordered:
        parts.setdefault(environment_of[pos], []).append(letter)
    return ["".join(letters) for letters in parts.values()], last


def environments(window: list[Row]) -> tuple[list[list[int]] | None, list[int] | None]:
    """The positions (0 = oldest) of the window's runs per environment, and each position's group; both
    None when every run is of one environment (nothing to split)."""
    groups: dict[str | None, list[int]] = {}
    for pos, run in enumerate(window):
        groups.setdefault(run["environment"], []).append(pos)
    if len(groups) < 2:
        return None, None
    environment_of = [0] * len(window)
    for number, positions in enumerate(groups.values()):
        for pos in positions:
            environment_of[pos] = number
    return list(groups.values()), environment_of


def _order(pair: tuple[FlakyTest, str | None]) -> tuple[float, int, str, str]:
    test = pair[0]
    return -test.flip_rate, -test.failures, test.test_case_code or "", test.title or ""


class _WindowCache:
    """The dashboard's flakiest tests per project, while the window of runs they come from is unchanged.

    The key is the window itself: its runs' ids and updated_at (every write of results moves its run's
    updated_at), so a new run or a changed result recomputes at the next load; the TTL bounds what a
    write that leaves updated_at alone could hide. Per process: each replica keeps its own.
    """

    TTL_SECONDS = 30.0
    MAX_ENTRIES = 1_000

    def __init__(self) -> None:
        self._entries: dict[tuple[Any, ...], tuple[float, list[tuple[FlakyTest, str | None]]]] = {}

    async def compute(self, db: Database, tenant_id: str, project_id: str, runs: int
                      ) -> list[tuple[FlakyTest, str | None]]:
        window = await failure_store.run_window(db, tenant_id, project_id, runs)
        key = (tenant_id, project_id, runs, tuple((row["id"], row["updated_at"]) for row in window))
        entry = self._entries.get(key)
        if entry is not None and entry[0] > time.monotonic():
            return entry[1]
        found = await compute(db, tenant_id, project_id, runs)
        if len(self._entries) >= self.MAX_ENTRIES:
            self._entries.clear()
        self._entries[key] = (time.monotonic() + self.TTL_SECONDS, found)
        return found


dashboard_window = _WindowCache()


async def compute(db: Database, tenant_id: str, project_id: str, runs: int, *, linked_only: bool = False
                  ) -> list[tuple[FlakyTest, str | None]]:
    """(FlakyTest without quarantine, case id or None) of every test that flipped or passed on a retry
    in the project's last ``runs`` runs, highest flip rate first."""
    window = list(reversed(await failure_store.run_window(db, tenant_id, project_id, runs)))
    run_ids = [run["id"] for run in window]
    groups, environment_of = environments(window)
    found: list[tuple[FlakyTest, str | None]] = []
    judged: list[tuple[int, str, FlakyTest]] = []
    candidates, held = await failure_store.flaky_linked(db, tenant_id, run_ids)
    # the runs holding each candidate: in most projects every run holds every candidate; the others are
    # asked which they lack
    rows = {row["key"]: ["P"] * len(run_ids) for row in candidates}
    partial = [run_ids[run["pos"]] for run in held if run["held"] < len(candidates)]
    if partial:
        position = {run_id: i for i, run_id in enumerate(run_ids)}
        for gap in await failure_store.absences(db, tenant_id, partial, list(rows)):
            rows[gap["key"]][position[gap["run_id"]]] = "-"
    for row in candidates:
        parts, last = split_linked(linked_history("".join(rows[row["key"]]), row["marks"]), groups)
        test = judge(parts, last, None, None)
        if test is not None:
            judged.append((row["rid"], row["key"], test))
    names = await failure_store.result_names(db, tenant_id, [rid for rid, _, _ in judged])
    for rid, case_id, test in judged:
        name = names.get(rid)
        if name is not None:
            test.test_case_code, test.title = name["test_case_code"], name["title"]
        found.append((test, case_id))
    if not linked_only:  # the automation status concerns cases only: its evaluation leaves these out
        for row in await failure_store.flaky_unlinked(db, tenant_id, run_ids):
            parts, last = split_unlinked(row["outcomes"], environment_of)
            test = judge(parts, last, None, row["key"])
            if test is not None:
                found.append((test, None))
    found.sort(key=_order)
    return found


async def list_flaky(db: Database, tenant_id: str, project_id: str | None, runs: int | None, limit: int | None,
                     offset: int | None, default_runs: int = 30) -> tuple[list[FlakyTest], Pagination]:
    if not project_id:
        raise InvalidInput("project_id is required", field="project_id")
    runs = default_runs if runs is None else runs
    if not 2 <= runs <= MAX_RUNS:
        raise InvalidInput(f"runs must be between 2 and {MAX_RUNS}", field="runs")
    limit, offset = page_window(limit, offset)
    await require_project(db, tenant_id, project_id)
    found = await compute(db, tenant_id, project_id, runs)
    quarantined = await active_quarantine(db, tenant_id, project_id)
    page = [test for test, _ in found[offset:offset + limit]]
    for test in page:
        test.quarantined = (test.test_case_code, test.title) in quarantined
    return page, Pagination(total=len(found), limit=limit, offset=offset)


async def evaluate(db: Database, tenant_id: str, project_id: str, threshold: float, runs: int) -> dict[str, int]:
    """Moves the project's linked cases between AUTOMATED and FLAKY by their flip rate; one transaction,
    each move audited and evented. Returns {"flaky": n, "stable": n}."""
    found = await compute(db, tenant_id, project_id, runs, linked_only=True)
    rates = {case_id: test.flip_rate for test, case_id in found if case_id}
    to_flaky = [case_id for test, case_id in found
                if case_id and test.flip_rate >= threshold and test.passes + test.failures >= MIN_VERDICTS]
    async with db.transaction() as tx:
        current = await store.flaky_cases(tx, tenant_id, project_id)
        flaky_now = {row["id"] for row in current}
        candidates = await store.cases_by_id(tx, tenant_id, [c for c in to_flaky if c not in flaky_now])
        # a MANUAL case is run by hand: what automated results say never changes it (nor an ARCHIVED one)
        moving_in = [row for row in candidates if row["automation_status"] in MOVABLE]
        moving_out = [row for row in current if rates.get(row["id"], 0.0) < threshold / 2]
        if not moving_in and not moving_out:
            return {"flaky": 0, "stable": 0}
        at = now_iso()
        await store.set_status(tx, tenant_id, [row["id"] for row in moving_in], "FLAKY", at)
        await store.set_status(tx, tenant_id, [row["id"] for row in moving_out], "AUTOMATED", at)
        # each moved case gets a version, as any other write of a case does (its history shows the move)
        await record_versions(tx, tenant_id, [row["id"] for row in (*moving_in, *moving_out)], at)
        entries, data = [], []
        for rows, new_status, action in ((moving_in, "FLAKY", "case.flaky_detected"),
                                         (moving_out, "AUTOMATED", "case.flaky_cleared")):
            for row in rows:
                rate = rates.get(row["id"], 0.0)
                entries.append(audit.Entry(action, "case", row["id"], {
                    "automation_status": [row["automation_status"], new_status], "flip_rate": rate}))
                data.append(_event(row, project_id, row["automation_status"], new_status, rate, runs, at))
        await audit.record_many(tx, tenant_id, entries)
        await events.emit_many(tx, db, tenant_id, "test_case.flaky_changed", data)
    return {"flaky": len(moving_in), "stable": len(moving_out)}


def _event(row: Row, project_id: str, old: str, new: str, rate: float, runs: int, at: str) -> dict[str, Any]:
    return {"test_case_id": row["id"], "test_case_code": row["code"], "project_id": project_id,
            "automation_status": new, "previous_automation_status": old, "flip_rate": rate, "runs": runs,
            "changed_at": at}


class FlakyWatcher:
    """Re-evaluates a project's flaky cases after its results change, off the request path: a write
    asks for it (``touch``), one task per project runs it ``delay`` seconds later, and every ask made
    until then (a burst of CI shards, a fleet of pipelines) folds into that one evaluation, so a
    project is evaluated at most once per ``delay`` however fast results arrive."""

    def __init__(self, db: Database, threshold: float, runs: int, delay: float = 2.0) -> None:
        self.db, self.threshold, self.runs, self.delay = db, threshold, runs, delay
        self._running: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._again: set[tuple[str, str]] = set()
        self._flushing = asyncio.Event()  # set by ``idle``: evaluate now, no more waiting for more asks

    def touch(self, tenant_id: str, project_id: str) -> None:
        key = (tenant_id, project_id)
        if key in self._running:
            self._again.add(key)
            return
        self._running[key] = asyncio.get_running_loop().create_task(self._run(key))

    async def _run(self, key: tuple[str, str]) -> None:
        # the task copied the context of the write that asked for it: the moves are the detector's own,
        # so its audit entries and case versions name the system, not that write's token or user
        audit.acting_as(audit.SYSTEM)
        try:
            while True:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._flushing.wait(), self.delay)
                self._again.discard(key)
                try:
                    await evaluate(self.db, key[0], key[1], self.threshold, self.runs)
                except Exception:
                    log.exception("flaky evaluation of project %s failed", key[1])
                if key not in self._again:
                    break
        finally:
            self._running.pop(key, None)

    async def idle(self) -> None:
        """Runs every evaluation asked for now, without its delay, and waits for them (shutdown: a
        server stopped within ``delay`` of a write used to wait out the rest of it, ~2 s a stop)."""
        self._flushing.set()
        try:
            while self._running:
                await asyncio.gather(*self._running.values(), return_exceptions=True)
        finally:
            self._flushing.clear()


def watch(db: Database, threshold: float, runs: int) -> FlakyWatcher:
    """A watcher told of every write of results on ``db`` (through ``db.results_written``)."""
    watcher = FlakyWatcher(db, threshold, runs)
    db.results_written.append(watcher.touch)
    return watcher


def touch_after_commit(tx: Transaction, db: Database, tenant_id: str, project_id: str) -> None:
    """Asks for a re-evaluation of the project's flaky cases once the write commits (never on rollback)."""
    for listener in db.results_written:
        tx.after_commit(functools.partial(listener, tenant_id, project_id))
