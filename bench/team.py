"""Team-work benchmark (issue 13): a manual run of 5,000 cases.

    .venv/bin/python bench/team.py [--cases 5000] [--requests 30]

Starts a real `tms serve` on a temporary data dir, seeds one tenant's library of Gherkin cases straight
into SQLite (as bench/web_pages.py does), creates a run of every case through the API (5,000 UNKNOWN
placeholders, one executemany), then times over loopback, after one warm-up each, p50 and p95 of:
the run page, the execution view of one result, saving a step (PATCH step_results), saving a result
(PATCH status/comment), and the execution form's POST (the browser's save, answered with its redirect).

Then the audit log's share of the bulk writes, in-process on a scratch database: POST-results batches
of 1,000 and ingests of 1,000 results, each timed with the real audit entry and with
`audit.record_many` replaced by a no-op (alternating, same data), p50 of each; and the entry alone
(transactions with one entry against empty ones), as a share of the faster bulk write. Prints Markdown.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.web_pages import FEATURE, sign_in
from tests.conftest import ServerProcess, make_tenant_on, run_admin
from tms.ids import new_ids


def seed_cases(db_path: Path, tenant_id: str, cases: int) -> tuple[str, list[str]]:
    async def write(db: Any) -> tuple[str, list[str]]:
        t0 = "2026-01-01T00:00:00.000Z"
        project_id = new_ids(1)[0]
        ids = new_ids(cases)
        async with db.transaction() as tx:
            await tx.execute(
                "INSERT INTO projects (id, tenant_id, name, active, environments, created_at, updated_at) "
                "VALUES (?, ?, 'Web shop', 1, '[\"staging\"]', ?, ?)", (project_id, tenant_id, t0, t0))
            await tx.executemany(
                "INSERT INTO test_cases (id, tenant_id, project_id, code, title, bdd_content, status, priority, "
                "is_e2e, automation_status, tags, tickets, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, 'READY', 'MEDIUM', 0, 'MANUAL', '[]', '[]', ?, ?)",
                [(ids[i], tenant_id, project_id, f"TC-{i + 1}", f"Checkout scenario {i + 1}",
                  FEATURE.format(n=i + 1), t0, t0) for i in range(cases)])
            await tx.execute("UPDATE tenants SET case_seq = ? WHERE id = ?", (cases, tenant_id))
        return project_id, ids

    return run_admin(db_path, write)  # type: ignore[no-any-return]


def timed(call: Any, requests: int) -> tuple[float, float]:
    call()  # warm-up
    samples = []
    for _ in range(requests):
        start = time.perf_counter()
        response = call()
        samples.append((time.perf_counter() - start) * 1000)
        assert response.status_code in (200, 303), (response.status_code, response.text[:300])
    samples.sort()
    return statistics.median(samples), samples[max(0, int(len(samples) * 0.95) - 1)]


def http_part(cases: int, requests: int) -> list[tuple[str, float, float]]:
    rows: list[tuple[str, float, float]] = []
    with tempfile.TemporaryDirectory() as data_dir:
        server = ServerProcess(Path(data_dir), {}).start()
        try:
            tenant = make_tenant_on(server, "Bench team")
            project_id, case_ids = seed_cases(server.db_path, tenant.id, cases)
            start = time.perf_counter()
            run = tenant.api.post("/api/v1/runs", json={"name": "Manual regression", "project_id": project_id,
                                                        "test_case_ids": case_ids}, timeout=120)
            created_ms = (time.perf_counter() - start) * 1000
            assert run.status_code == 201, run.text
            run_id = run.json()["data"]["id"]
            rows.append((f"create a run of {cases:,} cases (POST /runs, once)", created_ms, created_ms))
            api = tenant.api  # one client (and connection) for every timed request
            results = tenant.api.get(f"/api/v1/runs/{run_id}/results", params={"status": "UNKNOWN"},
                                     timeout=120).json()["data"]
            target = results[len(results) // 2]["id"]
            web = sign_in(server, tenant.email, tenant.password)
            rows.append((f"run page, {cases:,} results (GET /runs/{{id}})",
                         *timed(lambda: web.get(f"/runs/{run_id}"), requests)))
            rows.append(("execution view (GET /results/{id}/execute)",
                         *timed(lambda: web.get(f"/results/{target}/execute"), requests)))
            flip = iter(range(10**6))
            rows.append(("save a step (PATCH /results/{id} step_results)", *timed(
                lambda: api.patch(f"/api/v1/results/{target}", json={"step_results": [
                    {"index": 1, "status": "PASSED"}, {"index": 2, "status": "FAILED" if next(flip) % 2 else
                                                       "PASSED"}]}), requests)))
            rows.append(("save a result (PATCH /results/{id} status+comment)", *timed(
                lambda: api.patch(f"/api/v1/results/{target}", json={
                    "status": "FAILED" if next(flip) % 2 else "PASSED", "comment": f"try {next(flip)}"}), requests)))
            token = web.cookies.get("csrftoken", "")
            rows.append(("save from the execution form (POST, 303)", *timed(
                lambda: web.post(f"/results/{target}/execute", data={
                    "_csrf_token": token, "status": "PASSED" if next(flip) % 2 else "FAILED", "step_1": "PASSED",
                    "comment": "ok", "duration_ms": "1200"}), requests)))
        finally:
            server.stop()
    return rows


def audit_part(rounds: int) -> list[tuple[str, float, float, float]]:
    """(write, p50 with audit, p50 without, overhead %) measured in-process."""
    from tms.db.sqlite import SqliteDatabase
    from tms.runs.ingest import service as ingest
    from tms.runs.results import service as results
    from tms.team import accounts
    from tms.team.audit import service as audit

    async def go() -> list[tuple[str, float, float, float]]:
        with tempfile.TemporaryDirectory() as directory:
            db = SqliteDatabase(Path(directory) / "tms.db")
            await db.open()
            tenant = await accounts.create_tenant(db, "Audit bench")
            async with db.transaction() as tx:
                project_id = new_ids(1)[0]
                await tx.execute("INSERT INTO projects (id, tenant_id, name, environments, created_at, updated_at) "
                                 "VALUES (?, ?, 'p', '[]', 't', 't')", (project_id, tenant))
                case_ids = new_ids(1000)
                await tx.executemany(
                    "INSERT INTO test_cases (id, tenant_id, project_id, code, title, bdd_content, status, priority, "
                    "is_e2e, automation_status, tags, tickets, created_at, updated_at) VALUES "
                    "(?, ?, ?, ?, ?, 'Feature: f', 'READY', 'MEDIUM', 0, 'MANUAL', '[]', '[]', 't', 't')",
                    [(cid, tenant, project_id, f"TC-{i}", f"case {i}") for i, cid in enumerate(case_ids)])
            from tms.runs import service as runs
            from tms.runs.models import RunCreate
            run = await runs.create_run(db, tenant, RunCreate(name="r", project_id=project_id))
            batch = json.dumps({"results": [{"test_case_code": f"TC-{i}", "status": "PASSED" if i % 3 else "FAILED",
                                             "duration_ms": i} for i in range(1000)]}).encode()
            report = json.dumps({"project_id": project_id, "run_name": "nightly", "results": [
                {"test_case_code": f"TC-{i}", "status": "PASSED"} if i % 2 else
                {"title": f"unlinked {i}", "status": "FAILED"} for i in range(1000)]}).encode()
            real = audit.record_many

            async def nothing(*args: Any, **kwargs: Any) -> None:
                return None

            async def post() -> None:
                await results.post_results(db, tenant, run.id, batch)

            async def run_ingest() -> None:
                await ingest.ingest(db, tenant, report)

            rows = []
            for name, call in (("POST /runs/{id}/results, 1,000 results", post),
                               ("ingest, 1,000 results (half unlinked)", run_ingest)):
                on, off = [], []
                await call()
                for i in range(rounds * 2):
                    with_audit = i % 2 == 0
                    audit.record_many = real if with_audit else nothing  # type: ignore[assignment]
                    start = time.perf_counter()
                    await call()
                    (on if with_audit else off).append((time.perf_counter() - start) * 1000)
                audit.record_many = real  # type: ignore[assignment]
                p_on, p_off = statistics.median(on), statistics.median(off)
                rows.append((name, p_on, p_off, 100 * (p_on - p_off) / p_off))
            # the entry itself, without the write around it: N transactions with one entry vs N empty ones
            samples: dict[bool, list[float]] = {True: [], False: []}
            for i in range(400):
                with_entry = i % 2 == 0
                start = time.perf_counter()
                async with db.transaction() as tx:
                    if with_entry:
                        await real(tx, tenant, [audit.Entry("run.results_posted", "run", run.id,
                                                            {"accepted": 1000, "created": 0, "rejected": 0})])
                samples[with_entry].append((time.perf_counter() - start) * 1000)
            entry_ms = statistics.median(samples[True]) - statistics.median(samples[False])
            rows.append(("one audit entry inside a transaction (difference of medians)", entry_ms, 0.0,
                         100 * entry_ms / min(r[2] for r in rows)))
            await db.close()
            return rows

    return asyncio.run(go())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    print("| what | p50 ms | p95 ms |\n|---|---:|---:|")
    for name, p50, p95 in http_part(args.cases, args.requests):
        print(f"| {name} | {p50:.1f} | {p95:.1f} |")
    print("\n| bulk write | p50 with audit ms | p50 without ms | audit's share |\n|---|---:|---:|---:|")
    for name, on, off, share in audit_part(args.rounds):
        print(f"| {name} | {on:.2f} | {off:.2f} | {share:+.1f}% |")


if __name__ == "__main__":
    main()
