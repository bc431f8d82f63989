"""Traceability benchmark (issue 27): the matrix page of 2,000 requirements over 10,000 cases.

    .venv/bin/python bench/traceability.py [--cases 10000] [--requirements 2000] [--requests 20]
    TMS_TEST_DATABASE=postgres .venv/bin/python bench/traceability.py    # the same on a throwaway cluster

Starts a real `tms serve`, makes a project of `--cases` cases, case i naming the Jira ticket
SHOP-(i mod requirements) and every third case a second one, and a tenth of the requirements' cases
deprecated; ingests four runs of every case (ci twice, staging, prod; 8% failed, 2% broken, 5% skipped),
then times over loopback: the API's first page (100 requirements, the default), the "failing or no
tests" filter, the last page, the web page and the whole CSV. Target: the page p50 < 300 ms.
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
TARGET = 0.300


def make_cases(server: ServerProcess, tenant: Tenant, project_id: str, count: int, requirements: int) -> list[str]:
    from tms.library.cases import service as case_service

    def tickets(i: int) -> list[dict[str, str]]:
        named = [{"key": f"SHOP-{i % requirements + 1}", "source": "JIRA"}]
        if i % 3 == 0:
            named.append({"key": f"SHOP-{(i * 7) % requirements + 1}", "source": "JIRA"})
        return named

    async def create(db: Any) -> list[str]:
        codes: list[str] = []
        for start in range(0, count, 5_000):
            made = await case_service.create_cases(db, tenant.id, [
                {"title": f"Case {i}", "bdd_content": FEATURE, "project_id": project_id, "tickets": tickets(i),
                 "status": "DEPRECATED" if i % 10 == 9 else "READY"}
                for i in range(start, min(count, start + 5_000))
            ])
            codes.extend(case.code for case in made)
        return codes

    return run_admin(server.db_path, create)  # type: ignore[no-any-return]


def items(codes: list[str], shift: int) -> list[dict[str, Any]]:
    out = []
    for i, code in enumerate(codes):
        kind = (i * 31 + shift) % 100
        status = "FAILED" if kind < 8 else "BROKEN" if kind < 10 else "SKIPPED" if kind < 15 else "PASSED"
        item: dict[str, Any] = {"test_case_code": code, "status": status, "duration_ms": 10}
        if status in ("FAILED", "BROKEN"):
            item["error_message"] = f"AssertionError: check {kind}"
        out.append(item)
    return out


def timed(client: Any, path: str, params: dict[str, Any], requests: int) -> tuple[list[float], int]:
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
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--requirements", type=int, default=2_000)
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args()
    backend = "PostgreSQL" if postgres_cluster.selected() else "SQLite"
    with tempfile.TemporaryDirectory(prefix="tms-bench-traceability-") as tmp:
        data_dir = Path(tmp) / "data"
        data_dir.mkdir()
        server = ServerProcess(data_dir, {}).start()
        try:
            tenant = make_tenant_on(server, "Traceability")
            project = tenant.create_project("Traceability")
            codes = make_cases(server, tenant, project["id"], args.cases, args.requirements)
            api = tenant.api
            api.timeout = 300
            for shift, environment in ((0, "ci"), (13, "ci"), (29, "staging"), (47, "prod")):
                body = {"project_id": project["id"], "run_name": f"{environment} {shift}", "environment": environment,
                        "results": items(codes, shift)}
                response = api.post("/api/v1/ingest", content=json.dumps(body).encode(),
                                    headers={"Content-Type": "application/json"})
                assert response.status_code == 201, response.text[:300]
            pid = project["id"]
            first = api.get("/api/v1/traceability", params={"project_id": pid}).json()
            total = first["pagination"]["total"]
            web = tenant.web()
            web.timeout = 300
            rows = [
                ("API page (100 requirements)", TARGET, *timed(api, "/api/v1/traceability", {"project_id": pid},
                                                               args.requests)),
                ("API, failing or no tests", TARGET, *timed(api, "/api/v1/traceability",
                                                            {"project_id": pid, "gaps": "true"}, args.requests)),
                ("API last page", TARGET, *timed(api, "/api/v1/traceability",
                                                 {"project_id": pid, "offset": total - 100}, args.requests)),
                ("web page", TARGET, *timed(web, "/traceability", {"project_id": pid}, args.requests)),
                ("CSV (every requirement)", None, *timed(api, "/api/v1/traceability",
                                                         {"project_id": pid, "format": "csv"}, 3)),
            ]
        finally:
            server.stop()
    print(f"\nTraceability of {total:,} requirements over {args.cases:,} cases ({backend}; four runs of every "
          f"case, {first['totals']})\n")
    print("| request | target | p50 | max | bytes | met |")
    print("|---|---|---|---|---|---|")
    for label, target, samples, size in rows:
        p50 = statistics.median(samples)
        met = "-" if target is None else ("yes" if p50 < target else "**no**")
        shown = "-" if target is None else f"< {target * 1000:.0f} ms"
        print(f"| {label} | {shown} | {p50 * 1000:.1f} ms | {max(samples) * 1000:.1f} ms | {size:,} | {met} |")


if __name__ == "__main__":
    main()
