"""Attachment benchmark (issue 3): a 50 MB upload streams to disk without growing the server's memory.

    .venv/bin/python bench/attachments.py [--mb 50] [--rounds 5]

Starts a real `tms serve` with ATTACHMENT_MAX_BYTES raised above the file size, warms it up with a
small upload and download, then uploads the big file `--rounds` times as a ZIP (magic-byte check
only) and as a TXT (every byte UTF-8 decoded), and downloads it once. The client streams the
multipart body from disk, so it never holds the file either. Peak RSS growth is the server's
VmHWM after the runs minus VmHWM after the warm-up (/proc/<pid>/status). Prints one table; copy it
into bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.conftest import ServerProcess, make_tenant_on

BOUNDARY = "benchboundary7MA4YWxkTrZu0gW"
CHUNK = 256 * 1024


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def reset_peak(pid: int) -> bool:
    """Writing 5 to clear_refs resets VmHWM to the current RSS (Linux >= 4.0, own processes)."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def make_file(path: Path, size: int, kind: str) -> None:
    with path.open("wb") as out:
        if kind == "zip":
            out.write(b"PK\x03\x04")
            written = 4
            block = os.urandom(CHUNK)
        else:
            written = 0
            block = (b"2026-11-22 05:00:00 INFO step passed \xe2\x9c\x93\n" * (CHUNK // 44 + 1))[:CHUNK]
        while written < size:
            piece = block[: size - written]
            out.write(piece)
            written += len(piece)


def multipart_body(path: Path, name: str) -> tuple[Iterator[bytes], int]:
    head = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    tail = f"\r\n--{BOUNDARY}--\r\n".encode()

    def chunks() -> Iterator[bytes]:
        yield head
        with path.open("rb") as handle:
            while block := handle.read(CHUNK):
                yield block
        yield tail

    return chunks(), len(head) + path.stat().st_size + len(tail)


def add_result(client: httpx.Client, project_id: str) -> str:
    """One FAILED result of a new case in a new run, through the public API."""
    feature = "Feature: Bench\n  Scenario: s\n    Given a\n    When b\n    Then c\n"
    case = client.post("/api/v1/cases", json={"title": "t", "bdd_content": feature, "project_id": project_id})
    run = client.post("/api/v1/runs", json={"name": "bench", "project_id": project_id})
    run_id = run.json()["data"]["id"]
    client.post(
        f"/api/v1/runs/{run_id}/results",
        json={"results": [{"test_case_id": case.json()["data"]["id"], "status": "FAILED"}]},
    ).raise_for_status()
    return str(client.get(f"/api/v1/runs/{run_id}/results").json()["data"][0]["id"])


def upload(client: httpx.Client, result_id: str, path: Path, name: str) -> tuple[float, dict]:
    body, length = multipart_body(path, name)
    start = time.perf_counter()
    response = client.post(
        f"/api/v1/results/{result_id}/attachments",
        content=body,
        headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}", "Content-Length": str(length)},
    )
    elapsed = time.perf_counter() - start
    assert response.status_code == 201, response.text
    return elapsed, response.json()["data"][0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    size = args.mb * 1024 * 1024

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data_dir = root / "data"
        data_dir.mkdir()
        server = ServerProcess(data_dir, {"ATTACHMENT_MAX_BYTES": str(size + 1024 * 1024)}).start()
        try:
            assert server.process is not None
            pid = server.process.pid
            tenant = make_tenant_on(server)
            project = tenant.create_project("bench")
            client = httpx.Client(
                base_url=server.url, headers={"Authorization": f"Bearer {tenant.write_token}"}, timeout=300
            )
            result_id = add_result(client, project["id"])

            small = root / "small.zip"
            make_file(small, 2 * 1024 * 1024, "zip")
            for _ in range(3):
                _, warm = upload(client, result_id, small, "warm.zip")
                client.get(f"/api/v1/attachments/{warm['id']}").raise_for_status()
            # start-up peaks higher than an idle server (imports, migrations): reset the high-water
            # mark to the current RSS so the growth below is the uploads' alone
            reset = reset_peak(pid)
            hwm_before = status_kib(pid, "VmHWM")
            rss_before = status_kib(pid, "VmRSS")

            rows = []
            for kind in ("zip", "txt"):
                big = root / f"big.{kind}"
                make_file(big, size, kind)
                timings = []
                attachment: dict = {}
                for _ in range(args.rounds):
                    elapsed, attachment = upload(client, result_id, big, f"big.{kind}")
                    assert attachment["size"] == size
                    timings.append(elapsed)
                p50 = statistics.median(timings)
                rows.append((f"upload {args.mb} MB {kind.upper()}", p50, size / p50 / 1e6))
                big.unlink()

            start = time.perf_counter()
            received = 0
            with client.stream("GET", f"/api/v1/attachments/{attachment['id']}") as response:
                for block in response.iter_bytes():
                    received += len(block)
            elapsed = time.perf_counter() - start
            assert received == size
            rows.append((f"download {args.mb} MB TXT", elapsed, size / elapsed / 1e6))

            hwm_after = status_kib(pid, "VmHWM")
            rss_after = status_kib(pid, "VmRSS")
        finally:
            server.stop()

    print(f"| measure ({args.rounds} rounds, p50) | seconds | MB/s |")
    print("|---|---|---|")
    for label, seconds, rate in rows:
        print(f"| {label} | {seconds:.3f} | {rate:.0f} |")
    print()
    print(f"VmHWM reset after warm-up: {'yes' if reset else 'no (growth is a lower bound)'}")
    print(f"server VmHWM after warm-up {hwm_before / 1024:.1f} MiB, after the big uploads "
          f"{hwm_after / 1024:.1f} MiB: peak RSS growth {(hwm_after - hwm_before) / 1024:.1f} MiB "
          f"for {args.mb} MB files (VmRSS {rss_before / 1024:.1f} -> {rss_after / 1024:.1f} MiB)")


if __name__ == "__main__":
    main()
