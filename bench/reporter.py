"""Reporter benchmark (issue 6): parse a 50,000-testcase JUnit file; time and peak RSS.

    .venv/bin/python bench/reporter.py [--cases 50000] [--append]

Generates a realistic report (nested suites, 5% failures with stack traces and output, 3% errors,
4% skips, properties, a tag on every tenth test), then parses it in a fresh subprocess that reports
its own wall time and peak RSS (VmHWM from /proc, ru_maxrss as a fallback): parse_junit, retry
folding and mapping to ingest items, then gzip of the request body. Targets: parse < 2 s, peak RSS
< 150 MB. --append adds the command and the numbers to bench/README.md under "## Reporter (issue 6)".
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "bench" / "README.md"
HEADING = "## Reporter (issue 6)"

CHILD = r"""
import json, resource, sys, time
def peak_mb():
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
from tms.reporter.junit import parse_junit
from tms.reporter.mapping import to_items
from tms.reporter.model import fold_retries
from tms.reporter.upload import compress
baseline = peak_mb()
start, cpu = time.perf_counter(), time.process_time()
outcomes = parse_junit(sys.argv[1])
parsed, parse_cpu = time.perf_counter(), time.process_time() - cpu
items = to_items(fold_retries(outcomes))
mapped = time.perf_counter()
body = compress({"project_id": "p", "results": [i.result for i in items]})
done = time.perf_counter()
print(json.dumps({"tests": len(outcomes), "results": len(items), "parse_s": parsed - start, "parse_cpu_s": parse_cpu,
                  "map_s": mapped - parsed, "gzip_s": done - mapped, "gzip_bytes": len(body),
                  "baseline_mb": baseline, "peak_mb": peak_mb()}))
"""


def generate(path: Path, cases: int) -> None:
    """A pytest/Surefire-like report: 50 packages x N/50 cases in nested suites."""
    per_suite = max(1, cases // 50)
    written = 0
    with path.open("w", encoding="utf-8") as out:
        out.write('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="bench">\n')
        for suite in range(50):
            if written >= cases:
                break
            out.write(f'  <testsuite name="pkg{suite}" timestamp="2026-11-20T09:00:00Z" tests="{per_suite}">\n')
            out.write('    <properties><property name="go.version" value="go1.22"/></properties>\n')
            out.write(f'    <testsuite name="pkg{suite}.Module">\n')
            for n in range(per_suite if suite < 49 else cases - written):
                written += 1
                name = f"test_case_{n}_with_a_realistic_length_name"
                if n % 10 == 0:
                    name += f" @service('BENCH-{n}')"
                out.write(f'      <testcase classname="pkg{suite}.module.TestClass{n % 20}" name="{name}" '
                          f'time="0.{n % 1000:03d}">')
                kind = n % 100
                if kind < 5:
                    out.write('<failure message="AssertionError: expected 3, got 2" type="AssertionError">'
                              + "Traceback (most recent call last):\n" + "  File x.py, line 1, in f\n" * 12
                              + "AssertionError: expected 3, got 2</failure>"
                              + "<system-out>" + "log line of the test\n" * 20 + "</system-out>")
                elif kind < 8:
                    out.write('<error message="RuntimeError: db down">RuntimeError: db down\n  at x</error>')
                elif kind < 12:
                    out.write('<skipped message="not ready"/>')
                elif kind < 15:
                    out.write('<properties><property name="service" value="PROP-1"/></properties>')
                out.write("</testcase>\n")
            out.write("    </testsuite>\n  </testsuite>\n")
        out.write("</testsuites>\n")


def measure(report: Path) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", CHILD, str(report)], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=3, help="parse runs; the best time and the worst RSS count")
    parser.add_argument("--append", action="store_true", help="append the numbers to bench/README.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        generate(report, args.cases)
        size_mb = report.stat().st_size / 1e6
        runs = [measure(report) for _ in range(args.runs)]
    best = min(runs, key=lambda r: r["parse_s"])
    peak = max(r["peak_mb"] for r in runs)
    lines = [
        f"| cases | file | parse wall (CPU), best of {args.runs} | map to items | gzip body | peak RSS (baseline) |",
        "|---|---|---|---|---|---|",
        f"| {best['tests']:,} | {size_mb:.1f} MB | {best['parse_s']:.2f} s ({best['parse_cpu_s']:.2f} s) | "
        f"{best['map_s']:.2f} s | "
        f"{best['gzip_s']:.2f} s, {best['gzip_bytes'] / 1e6:.1f} MB | {peak:.0f} MB ({best['baseline_mb']:.0f} MB) |",
    ]
    load = os.getloadavg()[0]
    verdict = (f"load average {load:.1f} on {os.cpu_count()} cores; "
               f"targets: parse < 2 s {'met' if best['parse_s'] < 2 else 'MISSED'}, "
               f"peak RSS < 150 MB {'met' if peak < 150 else 'MISSED'}")
    print("\n".join(lines))
    print(verdict)
    if args.append:
        _append(lines, verdict, args)
    return 0


def _append(lines: list[str], verdict: str, args: argparse.Namespace) -> None:
    """Adds a dated entry under our own heading, never touching the other sections."""
    text = README.read_text() if README.exists() else "# Benchmarks\n"
    command = f".venv/bin/python bench/reporter.py --cases {args.cases} --runs {args.runs}"
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    entry = (f"\n{stamp}, {platform.python_implementation()} {platform.python_version()}, "
             f"`{command}`:\n\n" + "\n".join(lines) + f"\n\n{verdict}.\n")
    if HEADING not in text:
        text = text.rstrip("\n") + f"\n\n{HEADING}\n\nParse of a generated JUnit report in a fresh process "
        text += "(bench/reporter.py): parse_junit, retry folding, mapping, gzip of the ingest body.\n"
        README.write_text(text + entry)
        return
    # insert at the end of our section: before the next "## " heading, or at the end of the file
    start = text.index(HEADING) + len(HEADING)
    following = text.find("\n## ", start)
    end = len(text) if following < 0 else following
    README.write_text(text[:end].rstrip("\n") + "\n" + entry + text[end:])


if __name__ == "__main__":
    raise SystemExit(main())
