"""Attachments on object storage (issue 28): the local folder against moto's S3 server on loopback.

    .venv/bin/python bench/attachments_s3.py [--mb 100] [--rounds 2] [--small 40]

For each store (local, s3) starts a real `tms serve` (the s3 one on a fresh bucket of a moto server
started here, tests/s3_server.py), warms it up, resets the server's peak RSS, then uploads a
`--mb` MB ZIP `--rounds` times (the client streams it from disk), downloads it once, and uploads and
downloads `--small` distinct 1 MB files one by one (no deduplication: each has its own bytes).
Peak RSS growth is the server's VmHWM after the runs minus after the warm-up (/proc/<pid>/status):
it shows that a 100 MB upload never sits whole in the server's memory (S3: one 8 MiB part at a time).
Moto is a Python server, so the s3 numbers are a floor for a real store on the same host.
Prints one table; copy it into bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import attachments as base  # noqa: E402  (bench/attachments.py: file making, multipart streaming)

from tests.conftest import ServerProcess, make_tenant_on  # noqa: E402
from tests.s3_server import S3Server  # noqa: E402

Rows = list[tuple[str, float, float]]


def measure(kind: str, root: Path, args: argparse.Namespace, s3: S3Server | None) -> tuple[Rows, float]:
    size = args.mb * 1024 * 1024
    data_dir = root / f"data-{kind}"
    data_dir.mkdir()
    env = {"ATTACHMENT_MAX_BYTES": str(size + 1024 * 1024)}
    if s3 is not None:
        env.update(s3.env(s3.new_bucket()))
    server = ServerProcess(data_dir, env).start()
    rows: Rows = []
    try:
        assert server.process is not None
        pid = server.process.pid
        tenant = make_tenant_on(server)
        project = tenant.create_project("bench")
        client = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {tenant.write_token}"},
                              timeout=600)
        result_id = base.add_result(client, project["id"])
        small = root / f"warm-{kind}.zip"
        base.make_file(small, 2 * 1024 * 1024, "zip")
        for _ in range(3):
            _, warm = base.upload(client, result_id, small, "warm.zip")
            client.get(f"/api/v1/attachments/{warm['id']}").raise_for_status()
        base.reset_peak(pid)
        hwm_before = base.status_kib(pid, "VmHWM")

        big = root / f"big-{kind}.zip"
        base.make_file(big, size, "zip")
        timings = []
        attachment: dict = {}
        for _ in range(args.rounds):
            elapsed, attachment = base.upload(client, result_id, big, "big.zip")
            timings.append(elapsed)
        rows.append((f"{kind}: upload {args.mb} MB (p50 of {args.rounds})", statistics.median(timings),
                     size / statistics.median(timings) / 1e6))
        start = time.perf_counter()
        received = 0
        with client.stream("GET", f"/api/v1/attachments/{attachment['id']}") as response:
            for block in response.iter_bytes():
                received += len(block)
        elapsed = time.perf_counter() - start
        assert received == size
        rows.append((f"{kind}: download {args.mb} MB", elapsed, size / elapsed / 1e6))
        hwm_after = base.status_kib(pid, "VmHWM")
        big.unlink()

        one = root / f"one-{kind}.zip"
        ids = []
        start = time.perf_counter()
        for i in range(args.small):
            with one.open("wb") as out:  # distinct bytes per file: no deduplication
                out.write(b"PK\x03\x04" + i.to_bytes(4, "big") + os.urandom(1024 * 1024 - 8))
            _, created = base.upload(client, result_id, one, f"one-{i}.zip")
            ids.append(created["id"])
        elapsed = time.perf_counter() - start
        rows.append((f"{kind}: upload 1 MB x {args.small}", elapsed / args.small, args.small * 1.048576 / elapsed))
        start = time.perf_counter()
        for attachment_id in ids:
            client.get(f"/api/v1/attachments/{attachment_id}").raise_for_status()
        elapsed = time.perf_counter() - start
        rows.append((f"{kind}: download 1 MB x {args.small}", elapsed / args.small, args.small * 1.048576 / elapsed))
    finally:
        server.stop()
    return rows, (hwm_after - hwm_before) / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--small", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        s3 = S3Server(root / "moto.log").start()
        try:
            results = {kind: measure(kind, root, args, s3 if kind == "s3" else None) for kind in ("local", "s3")}
        finally:
            s3.stop()
    print("| measure | seconds (per file) | MB/s |")
    print("|---|---|---|")
    for rows, _growth in results.values():
        for label, seconds, rate in rows:
            print(f"| {label} | {seconds:.3f} | {rate:.0f} |")
    print()
    for kind, (_rows, growth) in results.items():
        print(f"{kind}: server peak RSS growth during the {args.mb} MB uploads and download: {growth:.1f} MiB")


if __name__ == "__main__":
    main()
