"""Hostile gzip bodies (issue 12): how long the server stalls, and how much memory it takes.

    .venv/bin/python bench/gzip_bodies.py

Starts a real `tms serve` on a temporary data dir, then sends to POST /api/v1/ingest:
1. a 2 MB body: one valid gzip member followed by 100,000 empty members;
2. six 200 KB bodies at once, each inflating to ~198 MB of JSON whitespace.
Meanwhile a second thread asks GET /healthz every 10 ms; the longest answer is the server's stall
(the event loop could not answer). Peak RSS is the server process's VmHWM. Prints one table.
"""

from __future__ import annotations

import gzip
import sys
import tempfile
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.conftest import ServerProcess, make_tenant_on


class StallProbe:
    """GET /healthz every 10 ms on its own connection; the slowest answer is the stall."""

    def __init__(self, url: str) -> None:
        self.url, self.worst, self._stop = url, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=120) as client:
            while not self._stop.is_set():
                start = time.perf_counter()
                client.get(f"{self.url}/healthz")
                self.worst = max(self.worst, time.perf_counter() - start)
                time.sleep(0.01)

    def __enter__(self) -> StallProbe:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def many_members(project_id: str, members: int = 100_000) -> bytes:
    first = gzip.compress(f'{{"project_id": "{project_id}", "results": []}}'.encode(), mtime=0)
    return first + gzip.compress(b"", mtime=0) * members


def whitespace_bomb(project_id: str, inflated: int = 198 * 1024 * 1024) -> bytes:
    head = f'{{"project_id": "{project_id}", "results": ['.encode()
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    parts = [packer.compress(head)]
    block = b" " * (1024 * 1024)
    for _ in range(inflated // len(block)):
        parts.append(packer.compress(block))
    parts.append(packer.compress(b"]}"))
    parts.append(packer.flush())
    return b"".join(parts)


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        server = ServerProcess(Path(tmp) / "data", {}).start()
        server.data_dir.mkdir(exist_ok=True)
        try:
            tenant = make_tenant_on(server)
            project_id = tenant.create_project()["id"]
            headers = {"Authorization": f"Bearer {tenant.write_token}", "Content-Type": "application/json",
                       "Content-Encoding": "gzip"}
            rows = []

            body = many_members(project_id)
            with StallProbe(server.url) as probe, httpx.Client(timeout=300) as client:
                start = time.perf_counter()
                answer = client.post(f"{server.url}/api/v1/ingest", content=body, headers=headers)
                took = time.perf_counter() - start
            rows.append((f"{len(body) / 1e6:.1f} MB, 1 + 100,000 empty gzip members", f"HTTP {answer.status_code}",
                         f"{took:.2f} s", f"{probe.worst:.2f} s"))

            bomb = whitespace_bomb(project_id)
            rss_before = peak_rss_mb(server.process.pid)  # type: ignore[union-attr]

            def send(_: int) -> int:
                with httpx.Client(timeout=600) as client:
                    return client.post(f"{server.url}/api/v1/ingest", content=bomb, headers=headers).status_code

            with StallProbe(server.url) as probe, ThreadPoolExecutor(6) as pool:
                start = time.perf_counter()
                statuses = sorted(pool.map(send, range(6)))
                took = time.perf_counter() - start
            rss = peak_rss_mb(server.process.pid)  # type: ignore[union-attr]
            rows.append((f"6 at once x {len(bomb) / 1e3:.0f} KB inflating to 198 MB each",
                         "HTTP " + ",".join(map(str, statuses)), f"{took:.2f} s",
                         f"{probe.worst:.2f} s; peak RSS {rss_before:.0f} -> {rss:.0f} MB"))
        finally:
            server.stop()
    print("| body | answer | request(s) took | worst /healthz stall |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
