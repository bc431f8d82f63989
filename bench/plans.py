"""Test plan benchmark (issue 14): POST /api/v1/plans over 10,000 cases x 3 environments.

    .venv/bin/python bench/plans.py [--cases 10000] [--library 50000] [--repeat 5]

Starts a real `tms serve`, fills one project with `--library` cases (created through the service, as
`tms admin` or an import would), `--cases` of them tagged `plan`, then times over loopback:
a plan selecting them by tag, the same selection by `--cases` case codes, each across three
environments (30,000 UNKNOWN results per plan), and the reads of a big plan and milestone.
Prints a table with p50 and max; copy it into bench/README.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.conftest import ServerProcess, make_tenant_on, run_admin

FEATURE = "Feature: Bench\n  Scenario: one\n    Given a step\n    Then it passes\n"
ENVIRONMENTS = ["staging", "prod", "mobile"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def raw_floor(db_path: Path, tenant_id: str, project_id: str, rows: int, repeat: int) -> list[float]:
    """What SQLite alone needs to store the plan's result rows (same schema, PRAGMAs and indexes): the
    machine's floor for a plan at this moment, to read the HTTP numbers against on a loaded VM."""
    import sqlite3

    from tms.ids import new_id, new_ids, now_iso

    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA cache_size = -32000")
    cases = conn.execute("SELECT id, code, title FROM test_cases WHERE tenant_id = ? AND project_id = ? LIMIT ?",
                         (tenant_id, project_id, rows // len(ENVIRONMENTS))).fetchall()
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        now = now_iso()
        conn.execute("BEGIN IMMEDIATE")
        for _env in ENVIRONMENTS:
            run_id = new_id()
            conn.execute("INSERT INTO test_runs (id, tenant_id, project_id, name, status, created_at, updated_at) "
                         "VALUES (?, ?, ?, 'raw', 'PENDING', ?, ?)", (run_id, tenant_id, project_id, now, now))
            conn.executemany(
                "INSERT INTO test_results (id, tenant_id, run_id, test_case_id, test_case_code, title, status, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'UNKNOWN', ?, ?)",
                [(rid, tenant_id, run_id, cid, code, title, now, now)
                 for rid, (cid, code, title) in zip(new_ids(len(cases)), cases, strict=True)])
        conn.execute("COMMIT")
        timings.append(time.perf_counter() - started)
    conn.close()
    return timings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--library", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from tms.library.cases import service as case_service

    rows: list[tuple[str, str, list[float]]] = []
    with tempfile.TemporaryDirectory(prefix="tms-bench-plans-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        server = ServerProcess(data, {}).start()
        try:
            tenant = make_tenant_on(server)
            project = tenant.create_project("Shop", environments=ENVIRONMENTS)
            every = max(1, args.library // args.cases)

            async def create(db: Any) -> list[str]:
                codes: list[str] = []
                for start in range(0, args.library, 5_000):
                    made = await case_service.create_cases(db, tenant.id, [
                        {"title": f"Case {i}", "bdd_content": FEATURE, "project_id": project["id"],
                         "tags": ["plan", "bench"] if i % every == 0 and i // every < args.cases else ["bench"]}
                        for i in range(start, min(args.library, start + 5_000))
                    ])
                    codes.extend(case.code for case in made if "plan" in case.tags)
                return codes

            codes = run_admin(server.db_path, create)
            assert len(codes) == args.cases, len(codes)
            milestone = tenant.api.post("/api/v1/milestones", json={"project_id": project["id"], "name": "1.0"})
            milestone_id = milestone.json()["data"]["id"]
            bodies = {
                "by tag": {"tags": ["plan"]},
                f"by {args.cases:,} case codes": {"case_ids": codes},
            }
            with tenant.client("write") as client:
                client.timeout = 120
                plan_id = ""
                for label, selection in bodies.items():
                    timings = []
                    for n in range(args.repeat):
                        body = {"project_id": project["id"], "name": f"Plan {n}", "environments": ENVIRONMENTS,
                                "milestone_id": milestone_id, **selection}
                        started = time.perf_counter()
                        response = client.post("/api/v1/plans", json=body)
                        timings.append(time.perf_counter() - started)
                        assert response.status_code == 201, response.text
                        plan = response.json()["data"]
                        assert plan["counts"]["unknown"] == args.cases * len(ENVIRONMENTS), plan["counts"]
                        plan_id = plan["id"]
                    rows.append((f"POST /plans {label}, {len(ENVIRONMENTS)} environments "
                                 f"({args.cases * len(ENVIRONMENTS):,} results)", "< 2 s", timings))
                for label, path, params in [
                    ("GET /plans/{id}", f"/api/v1/plans/{plan_id}", {}),
                    ("GET /plans?project_id (10 plans)", "/api/v1/plans", {"project_id": project["id"]}),
                    ("GET /milestones/{id} (30 runs)", f"/api/v1/milestones/{milestone_id}", {}),
                    ("GET /runs?plan_id", "/api/v1/runs", {"plan_id": plan_id}),
                ]:
                    timings = []
                    for _ in range(30):
                        started = time.perf_counter()
                        assert client.get(path, params=params).status_code == 200
                        timings.append(time.perf_counter() - started)
                    rows.append((label, "-", timings))
                web = tenant.web()
                timings = []
                for _ in range(10):
                    started = time.perf_counter()
                    assert web.get(f"/plans/{plan_id}").status_code == 200
                    timings.append(time.perf_counter() - started)
                rows.append(("web page /plans/{id}", "< 100 ms", timings))
        finally:
            server.stop()
        floor = raw_floor(data / "tms.db", tenant.id, project["id"], args.cases * len(ENVIRONMENTS), args.repeat)
    print(f"{args.library:,} cases in the project, {args.cases:,} selected")
    print(f"raw floor: plain sqlite3 executemany of the same {args.cases * len(ENVIRONMENTS):,} result rows into "
          f"the same database, one transaction: p50 {percentile(floor, 0.5) * 1000:.0f} ms\n")
    width = max(len(r[0]) for r in rows)
    print(f"| {'request':<{width}} | target | p50 | max |\n|{'-' * (width + 2)}|---|---|---|")
    for label, target, timings in rows:
        print(f"| {label:<{width}} | {target} | {percentile(timings, 0.5) * 1000:.0f} ms | "
              f"{max(timings) * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
