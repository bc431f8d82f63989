"""The dashboard of a project: recent runs, pass-rate trend, failing, flaky and unlinked, retest queue.

Read-only; every figure comes from tms.planning.dashboard.store, the runs and their unlinked results
from the runs service. The pass rate of a run is passed divided by
the results that ran to a verdict (passed + failed + broken): skipped and unknown results say nothing
about quality, so they would only dilute the trend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tms.db import Database, Row
from tms.planning.dashboard import store
from tms.runs import service as run_service
from tms.runs.models import Run

TREND_RUNS = 30
RECENT_RUNS = 12
LIST_LIMIT = 10


@dataclass
class Dashboard:
    project_id: str
    recent_runs: list[Run]           # newest first
    trend: list[tuple[Run, float | None]]  # oldest first: (run, pass rate 0..1 or None without verdicts)
    most_failing: list[Row]
    unstable: list[Row]
    flaky: list[Row]
    flaky_total: int
    unlinked_results: int
    case_count: int
    run_count: int
    retest: list[Row]
    retest_total: int

    @property
    def last_pass_rate(self) -> float | None:
        rates = [rate for _, rate in reversed(self.trend) if rate is not None]
        return rates[0] if rates else None


def pass_rate(run: Any) -> float | None:
    decided = run.counts.passed + run.counts.failed + run.counts.broken
    return run.counts.passed / decided if decided else None


async def project_dashboard(db: Database, tenant_id: str, project_id: str) -> Dashboard:
    runs = await run_service.recent_runs(db, tenant_id, project_id, TREND_RUNS)
    run_ids = [run.id for run in runs]
    flaky, flaky_total = await store.flaky_cases(db, tenant_id, project_id, LIST_LIMIT)
    failing, unstable = await store.failing_and_unstable(db, tenant_id, run_ids, LIST_LIMIT)
    retest, retest_total = await store.retest_queue(db, tenant_id, project_id, LIST_LIMIT)
    return Dashboard(
        project_id=project_id,
        recent_runs=runs[:RECENT_RUNS],
        trend=[(run, pass_rate(run)) for run in reversed(runs)],
        most_failing=failing,
        unstable=unstable,
        flaky=flaky,
        flaky_total=flaky_total,
        unlinked_results=await run_service.unlinked_count(db, tenant_id, project_id),
        case_count=await store.case_count(db, tenant_id, project_id),
        run_count=await store.run_count(db, tenant_id, project_id),
        retest=retest,
        retest_total=retest_total,
    )
