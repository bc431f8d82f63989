"""`tms ingest` of a report directory with 200 screenshots (issue 28: "< 5 s"), local folder vs S3.

    .venv/bin/python bench/report_screenshots.py [--shots 200] [--kb 200] [--rounds 3]

Writes a JUnit report whose 200 failing cases each name their own screenshot
(`[[ATTACHMENT|shots/case-N.png]]`, distinct bytes, `--kb` KB each, as a browser test suite leaves
them), then for each store (a local folder; S3 on a fresh bucket of moto's server on loopback, from
tests/s3_server.py) starts a real `tms serve` and times the whole `tms ingest REPORT_DIR --project`
command as CI runs it: a fresh process that parses the report, ingests the results and uploads every
screenshot to its result (one request per file). Median of `--rounds` (each a new run, same files).
Prints one table; copy it into bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import ServerProcess, make_tenant_on  # noqa: E402
from tests.s3_server import S3Server  # noqa: E402


def png(size: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1280, 720, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", os.urandom(size)) + chunk(b"IEND", b"")


def write_report(directory: Path, shots: int, kb: int) -> None:
    (directory / "shots").mkdir(parents=True)
    cases = []
    for n in range(shots):
        (directory / "shots" / f"case-{n}.png").write_bytes(png(kb * 1024))
        cases.append(f'<testcase classname="checkout.Ui" name="step {n}" time="0.5"><failure message="boom">'
                     f"AssertionError: boom {n}</failure><system-out>[[ATTACHMENT|shots/case-{n}.png]]"
                     "</system-out></testcase>")
    (directory / "results.xml").write_text(
        f'<?xml version="1.0"?><testsuite name="ui" tests="{shots}" failures="{shots}">{"".join(cases)}</testsuite>')


def measure(kind: str, root: Path, report: Path, args: argparse.Namespace, s3: S3Server | None) -> list[float]:
    data_dir = root / f"data-{kind}"
    data_dir.mkdir()
    server = ServerProcess(data_dir, s3.env(s3.new_bucket()) if s3 else {}).start()
    try:
        tenant = make_tenant_on(server)
        project = tenant.create_project("bench")
        env = {**os.environ, "TMS_URL": server.url, "TMS_TOKEN": tenant.write_token}
        env.pop("TMS_CONFIG", None)
        times = []
        for _ in range(args.rounds):
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "tms", "ingest", str(report), "--project", project["id"]],
                                  env=env, capture_output=True, text=True, timeout=600)
            times.append(time.perf_counter() - started)
            if f"attachments: {args.shots} uploaded" not in done.stdout + done.stderr:
                raise SystemExit(f"{kind}: not every screenshot was uploaded:\n{done.stdout}\n{done.stderr}")
        return times
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shots", type=int, default=200)
    parser.add_argument("--kb", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tms-bench-shots-") as tmp:
        root = Path(tmp)
        report = root / "report"
        write_report(report, args.shots, args.kb)
        s3 = S3Server(root / "moto.log").start()
        try:
            results = {kind: measure(kind, root, report, args, s3 if kind == "s3" else None)
                       for kind in ("local", "s3")}
        finally:
            s3.stop()
    print(f"| `tms ingest` of a JUnit report + {args.shots} screenshots of {args.kb} KB, median of {args.rounds} "
          "(min-max) | local | S3 (moto) |")
    print("|---|---|---|")
    cells = [f"{statistics.median(t):.2f} s ({min(t):.2f}-{max(t):.2f})" for t in results.values()]
    print(f"| whole command (parse, ingest, {args.shots} uploads) | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
