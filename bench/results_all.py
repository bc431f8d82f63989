"""GET /runs/{id}/results without `limit` on a 100,000-result run: time, server memory, event loop.

    .venv/bin/python bench/results_all.py [--results 100000] [--requests 3]
    TMS_TEST_DATABASE=postgres .venv/bin/python bench/results_all.py …   # the same on a throwaway cluster

Starts a real `tms serve`, ingests one run of ``--results`` results (half linked to library cases,
half unlinked; gzip, one request), then reads the whole run without `limit` ``--requests`` times,
streaming the answer. Reports the time to the first byte and to the last, the answer's size, the
server's peak RSS during the reads over its RSS before them (the kernel's high-water mark is reset
first: /proc/<pid>/clear_refs), and the slowest answer of a small request (GET /runs/{id}) sent every
20 ms meanwhile: the event loop stays free while the run is read. For comparison, the same rows read
by pages of 5,000 (limit/offset).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.ingest import items, make_cases, proc_status
from tests import postgres_cluster
from tests.conftest import ServerProcess, make_tenant_on


def reset_peak(pid: int) -> bool:
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--results", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=3)
    args = parser.parse_args()
    backend = "PostgreSQL" if postgres_cluster.selected() else "SQLite"
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        data_dir.mkdir()
        server = ServerProcess(data_dir, {}).start()
        assert server.process is not None
        pid = server.process.pid
        try:
            tenant = make_tenant_on(server, "All results")
            project = tenant.create_project("Big run")
            codes = make_cases(server, tenant, project["id"], args.results // 2)
            body = gzip.compress(json.dumps({"project_id": project["id"],
                                             "results": items(args.results, codes)}).encode(), 6)
            api = tenant.api
            response = api.post("/api/v1/ingest", content=body, timeout=600,
                                headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})
            assert response.status_code == 201, response.text[:500]
            run_id = response.json()["run_id"]
            url = f"/api/v1/runs/{run_id}/results"
            api.get(url, params={"limit": 10})  # warm up

            print(f"\n{backend}, one run of {args.results:,} results (half linked), "
                  f"{args.requests} reads without limit\n")
            print("| read | first byte s | total s | MB | rows | peak RSS growth MB | slowest other request ms |")
            print("|---|---|---|---|---|---|---|")
            for _ in range(args.requests):
                before = proc_status(pid, "VmRSS")
                exact_peak = reset_peak(pid)
                stop, worst, peak_seen = threading.Event(), [0.0], [before]

                def probe(stop: threading.Event = stop, worst: list[float] = worst,
                          peak_seen: list[int] = peak_seen) -> None:
                    with httpx.Client(base_url=server.url, headers=api.headers, timeout=60) as other:
                        while not stop.is_set():
                            start = time.perf_counter()
                            other.get(f"/api/v1/runs/{run_id}")
                            worst[0] = max(worst[0], time.perf_counter() - start)
                            peak_seen[0] = max(peak_seen[0], proc_status(pid, "VmRSS"))
                            time.sleep(0.02)

                prober = threading.Thread(target=probe)
                prober.start()
                start = time.perf_counter()
                first = 0.0
                parts: list[bytes] = []
                with api.stream("GET", url, timeout=600) as streamed:
                    assert streamed.status_code == 200
                    for part in streamed.iter_bytes():
                        if not first:
                            first = time.perf_counter() - start
                        parts.append(part)
                elapsed = time.perf_counter() - start
                stop.set()
                prober.join()
                peak = proc_status(pid, "VmHWM") if exact_peak else peak_seen[0]
                raw = b"".join(parts)
                answer = msgspec.json.decode(raw)
                rows = len(answer["data"])
                assert answer["pagination"]["total"] == rows == args.results, answer["pagination"]
                print(f"| without limit | {first:.3f} | {elapsed:.2f} | {len(raw) / 1e6:.1f} | {rows:,} | "
                      f"{(peak - before) / 1024:.0f} | {worst[0] * 1000:.0f} |")

            before = proc_status(pid, "VmRSS")
            exact_peak = reset_peak(pid)
            start = time.perf_counter()
            total_rows = 0
            for offset in range(0, args.results, 5_000):
                page = api.get(url, params={"limit": 5_000, "offset": offset}, timeout=600)
                total_rows += len(page.json()["data"])
            elapsed = time.perf_counter() - start
            peak = proc_status(pid, "VmHWM") if exact_peak else proc_status(pid, "VmRSS")
            print(f"| pages of 5,000 (limit/offset) | - | {elapsed:.2f} | - | {total_rows:,} | "
                  f"{(peak - before) / 1024:.0f} | - |")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
