"""Foundation benchmarks (issue 2): token verification, /api/v1/me throughput, concurrent writers.

    .venv/bin/python bench/auth.py [--seconds 30]

Starts a real `tms serve` on a temporary data dir; the load comes from `wrk` (Debian package) when
present, else from an httpx client pool. Prints one table; copy it into bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.conftest import ServerProcess, make_tenant_on, run_admin


def token_verification_p50(db_path: Path, token: str, *, cached: bool, rounds: int = 3000) -> tuple[float, float]:
    """p50/p99 in ms of verify_token: from the cache, or with the cache cleared (one indexed read)."""
    from tms.team.tokens.service import verified_tokens, verify_token

    async def measure(db) -> list[float]:
        timings = []
        for _ in range(rounds):
            if not cached:
                verified_tokens.clear()
            start = time.perf_counter()
            principal = await verify_token(db, token)
            timings.append(time.perf_counter() - start)
            assert principal is not None
        return timings

    timings = sorted(run_admin(db_path, measure))
    return statistics.median(timings) * 1000, timings[int(len(timings) * 0.99)] * 1000


def me_throughput(url: str, token: str, seconds: int) -> str:
    if shutil.which("wrk"):
        # a short warm-up first: the first seconds after start-up run markedly slower on this VM
        subprocess.run(["wrk", "-t1", "-c32", "-d3s", "-H", f"Authorization: Bearer {token}", f"{url}/api/v1/me"],
                       capture_output=True, check=True)
        out = subprocess.run(
            # one wrk thread: the server is one process, and on a 2-core VM a second wrk thread would take
            # the core the server's SQLite threads run on
            ["wrk", "-t1", "-c32", f"-d{seconds}s", "-H", f"Authorization: Bearer {token}", f"{url}/api/v1/me"],
            capture_output=True, text=True, check=True,
        ).stdout
        rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
        non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        latency = re.search(r"Latency\s+(\S+)", out)
        return (f"{float(rps.group(1)):.0f} req/s (wrk -t1 -c32 -d{seconds}s), avg latency {latency.group(1)}, "
                f"non-2xx {non2xx.group(1) if non2xx else 0}")
    return "wrk not installed (apt-get install wrk)"


async def concurrent_writers(url: str, token: str, seconds: float, clients: int = 32) -> dict[str, int]:
    counts = {"create": 0, "list": 0, "5xx": 0, "other_errors": 0}
    deadline = time.monotonic() + seconds

    async def client_loop(number: int) -> None:
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as c:
            i = 0
            while time.monotonic() < deadline:
                i += 1
                if i % 2:
                    response = await c.post("/api/v1/projects", json={"name": f"p{number}-{i}"})
                    kind = "create"
                else:
                    response = await c.get("/api/v1/projects")
                    kind = "list"
                if response.status_code >= 500:
                    counts["5xx"] += 1
                elif response.status_code >= 400:
                    counts["other_errors"] += 1
                else:
                    counts[kind] += 1

    await asyncio.gather(*(client_loop(n) for n in range(clients)))
    return counts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        server = ServerProcess(data, {}).start()
        try:
            tenant = make_tenant_on(server)
            for cached in (False, True):
                p50, p99 = token_verification_p50(server.db_path, tenant.read_token, cached=cached)
                label = "cache hit" if cached else "cache miss (database read)"
                print(f"token verification in-process, {label}: p50 {p50:.3f} ms, p99 {p99:.3f} ms")
            print("GET /api/v1/me:", me_throughput(server.url, tenant.read_token, min(args.seconds, 15)))
            counts = asyncio.run(concurrent_writers(server.url, tenant.write_token, args.seconds))
            total = counts["create"] + counts["list"]
            print(f"32 clients x {args.seconds}s create+list: {total} ok ({counts['create']} creates, "
                  f"{counts['list']} lists), 5xx {counts['5xx']}, 4xx {counts['other_errors']}")
            projects = len(httpx.get(f"{server.url}/api/v1/projects",
                                     headers={"Authorization": f"Bearer {tenant.read_token}"}).json()["data"])
            print(f"projects stored {projects} == creates answered {counts['create']}: {projects == counts['create']}")
            locked = server.log().count("database is locked")
            print(f"'database is locked' in server log: {locked}")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
