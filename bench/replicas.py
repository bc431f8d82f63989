"""Three replicas on one PostgreSQL database under CI load, and what it costs (issue 17's capacity note).

    .venv/bin/python bench/replicas.py [--replicas 3] [--clients 8] [--seconds 30] [--per-run 2000]

Starts a throwaway PostgreSQL cluster (tests/postgres_cluster.py) and ``--replicas`` `tms serve` on
it, then ``--clients`` CI clients post ingests of ``--per-run`` results round-robin over the replicas
for ``--seconds``. Reports: ingests and results per second, 5xx and lost or duplicated rows (every
accepted row counted back through the API), CPU seconds per 1,000 results for each replica (from
/proc), the database's CPU (every process of the cluster) and its write rate (pg_stat_database).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ["TMS_TEST_DATABASE"] = "postgres"

from bench.ingest import items
from tests import postgres_cluster
from tests.conftest import ServerProcess, make_tenant_on

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def cluster_cpu(directory: Path) -> float:
    """CPU of every process of the cluster (postmaster and backends), found by its data directory."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if str(directory) in (entry / "cmdline").read_text() or _child_of_postmaster(entry, directory):
                total += cpu_seconds(int(entry.name))
        except OSError:
            continue
    return total


def _child_of_postmaster(entry: Path, directory: Path) -> bool:
    pid_file = directory / "data" / "postmaster.pid"
    if not pid_file.exists():
        return False
    postmaster = pid_file.read_text().split()[0]
    status = (entry / "status").read_text()
    return any(line.split()[1] == postmaster for line in status.splitlines() if line.startswith("PPid:"))


async def database_writes(url: str) -> tuple[int, int]:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        row = await conn.fetchrow("SELECT xact_commit, tup_inserted + tup_updated + tup_deleted AS rows "
                                  "FROM pg_stat_database WHERE datname = current_database()")
        return int(row["xact_commit"]), int(row["rows"])
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--per-run", type=int, default=2_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "shared"
        data_dir.mkdir()
        servers = [ServerProcess(data_dir, {}).start() for _ in range(args.replicas)]
        try:
            tenant = make_tenant_on(servers[0], "Load")
            project = tenant.create_project("Replicated CI")
            body = json.dumps({"project_id": project["id"], "results": items(args.per_run, [])}).encode()
            url = servers[0].database_url
            cluster_dir = postgres_cluster.cluster().directory
            accepted, server_errors, latencies = [0], [0], []
            lock = threading.Lock()
            deadline = time.monotonic() + args.seconds

            def client(number: int) -> None:
                target = servers[number % len(servers)]
                with httpx.Client(base_url=target.url, timeout=120,
                                  headers={"Authorization": f"Bearer {tenant.write_token}",
                                           "Content-Type": "application/json"}) as http:
                    while time.monotonic() < deadline:
                        start = time.perf_counter()
                        response = http.post("/api/v1/ingest", content=body)
                        with lock:
                            latencies.append(time.perf_counter() - start)
                            if response.status_code >= 500:
                                server_errors[0] += 1
                            elif response.status_code == 201:
                                accepted[0] += args.per_run

            cpu_before = [cpu_seconds(s.process.pid) for s in servers if s.process]
            db_cpu_before = cluster_cpu(cluster_dir)
            commits_before, rows_before = asyncio.run(database_writes(url))
            started = time.monotonic()
            threads = [threading.Thread(target=client, args=(n,)) for n in range(args.clients)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.monotonic() - started
            cpu_after = [cpu_seconds(s.process.pid) for s in servers if s.process]
            db_cpu = cluster_cpu(cluster_dir) - db_cpu_before
            commits_after, rows_after = asyncio.run(database_writes(url))
            stored = 0
            with httpx.Client(base_url=servers[-1].url, timeout=60,
                              headers={"Authorization": f"Bearer {tenant.read_token}"}) as http:
                offset = 0
                while True:
                    page = http.get("/api/v1/runs", params={"project_id": project["id"], "limit": 100,
                                                            "offset": offset}).json()
                    stored += sum(run["counts"]["total"] for run in page["data"])
                    offset += len(page["data"])
                    if not page["data"] or offset >= page["pagination"]["total"]:
                        break
            thousands = accepted[0] / 1000
            latencies.sort()
            print(f"\n{args.replicas} replicas, {args.clients} clients, {args.per_run:,}-result ingests, "
                  f"{elapsed:.0f} s, load average {os.getloadavg()[0]:.1f}\n")
            print("| measure | value |\n|---|---|")
            print(f"| ingests | {len(latencies)} ({len(latencies) / elapsed:.1f}/s) |")
            print(f"| results accepted | {accepted[0]:,} ({accepted[0] / elapsed:,.0f}/s) |")
            print(f"| ingest p50 / p95 | {latencies[len(latencies) // 2] * 1000:.0f} ms / "
                  f"{latencies[int(len(latencies) * 0.95)] * 1000:.0f} ms |")
            print(f"| 5xx | {server_errors[0]} |")
            print(f"| rows stored - accepted (lost < 0, doubled > 0) | {stored - accepted[0]} |")
            for number, (before, after) in enumerate(zip(cpu_before, cpu_after, strict=True), start=1):
                print(f"| replica {number} CPU | {after - before:.1f} s |")
            replica_cpu = sum(after - before for before, after in zip(cpu_before, cpu_after, strict=True))
            print(f"| replicas' CPU per 1,000 results | {replica_cpu / max(thousands, 1e-9) * 1000:.0f} ms |")
            print(f"| PostgreSQL CPU per 1,000 results | {db_cpu / max(thousands, 1e-9) * 1000:.0f} ms |")
            print(f"| PostgreSQL commits/s, rows written/s | {(commits_after - commits_before) / elapsed:.0f}, "
                  f"{(rows_after - rows_before) / elapsed:,.0f} |")
        finally:
            for server in servers:
                server.stop()


if __name__ == "__main__":
    main()
