"""Report benchmark (issue 27): the report of a 5,000-result run as JSON, HTML and PDF, and its export.

    .venv/bin/python bench/reports.py [--results 5000] [--requests 20]
    TMS_TEST_DATABASE=postgres .venv/bin/python bench/reports.py      # the same on a throwaway cluster

Starts a real `tms serve`, makes a project of `--results / 2` cases in 20 sections, ingests two runs
of `--results` results each (half linked, half unlinked; 8% failed and 2% broken over 40 distinct
messages, a third assigned), then times over loopback each report of the second run (which carries a
trend against the first) and the run's exports. Targets: JSON p50 < 100 ms, HTML < 300 ms, PDF < 2 s.
Also prints the server's resident memory before and after, the reports' bounded lists keep it flat
whatever the run's size (try --results 100000).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests import postgres_cluster
from tests.conftest import ServerProcess, Tenant, make_tenant_on, run_admin

FEATURE = "Feature: Bench\n  Scenario: one\n    Given a step\n"
TARGETS = {"json": 0.100, "html": 0.300, "pdf": 2.0}


def make_cases(server: ServerProcess, tenant: Tenant, project_id: str, count: int) -> list[str]:
    from tms.library.cases import service as case_service

    sections = [tenant.api.post("/api/v1/sections", json={"project_id": project_id, "name": f"Area {n}"})
                .json()["data"]["id"] for n in range(20)]

    async def create(db: Any) -> list[str]:
        codes: list[str] = []
        for start in range(0, count, 5_000):
            made = await case_service.create_cases(db, tenant.id, [
                {"title": f"Case {i}", "bdd_content": FEATURE, "project_id": project_id,
                 "section_id": sections[i % len(sections)]}
                for i in range(start, min(count, start + 5_000))
            ])
            codes.extend(case.code for case in made)
        return codes

    return run_admin(server.db_path, create)  # type: ignore[no-any-return]


def items(count: int, codes: list[str], shift: int) -> list[dict[str, Any]]:
    out = []
    for i in range(count):
        item: dict[str, Any] = {"status": "PASSED", "duration_ms": 10 + i % 500}
        kind = (i + shift) % 50
        if kind < 4:
            item.update(status="FAILED", error_message=f"AssertionError: check {kind + (i % 10) * 4} <failed>",
                        error_stack=f"Traceback\n  File \"t.py\", line {i % 10}\nAssertionError")
        elif kind == 4:
            item.update(status="BROKEN", error_message="fixture 'db' not found")
        elif kind == 5:
            item.update(status="SKIPPED")
        if i < len(codes):
            item["test_case_code"] = codes[i]
        else:
            item["title"] = f"suite > unlinked test {i}"
        out.append(item)
    return out


def rss_kb(server: ServerProcess) -> int:
    assert server.process is not None
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def timed(client: Any, path: str, params: dict[str, str], requests: int) -> tuple[list[float], int]:
    first = client.get(path, params=params)
    assert first.status_code == 200, first.text[:300]
    samples = []
    for _ in range(requests):
        started = time.perf_counter()
        response = client.get(path, params=params)
        samples.append(time.perf_counter() - started)
        assert response.status_code == 200
    return samples, len(first.content)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--results", type=int, default=5_000)
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args()
    backend = "PostgreSQL" if postgres_cluster.selected() else "SQLite"
    with tempfile.TemporaryDirectory(prefix="tms-bench-reports-") as tmp:
        data_dir = Path(tmp) / "data"
        data_dir.mkdir()
        server = ServerProcess(data_dir, {}).start()
        try:
            tenant = make_tenant_on(server, "Reports")
            project = tenant.create_project("Reports")
            codes = make_cases(server, tenant, project["id"], args.results // 2)
            api = tenant.api
            api.timeout = 300
            runs = []
            for shift in (7, 0):
                body = {"project_id": project["id"], "run_name": f"nightly {shift}", "environment": "ci",
                        "results": items(args.results, codes, shift)}
                response = api.post("/api/v1/ingest", content=json.dumps(body).encode(),
                                    headers={"Content-Type": "application/json"})
                assert response.status_code == 201, response.text[:300]
                runs.append(response.json()["run_id"])
            run_id = runs[-1]
            users = api.get("/api/v1/users").json()["data"]
            results = api.get(f"/api/v1/runs/{run_id}/results", params={"limit": 5000}).json()["data"]
            linked = [r["id"] for r in results if r["test_case_id"]][: args.results // 6]
            if linked:
                api.post(f"/api/v1/runs/{run_id}/assign", json={"result_ids": linked, "assignee_id": users[0]["id"]})
            before = rss_kb(server)
            rows = []
            for fmt in ("json", "html", "pdf"):
                samples, size = timed(api, f"/api/v1/runs/{run_id}/report", {"format": fmt},
                                      args.requests if fmt != "pdf" else max(5, args.requests // 2))
                rows.append((f"run report {fmt}", TARGETS[fmt], samples, size))
            middle = rss_kb(server)
            for fmt in ("junit", "ctrf", "csv"):
                samples, size = timed(api, f"/api/v1/runs/{run_id}/export", {"format": fmt}, 5)
                rows.append((f"run export {fmt}", None, samples, size))
            after = rss_kb(server)
        finally:
            server.stop()
    print(f"\nReports of a {args.results:,}-result run ({backend}; half linked, 10% failing, trend against "
          "a run of the same size)\n")
    print("| request | target | p50 | max | bytes | met |")
    print("|---|---|---|---|---|---|")
    for label, target, samples, size in rows:
        p50 = statistics.median(samples)
        met = "-" if target is None else ("yes" if p50 < target else "**no**")
        shown = "-" if target is None else f"< {target * 1000:.0f} ms"
        print(f"| {label} | {shown} | {p50 * 1000:.1f} ms | {max(samples) * 1000:.1f} ms | {size:,} | {met} |")
    print(f"\nserver RSS: {before / 1024:.0f} MB before the reports, {middle / 1024:.0f} MB after them, "
          f"{after / 1024:.0f} MB after the exports")


if __name__ == "__main__":
    main()
