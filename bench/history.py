"""A long history does not slow reads or ingest down (issue 17), on SQLite or PostgreSQL.

    .venv/bin/python bench/history.py [--runs 2000] [--per-run 5000] [--requests 20]
    TMS_TEST_DATABASE=postgres .venv/bin/python bench/history.py …   # the same on a throwaway cluster

Starts a real `tms serve`, measures the ingest of 5,000 results (p50 of 10) on the empty database,
then writes ``--runs`` completed CI runs of ``--per-run`` results each (90% unlinked, 10% linked to
1,000 library cases; default 10 million rows) straight through the database seam in batches (the
backend's bulk path: executemany on SQLite, COPY on PostgreSQL), with the run counters and project
counters that ingest keeps. Then it times every page and API read of issue 17 (p50/p95 over
``--requests`` after a warm-up) and the same ingest again. Prints a Markdown table for bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.ingest import items, make_cases, percentile, time_ingests
from bench.web_pages import sign_in, time_page
from tests import postgres_cluster
from tests.conftest import ServerProcess, Tenant, make_tenant_on, run_admin
from tms.ids import new_ids

LINKED_SHARE = 10  # one result in ten is linked to a library case
BATCH_RUNS = 20
STATUSES = ("PASSED",) * 8 + ("FAILED", "SKIPPED")
UNLINKED_COLUMNS = ("id", "tenant_id", "project_id", "run_id", "title", "status", "duration_ms", "framework",
                    "error_message", "created_at", "updated_at", "passed_on_retry")
LINKED_COLUMNS = ("id", "tenant_id", "run_id", "test_case_id", "test_case_code", "title", "status", "duration_ms",
                  "framework", "error_message", "created_at", "updated_at", "passed_on_retry")
RUN_COLUMNS = ("id", "tenant_id", "project_id", "name", "environment", "status", "created_at", "updated_at",
               "completed_at", "results_total", "results_passed", "results_failed", "results_broken",
               "results_skipped", "results_unknown")


def seed_history(server: ServerProcess, tenant: Tenant, project_id: str, runs: int, per_run: int) -> float:
    """Writes the history; returns the seconds it took."""
    case_codes = make_cases(server, tenant, project_id, 1_000)

    async def write(db: Any) -> None:
        cases = await db.fetch_all(
            "SELECT id, code FROM test_cases WHERE tenant_id = ? AND project_id = ?", (tenant.id, project_id))
        linked_per_run = min(per_run // LINKED_SHARE, len(cases))
        for first in range(0, runs, BATCH_RUNS):
            run_rows, linked, unlinked = [], [], []
            for number in range(first, min(runs, first + BATCH_RUNS)):
                at = f"2025-{1 + number * 12 // max(runs, 1):02d}-01T00:00:{number % 60:02d}.000Z"
                run_id = new_ids(1)[0]
                counts = {"PASSED": 0, "FAILED": 0, "SKIPPED": 0}
                ids = new_ids(per_run)
                for k in range(per_run):
                    status = STATUSES[(k + number) % len(STATUSES)]
                    counts[status] += 1
                    error = f"AssertionError: expected 200, got 500 ({k % 7})" if status == "FAILED" else None
                    if k < linked_per_run:
                        case = cases[(k + number) % len(cases)]
                        linked.append((ids[k], tenant.id, run_id, case["id"], case["code"], None, status, 30,
                                       "pytest", error, at, at, 0))
                    else:
                        unlinked.append((ids[k], tenant.id, project_id, run_id, f"tests/test_{k % 97}.py::test_{k}",
                                         status, 30, "pytest", error, at, at, 0))
                run_rows.append((run_id, tenant.id, project_id, f"History #{number + 1}", "ci", "COMPLETED", at, at,
                                 at, per_run, counts["PASSED"], counts["FAILED"], 0, counts["SKIPPED"], 0))
            async with db.transaction() as tx:
                await tx.insert_rows("test_runs", RUN_COLUMNS, run_rows)
                await tx.insert_rows("test_results", LINKED_COLUMNS, linked)
                await tx.insert_rows("unlinked_test_results", UNLINKED_COLUMNS, unlinked)
                await tx.execute(
                    "INSERT INTO project_counters (project_id, tenant_id, unlinked_results) VALUES (?, ?, ?) "
                    "ON CONFLICT (project_id) DO UPDATE SET "
                    "unlinked_results = project_counters.unlinked_results + excluded.unlinked_results",
                    (project_id, tenant.id, len(unlinked)),
                )
            print(f"  {min(runs, first + BATCH_RUNS)}/{runs} runs", file=sys.stderr, end="\r")
        # fresh planner statistics, as the daily housekeeping keeps them
        await db.housekeeping()

    del case_codes
    started = time.perf_counter()
    run_admin(server.db_path, write)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2_000)
    parser.add_argument("--per-run", type=int, default=5_000)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--ingest-rounds", type=int, default=10)
    args = parser.parse_args()
    backend = "PostgreSQL" if postgres_cluster.selected() else "SQLite"
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        data_dir.mkdir()
        server = ServerProcess(data_dir, {}).start()
        try:
            tenant = make_tenant_on(server, "History")
            project = tenant.create_project("CI history")
            codes = make_cases(server, tenant, project["id"], 2_500)
            body = json.dumps({"project_id": project["id"], "results": items(5_000, codes)}).encode()
            api = tenant.api
            empty = time_ingests(api, body, args.ingest_rounds)
            seconds = seed_history(server, tenant, project["id"], args.runs, args.per_run)
            total = args.runs * args.per_run
            print(f"\nseeded {total:,} results in {args.runs:,} runs in {seconds:.0f} s", file=sys.stderr)
            full = time_ingests(api, body, args.ingest_rounds)
            runs = api.get("/api/v1/runs", params={"project_id": project["id"], "limit": 1}).json()["data"]
            run_id = runs[0]["id"]
            # the newest case: one of the 1,000 the history's linked results belong to
            case = api.get("/api/v1/cases", params={"project_id": project["id"], "limit": 1,
                                                    "order": "desc"}).json()["data"][0]
            web = sign_in(server, tenant.email, tenant.password)
            web.post(f"/projects/{project['id']}/activate")  # the dashboard shows the active project
            print(f"\n{backend}, {total:,} results of history ({args.runs:,} runs), "
                  f"{args.requests} requests each after a warm-up\n")
            print("| read | p50 ms | p95 ms |\n|---|---|---|")
            for name, path in [("Dashboard", "/"), ("Runs list", "/runs"), ("Runs list, page 50", "/runs?offset=1000"),
                               ("Run page", f"/runs/{run_id}"), ("Case page (with history)", f"/cases/{case['code']}")]:
                p50, p95, _ = time_page(web, path, args.requests)
                print(f"| page: {name} | {p50:.1f} | {p95:.1f} |")
            for name, path in [
                ("GET /api/v1/runs", f"/api/v1/runs?project_id={project['id']}"),
                ("GET /api/v1/runs/{id}", f"/api/v1/runs/{run_id}"),
                ("GET /api/v1/runs/{id}/results", f"/api/v1/runs/{run_id}/results?limit=500"),
                ("GET /api/v1/cases/{id}", f"/api/v1/cases/{case['id']}"),
            ]:
                p50, p95, _ = time_page(api, path, args.requests)
                print(f"| API: {name} | {p50:.1f} | {p95:.1f} |")
            empty_p50, full_p50 = percentile(empty, 0.5) * 1000, percentile(full, 0.5) * 1000
            print(f"\n| ingest 5,000 | p50 ms |\n|---|---|\n| empty database | {empty_p50:.0f} |\n"
                  f"| with the history | {full_p50:.0f} ({full_p50 / empty_p50:.2f}x) |")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
