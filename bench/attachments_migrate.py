"""`tms admin attachments migrate --to s3` of 10,000 files (issue 28): time, peak memory, resume.

    .venv/bin/python bench/attachments_migrate.py [--files 10000] [--small 1000] [--kb 4]
    TMS_TEST_DATABASE=postgres .venv/bin/python bench/attachments_migrate.py   # on a throwaway cluster

Starts moto's S3 server (tests/s3_server.py) and a real `tms serve` on the local folder, and uploads
`--files` distinct ZIP files of `--kb` KB through the real upload path (`POST
/api/v1/results/{id}/attachments`, 20 files a request, 4 clients): the rows, `attachment_objects`
and content-addressed files are exactly those a team's uploads leave. The server is stopped, then
the real command runs as its own process, each time into a fresh bucket (`attachment_copies`
emptied in between, so nothing counts as already copied):

1. after the first `--small` uploads: the whole migration (memory must not grow with the count);
2. after all `--files`: the whole migration, timed;
3. the same killed (SIGKILL) once its progress bar passes half, then run again: the second run must
   copy only the rest, verify all, and name the switch.

Each run's wall time, CPU time (user + system) and peak RSS come from `os.wait4` on the command's
process; every run's output is checked (copied count, "N of N verified", the switch line) and the
bucket listed (one key per object). Prints one table; copy it into bench/README.md with `uptime`.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import attachments as base  # noqa: E402  (bench/attachments.py: add_result)

from tests import postgres_cluster  # noqa: E402
from tests.conftest import ServerProcess, connect_db, make_tenant_on, storage_env  # noqa: E402
from tests.s3_server import S3Server  # noqa: E402

BOUNDARY = "migratebench4YWxkTrZu0gW"
PER_REQUEST = 20
CLIENTS = 4
PROGRESS = re.compile(rb"(\d+)/(\d+) objects")


@dataclass
class Run:
    label: str
    wall: float
    cpu: float
    peak_mib: float
    code: int
    stdout: str


def upload_batch(client: httpx.Client, result_id: str, first: int, count: int, kb: int) -> None:
    parts = []
    for i in range(first, first + count):
        # distinct bytes per file (a counter then random bytes): no two share an object
        data = b"PK\x03\x04" + i.to_bytes(8, "big") + os.urandom(kb * 1024 - 12)
        parts.append(f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="f{i}.zip"\r\n'
                     "Content-Type: application/zip\r\n\r\n".encode() + data + b"\r\n")
    body = b"".join(parts) + f"--{BOUNDARY}--\r\n".encode()
    response = client.post(f"/api/v1/results/{result_id}/attachments", content=body,
                           headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"})
    assert response.status_code == 201, response.text


def seed(server: ServerProcess, token: str, result_id: str, first: int, last: int, kb: int) -> float:
    start = time.perf_counter()
    batches = [(i, min(PER_REQUEST, last - i)) for i in range(first, last, PER_REQUEST)]
    with ThreadPoolExecutor(CLIENTS) as pool:
        clients = [httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=120)
                   for _ in range(CLIENTS)]
        list(pool.map(lambda job: upload_batch(clients[job[0] % CLIENTS], result_id, job[1][0], job[1][1], kb),
                      enumerate(batches)))
    return time.perf_counter() - start


def migrate(label: str, data_dir: Path, env: dict[str, str], kill_at: int = 0) -> Run:
    """Runs the real command; with ``kill_at``, SIGKILLs it once its progress bar shows that many done."""
    environ = {**os.environ, **storage_env(data_dir), **env}
    environ.pop("TMS_CONFIG", None)
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "tms", "admin", "attachments", "migrate", "--to", "s3"],
                               cwd=data_dir.parent, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(process.stdout.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    killed = False
    while chunk := os.read(process.stderr.fileno(), 65536):
        if kill_at and not killed:
            done = [int(m.group(1)) for m in PROGRESS.finditer(chunk)]
            if done and done[-1] >= kill_at:
                os.kill(process.pid, signal.SIGKILL)
                killed = True
    _pid, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    reader.join()
    return Run(label, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, process.returncode,
               b"".join(out).decode())


def forget_copies(data_dir: Path) -> None:
    connection = connect_db(data_dir / "tms.db")
    connection.execute("DELETE FROM attachment_copies")
    connection.commit()
    connection.close()


def check(run: Run, s3: S3Server, bucket: str, total: int, copied: int, already: int = 0) -> None:
    assert run.code == 0, run.stdout
    assert f"copied {copied} objects" in run.stdout and f"{already} were already there" in run.stdout, run.stdout
    assert f"{total} of {total} verified in s3" in run.stdout and "Switch now" in run.stdout, run.stdout
    assert len(s3.keys(bucket)) == total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--kb", type=int, default=4)
    args = parser.parse_args()
    runs: list[Run] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        s3 = S3Server(root / "moto.log").start()
        data_dir = root / "data"
        data_dir.mkdir()
        server = ServerProcess(data_dir, {}).start()
        try:
            tenant = make_tenant_on(server)
            project = tenant.create_project("bench")
            client = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {tenant.write_token}"},
                                  timeout=120)
            result_id = base.add_result(client, project["id"])
            seeded = seed(server, tenant.write_token, result_id, 0, args.small, args.kb)
            server.stop()

            def settings(bucket: str) -> dict[str, str]:
                return {k: v for k, v in s3.env(bucket).items() if k != "TMS_ATTACHMENTS_STORE"}

            bucket = s3.new_bucket()
            runs.append(migrate(f"{args.small:,} objects", data_dir, settings(bucket)))
            check(runs[-1], s3, bucket, args.small, args.small)

            server.start()
            seeded += seed(server, tenant.write_token, result_id, args.small, args.files, args.kb)
            server.stop()
            forget_copies(data_dir)
            bucket = s3.new_bucket()
            runs.append(migrate(f"{args.files:,} objects", data_dir, settings(bucket)))
            check(runs[-1], s3, bucket, args.files, args.files)

            forget_copies(data_dir)
            bucket = s3.new_bucket()
            runs.append(migrate(f"{args.files:,}, killed at half", data_dir, settings(bucket), kill_at=args.files // 2))
            assert runs[-1].code == -signal.SIGKILL, runs[-1].stdout
            resumed = migrate(f"{args.files:,}, resumed", data_dir, settings(bucket))
            runs.append(resumed)
            already = int(re.search(r"(\d+) were already there", resumed.stdout).group(1))  # type: ignore[union-attr]
            assert args.files // 2 <= already < args.files, resumed.stdout
            check(resumed, s3, bucket, args.files, args.files - already, already)
        finally:
            server.stop()
            s3.stop()
    backend = "PostgreSQL" if postgres_cluster.selected() else "SQLite"
    print(f"{backend}; {args.files:,} files of {args.kb} KB uploaded through the API in {seeded:.0f} s")
    print("| migrate --to s3 | wall s | CPU s | peak RSS MiB | objects/s |")
    print("|---|---|---|---|---|")
    for run in runs:
        copied = int(re.search(r"copied (\d+) objects", run.stdout).group(1)) if run.code == 0 else 0  # type: ignore[union-attr]
        rate = f"{copied / run.wall:.0f}" if copied else "-"
        print(f"| {run.label} | {run.wall:.1f} | {run.cpu:.1f} | {run.peak_mib:.0f} | {rate} |")


if __name__ == "__main__":
    main()
