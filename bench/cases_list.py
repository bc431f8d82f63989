"""Library list benchmark (issue 3): GET /api/v1/cases?limit=500 with 100,000 cases in the tenant.

    .venv/bin/python bench/cases_list.py [--cases 100000] [--requests 30]

Starts a real `tms serve`, creates the cases through the service (as `tms admin` or AI drafts would;
two projects, three statuses), then times `--requests` GETs of each page shape over loopback: offsets
from the first to the last page, each filter (project_id, status, both), and the same for runs.
Prints a table with p50/p90; copy it into bench/README.md.
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
STATUSES = ("DRAFT", "READY", "DEPRECATED")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=30)
    args = parser.parse_args()
    from tms.library.cases import service as case_service

    with tempfile.TemporaryDirectory(prefix="tms-bench-cases-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        server = ServerProcess(data, {}).start()
        try:
            tenant = make_tenant_on(server)
            alpha, beta = tenant.create_project("Alpha"), tenant.create_project("Beta")
            started = time.perf_counter()

            async def create(db: Any) -> None:
                for start in range(0, args.cases, 5_000):
                    await case_service.create_cases(db, tenant.id, [
                        {"title": f"Case {i}", "bdd_content": FEATURE, "status": STATUSES[i % 3],
                         "project_id": (alpha if i % 2 else beta)["id"], "tags": ["bench"]}
                        for i in range(start, min(args.cases, start + 5_000))
                    ])

            run_admin(server.db_path, create)
            created = time.perf_counter() - started
            for i in range(200):
                tenant.api.post("/api/v1/runs", json={"name": f"run {i}", "project_id": alpha["id"]})
            last = (args.cases // 500 - 1) * 500
            shapes: list[tuple[str, dict[str, Any]]] = [
                ("cases, offset 0", {}),
                (f"cases, offset {args.cases // 2:,}", {"offset": args.cases // 2}),
                (f"cases, offset {last:,} (last page)", {"offset": last}),
                ("cases, project_id", {"project_id": alpha["id"]}),
                ("cases, project_id, offset 49,500", {"project_id": alpha["id"], "offset": 49_500}),
                ("cases, status", {"status": "READY"}),
                ("cases, status, offset 33,000", {"status": "READY", "offset": 33_000}),
                ("cases, project_id + status, offset 16,500", {"project_id": alpha["id"], "status": "DRAFT",
                                                                "offset": 16_500}),
            ]
            rows = []
            with tenant.client("read") as client:
                for label, params in shapes:
                    latencies = []
                    for _ in range(args.requests + 3):
                        start = time.perf_counter()
                        response = client.get("/api/v1/cases", params={"limit": 500, **params})
                        latencies.append(time.perf_counter() - start)
                        assert response.status_code == 200, response.text
                    count = len(response.json()["data"])
                    latencies = latencies[3:]
                    rows.append((f"GET {label}, limit=500 ({count} rows)", percentile(latencies, 0.5),
                                 percentile(latencies, 0.9)))
                latencies = []
                for _ in range(args.requests):
                    start = time.perf_counter()
                    client.get("/api/v1/runs", params={"limit": 500, "project_id": alpha["id"]})
                    latencies.append(time.perf_counter() - start)
                rows.append(("GET runs, project_id, limit=500 (200 rows)", percentile(latencies, 0.5),
                             percentile(latencies, 0.9)))
        finally:
            server.stop()
    print(f"{args.cases:,} cases created through create_cases in {created:.1f} s\n")
    width = max(len(r[0]) for r in rows)
    print(f"| {'request':<{width}} | target p50 | p50 | p90 |\n|{'-' * (width + 2)}|---|---|---|")
    for label, p50, p90 in rows:
        target = "<= 50 ms" if label.startswith("GET cases") else "-"
        print(f"| {label:<{width}} | {target} | {p50 * 1000:.1f} ms | {p90 * 1000:.1f} ms |")


if __name__ == "__main__":
    main()
