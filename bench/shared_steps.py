"""Shared steps (issue 26): "used by", an edit that versions every case using one, and case saves.

    .venv/bin/python bench/shared_steps.py [--cases 20000] [--users 2000] [--requests 30]

Starts a real `tms serve` (SQLite, or PostgreSQL with TMS_TEST_DATABASE=postgres), makes a project of
`--cases` cases of which `--users` use the shared step "Sign in" (half directly, half through "Start",
which uses it), then times over loopback:
- `GET /api/v1/shared-steps/{id}` (its `used_by`: an index walk, not a scan of the cases' text);
- `PATCH /api/v1/shared-steps/{id}` of its steps (a new version of each of the `--users` cases);
- `POST /api/v1/cases` of a case naming two shared steps, and of a plain case, for comparison;
- `PATCH /api/v1/results/{id}` with `step_results` of a case using shared steps (the expanded count).
Prints a table to copy into bench/README.md.
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

PLAIN = "Feature: F\n  Scenario: S {i}\n    Given step {i}\n    When it runs\n    Then it passes\n"
USING = "Feature: F\n  Scenario: S {i}\n    * shared: {name}\n    When it runs {i}\n    Then it passes\n"


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(call: Any, requests: int) -> tuple[float, float]:
    latencies = []
    for n in range(requests + 3):
        start = time.perf_counter()
        call(n)
        latencies.append(time.perf_counter() - start)
    latencies = latencies[3:]
    return percentile(latencies, 0.5), percentile(latencies, 0.9)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=20_000)
    parser.add_argument("--users", type=int, default=2_000)
    parser.add_argument("--requests", type=int, default=30)
    args = parser.parse_args()
    from tms.library.cases import service as case_service

    rows: list[tuple[str, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="tms-bench-shared-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        server = ServerProcess(data, {}).start()
        try:
            tenant = make_tenant_on(server)
            project = tenant.create_project("Shared")["id"]
            api = tenant.api
            api.timeout = 600
            sign_in = api.post("/api/v1/shared-steps", json={
                "project_id": project, "name": "Sign in",
                "steps": "Given I open the shop\nAnd I sign in as \"ann\"\n"}).json()["data"]
            api.post("/api/v1/shared-steps", json={"project_id": project, "name": "Start",
                                                   "steps": "* shared: Sign in\nAnd I open the cart\n"})

            def text(i: int) -> str:
                if i < args.users:
                    return USING.format(i=i, name="Sign in" if i % 2 else "Start")
                return PLAIN.format(i=i)

            async def build(db: Any) -> None:
                for start in range(0, args.cases, 5_000):
                    await case_service.create_cases(db, tenant.id, [
                        {"title": f"Case {i}", "bdd_content": text(i), "project_id": project}
                        for i in range(start, min(args.cases, start + 5_000))])

            started = time.perf_counter()
            run_admin(server.db_path, build)
            seeded = time.perf_counter() - started

            def used_by(_: int) -> None:
                response = api.get(f"/api/v1/shared-steps/{sign_in['id']}")
                assert response.status_code == 200 and response.json()["data"]["used_by_total"] == args.users

            rows.append((f"GET one shared step (used_by of {args.users:,}, 1,000 listed)",
                         *timed(used_by, args.requests)))

            edits = []
            for n in range(3):
                start = time.perf_counter()
                response = api.patch(f"/api/v1/shared-steps/{sign_in['id']}", json={
                    "steps": f"Given I open the shop\nAnd I sign in as \"ann\" {n}\n"})
                edits.append(time.perf_counter() - start)
                assert response.status_code == 200, response.text[:300]
            rows.append((f"PATCH its steps: {args.users:,} new case versions (one transaction)",
                         percentile(edits, 0.5), max(edits)))

            def create(name: str) -> Any:
                def call(n: int) -> None:
                    body = USING.format(i=n, name=name) if name else PLAIN.format(i=n)
                    response = api.post("/api/v1/cases", json={"project_id": project, "title": "x",
                                                               "bdd_content": body})
                    assert response.status_code == 201, response.text[:300]
                return call

            rows.append(("POST a case naming a nested shared step", *timed(create("Start"), args.requests)))
            rows.append(("POST a plain case (for comparison)", *timed(create(""), args.requests)))

            for label, body in (("a case using shared steps (5 expanded steps)", USING.format(i=0, name="Start")),
                                ("a plain case (3 steps, for comparison)", PLAIN.format(i=0))):
                case_id = api.post("/api/v1/cases", json={"project_id": project, "title": "run me",
                                                          "bdd_content": body}).json()["data"]["id"]
                run = api.post("/api/v1/runs", json={"name": "r", "project_id": project,
                                                     "test_case_ids": [case_id]}).json()["data"]
                result = api.get(f"/api/v1/runs/{run['id']}/results").json()["data"][0]["id"]
                size = 5 if "shared" in body else 3

                def mark(n: int, result: str = result, size: int = size) -> None:
                    status = "PASSED" if n % 2 else "FAILED"
                    response = api.patch(f"/api/v1/results/{result}", json={
                        "step_results": [{"index": i, "status": status} for i in range(1, size + 1)]})
                    assert response.status_code == 200, response.text[:300]

                rows.append((f"PATCH step_results of {label}", *timed(mark, args.requests)))
        finally:
            server.stop()

    print(f"\n{args.cases:,} cases, {args.users:,} using a shared step, seeded in {seeded:.0f} s "
          f"({'PostgreSQL' if server.database_url else 'SQLite'})\n")
    print("| request | p50 | p90 / max |")
    print("|---|---|---|")
    for label, p50, p90 in rows:
        print(f"| {label} | {p50 * 1000:.1f} ms | {p90 * 1000:.1f} ms |")


if __name__ == "__main__":
    main()
