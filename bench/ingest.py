"""Ingest and results benchmark (issue 3).

    .venv/bin/python bench/ingest.py [--rounds 15] [--seconds 20] [--clients 8]

Starts a real `tms serve` on a temporary data dir and measures, over loopback HTTP:

1. POST /api/v1/ingest of 5,000 and of 20,000 results (half linked by code to library cases, half
   unlinked; ~10% FAILED with an error message): p50/p90 latency of `--rounds` requests each;
2. the same rows inserted with raw `sqlite3.executemany` in one transaction into a database with the
   same schema and PRAGMAs (ids and tuples prepared beforehand, so only SQLite's work is timed), and the
   ratio of the HTTP ingest rate (results/s at p50) to that raw rate;
3. one ingest of 100,000 results (gzip) on a fresh server: status, time and the server's peak RSS
   growth (`VmHWM` after minus `VmRSS` before, from /proc/<pid>/status);
4. `--clients` CI clients ingesting 2,000-result runs for `--seconds` alongside 2 readers (cases list,
   runs list, a run's results): 5xx count and rows stored vs rows accepted (lost rows).

Prints a table; copy it into bench/README.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.conftest import ServerProcess, Tenant, connect_db, make_tenant_on, run_admin
from tms.db.migrations import migration_files, split_sql
from tms.ids import new_id, new_ids, now_iso

FEATURE = "Feature: Bench\n  Scenario: one\n    Given a step\n"
STATUSES = ("PASSED", "PASSED", "PASSED", "PASSED", "PASSED", "PASSED", "SKIPPED", "BROKEN", "FAILED", "PASSED")


def proc_status(pid: int, key: str) -> int:
    """A /proc/<pid>/status value in kB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def make_cases(server: ServerProcess, tenant: Tenant, project_id: str, count: int) -> list[str]:
    """Creates ``count`` library cases through the service (as the AI drafts do), in batches."""
    from tms.library.cases import service as case_service

    async def create(db: Any) -> list[str]:
        codes: list[str] = []
        for start in range(0, count, 5_000):
            bodies = [{"title": f"Bench case {i}", "bdd_content": FEATURE, "project_id": project_id}
                      for i in range(start, min(count, start + 5_000))]
            codes += [case.code for case in await case_service.create_cases(db, tenant.id, bodies)]
        return codes

    return run_admin(server.db_path, create)  # type: ignore[no-any-return]


def items(count: int, codes: list[str], offset: int = 0) -> list[dict[str, Any]]:
    """Half linked (by code, each case at most once per run), half unlinked."""
    out = []
    linked = min(count // 2, len(codes))
    for i in range(count):
        status = STATUSES[i % len(STATUSES)]
        item: dict[str, Any] = {"status": status, "duration_ms": 10 + i % 500, "framework": "pytest"}
        if i < linked:
            item["test_case_code"] = codes[(i + offset) % len(codes)]
        else:
            item["title"] = f"tests/test_module_{i % 97}.py::test_case_{i}"
        if status == "FAILED":
            item["error_message"] = f"AssertionError: expected 200, got 500 (item {i})"
        out.append(item)
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def time_ingests(client: httpx.Client, body: bytes, rounds: int) -> list[float]:
    latencies = []
    for _ in range(rounds):
        start = time.perf_counter()
        response = client.post("/api/v1/ingest", content=body, headers={"Content-Type": "application/json"})
        latencies.append(time.perf_counter() - start)
        assert response.status_code == 201, response.text[:500]
    return latencies


class RawSqlite:
    """The same rows inserted with sqlite3.executemany in one transaction, into a database with the same
    schema and PRAGMAs that, like the server's, grows with every round (fresh files would flatter it)."""

    def __init__(self, path: Path, codes: list[str]) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)
        for pragma in ("journal_mode = WAL", "synchronous = NORMAL", "foreign_keys = ON", "cache_size = -32000",
                       "temp_store = MEMORY"):
            self.conn.execute(f"PRAGMA {pragma}")
        for _, _, sql in migration_files("sqlite"):
            for statement in split_sql(sql):
                self.conn.execute(statement)
        now = now_iso()
        self.tenant_id, self.project_id = new_id(), new_id()
        self.conn.execute("INSERT INTO tenants (id, name, created_at) VALUES (?, 'raw', ?)", (self.tenant_id, now))
        self.conn.execute(
            "INSERT INTO projects (id, tenant_id, name, created_at, updated_at) VALUES (?, ?, 'p', ?, ?)",
            (self.project_id, self.tenant_id, now, now))
        self.case_ids = {code: new_id() for code in codes}
        self.conn.executemany(
            "INSERT INTO test_cases (id, tenant_id, project_id, code, title, bdd_content, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, 't', ?, ?, ?)",
            [(case_id, self.tenant_id, self.project_id, code, FEATURE, now, now)
             for code, case_id in self.case_ids.items()],
        )

    def insert_seconds(self, payload: list[dict[str, Any]]) -> float:
        now, run_id = now_iso(), new_id()
        tenant_id, project_id = self.tenant_id, self.project_id
        self.conn.execute("INSERT INTO test_runs (id, tenant_id, project_id, name, status, created_at, updated_at) "
                          "VALUES (?, ?, ?, 'raw', 'COMPLETED', ?, ?)", (run_id, tenant_id, project_id, now, now))
        linked, unlinked = [], []
        for result_id, item in zip(new_ids(len(payload)), payload, strict=True):
            common = (item["status"], None, None, None, item["duration_ms"], item["framework"],
                      item.get("error_message"), None, None, now, now)
            if "test_case_code" in item:
                code = item["test_case_code"]
                linked.append((result_id, tenant_id, run_id, self.case_ids[code], code, "t", *common))
            else:
                unlinked.append((result_id, tenant_id, project_id, run_id, item["title"], *common))
        start = time.perf_counter()
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.executemany(
            "INSERT INTO test_results (id, tenant_id, run_id, test_case_id, test_case_code, title, status, comment, "
            "bug_ticket_key, bug_ticket_url, duration_ms, framework, error_message, error_stack, executed_at, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", linked)
        self.conn.executemany(
            "INSERT INTO unlinked_test_results (id, tenant_id, project_id, run_id, title, status, comment, "
            "bug_ticket_key, bug_ticket_url, duration_ms, framework, error_message, error_stack, executed_at, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", unlinked)
        self.conn.execute("COMMIT")
        return time.perf_counter() - start


def bench_sizes(server: ServerProcess, work: Path, rounds: int) -> list[tuple[str, str, str]]:
    tenant = make_tenant_on(server)
    project = tenant.create_project("Bench")
    codes = make_cases(server, tenant, project["id"], 10_000)
    rows = []
    raw_db = RawSqlite(work / "raw.db", codes)
    with tenant.client() as client:
        for size in (5_000, 20_000):
            payload = items(size, codes)
            body = json.dumps({"project_id": project["id"], "run_name": f"bench {size}", "results": payload}).encode()
            time_ingests(client, body, 2)  # warm-up
            latencies = time_ingests(client, body, rounds)
            p50, p90 = percentile(latencies, 0.5), percentile(latencies, 0.9)
            raw = statistics.median(raw_db.insert_seconds(payload) for _ in range(rounds + 2))
            ratio = raw / p50
            target = "<= 50 ms" if size == 5_000 else "<= 200 ms"
            rows.append((f"ingest {size:,} results, p50 (p90)", target,
                         f"{p50 * 1000:.0f} ms ({p90 * 1000:.0f} ms), {len(body) / 1e6:.1f} MB body"))
            rows.append((f"ingest {size:,}: HTTP rate / raw executemany rate", ">= 0.5",
                         f"{ratio:.2f} ({size / p50:,.0f}/s vs {size / raw:,.0f}/s raw)"))
    return rows


def bench_100k(work: Path) -> list[tuple[str, str, str]]:
    server = ServerProcess(work / "big", {}).start() if (work / "big").mkdir() is None else None
    assert server is not None and server.process is not None
    try:
        tenant = make_tenant_on(server)
        project = tenant.create_project("Big")
        codes = make_cases(server, tenant, project["id"], 20_000)
        payload = items(100_000, codes)
        payload[: len(codes)] = [{**item, "test_case_code": code} for item, code in zip(payload, codes, strict=False)]
        body = gzip.compress(json.dumps({"project_id": project["id"], "results": payload}).encode(), 6)
        with tenant.client() as client:
            client.get("/api/v1/runs")  # warm the process up before the baseline
            before = proc_status(server.process.pid, "VmRSS")
            start = time.perf_counter()
            response = client.post("/api/v1/ingest", content=body, timeout=300,
                                   headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})
            elapsed = time.perf_counter() - start
        peak = proc_status(server.process.pid, "VmHWM")
        ok = response.status_code == 201 and response.json()["accepted"] == 100_000
        return [
            ("ingest 100,000 results in one request (gzip)", "succeeds",
             f"{response.status_code}, accepted {response.json().get('accepted')}, {elapsed:.2f} s, "
             f"{len(body) / 1e6:.1f} MB gzip" + ("" if ok else " FAILED")),
            ("peak RSS growth during it", "< 300 MB", f"{(peak - before) / 1024:.0f} MB"),
        ]
    finally:
        server.stop()


def bench_concurrent(server: ServerProcess, seconds: float, clients: int) -> list[tuple[str, str, str]]:
    tenant = make_tenant_on(server)
    project = tenant.create_project("Concurrent")
    codes = make_cases(server, tenant, project["id"], 2_000)
    stop = time.monotonic() + seconds
    lock = threading.Lock()
    stats = {"ingests": 0, "accepted": 0, "5xx": 0, "other": 0, "reads": 0}
    run_ids: list[str] = []

    def ci(number: int) -> None:
        body = json.dumps({"project_id": project["id"], "run_name": f"ci {number}",
                           "results": items(2_000, codes, offset=number)}).encode()
        with tenant.client() as client:
            while time.monotonic() < stop:
                response = client.post("/api/v1/ingest", content=body, timeout=120,
                                       headers={"Content-Type": "application/json"})
                with lock:
                    if response.status_code >= 500:
                        stats["5xx"] += 1
                    elif response.status_code != 201:
                        stats["other"] += 1
                    else:
                        stats["ingests"] += 1
                        stats["accepted"] += response.json()["accepted"]
                        run_ids.append(response.json()["run_id"])

    def reader() -> None:
        with tenant.client("read") as client:
            while time.monotonic() < stop:
                for path in ("/api/v1/cases?limit=500", "/api/v1/runs?limit=100",
                             f"/api/v1/runs/{run_ids[-1]}/results" if run_ids else "/api/v1/projects"):
                    response = client.get(path, timeout=120)
                    with lock:
                        stats["reads"] += 1
                        if response.status_code >= 500:
                            stats["5xx"] += 1

    threads = [threading.Thread(target=ci, args=(n,)) for n in range(clients)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with connect_db(server.db_path) as conn:
        stored = sum(
            conn.execute(f"SELECT COUNT(*) FROM {table} WHERE tenant_id = ?", (tenant.id,)).fetchone()[0]
            for table in ("test_results", "unlinked_test_results")
        )
    return [
        (f"{clients} CI clients x 2,000-result ingests + 2 readers, {seconds:.0f} s", "0 5xx",
         f"{stats['5xx']} 5xx, {stats['other']} other non-2xx; {stats['ingests']} ingests "
         f"({stats['ingests'] * 2000 / seconds:,.0f} results/s), {stats['reads']} reads"),
        ("rows stored vs accepted", "0 lost", f"{stored:,} stored / {stats['accepted']:,} accepted "
                                              f"({stats['accepted'] - stored} lost)"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tms-bench-ingest-") as tmp:
        work = Path(tmp)
        (work / "data").mkdir()
        server = ServerProcess(work / "data", {}).start()
        try:
            rows = bench_sizes(server, work, args.rounds)
            rows += bench_concurrent(server, args.seconds, args.clients)
        finally:
            server.stop()
        rows += bench_100k(work)
    width = max(len(r[0]) for r in rows)
    print(f"| {'measure':<{width}} | target | result |\n|{'-' * (width + 2)}|---|---|")
    for measure, target, result in rows:
        print(f"| {measure:<{width}} | {target} | {result} |")


if __name__ == "__main__":
    main()
