"""Parser benchmark (issue 16): every report format with 50,000 tests, and a 100-file Allure directory.

    .venv/bin/python bench/parsers.py [--tests 50000] [--runs 3] [--only ctrf,trx] [--baseline REF] [--append]

For each format a realistic report is generated (nested suites, 5% failures with a stack and output,
3% errors, 4% skips, 2% retried tests, a `@service` tag on every tenth test), then read in a fresh
subprocess that reports its own wall time, CPU time and peak RSS (VmHWM): exactly what `tms ingest`
does before sending (finding the files, detection, parse, retry folding, mapping to ingest items).
--baseline REF also measures the `tms` package of git revision REF (exported to a temporary
directory) on the same reports, its runs alternating with the working tree's, so a before/after
pair shares the machine's load. Targets: < 2 s and < 150 MB for 50,000 tests; < 1 s for a 100-file
Allure results directory. --append records the table in bench/README.md under
"## Report formats (issue 16)".
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "bench" / "README.md"
HEADING = "## Report formats (issue 16)"
STACK = "Traceback (most recent call last):\n" + "  File \"shop/checkout.py\", line 10, in pay\n" * 12

CHILD = r"""
import io, json, os, resource, sys, time
def peak_mb():
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
sys.path.insert(0, os.getcwd())  # the tree measured: the working tree, or the --baseline export
from tms.reporter.cli import _parse_all
from tms.reporter.console import Console
from tms.reporter.files import expand
from tms.reporter.mapping import to_items
baseline = peak_mb()
path = sys.argv[1]
start, cpu = time.perf_counter(), time.process_time()
files, _ = expand([path])
outcomes, parsed, errors = _parse_all([path], files, Console(None, False, io.StringIO(), io.StringIO()))
assert not errors and parsed, (errors[:1], len(parsed))
read = time.perf_counter()
items = to_items(outcomes)
done = time.perf_counter()
print(json.dumps({"tests": len(outcomes), "results": len(items), "parse_s": read - start,
                  "cpu_s": time.process_time() - cpu, "total_s": done - start, "baseline_mb": baseline,
                  "peak_mb": peak_mb(), "tree": os.getcwd()}))
"""


def kind_of(n: int) -> str:
    k = n % 100
    return "fail" if k < 5 else "error" if k < 8 else "skip" if k < 12 else "retry" if k < 14 else "pass"


def name_of(n: int) -> str:
    name = f"test case {n} with a realistic length name"
    return name + f" @service('BENCH-{n}')" if n % 10 == 0 else name


def gen_ctrf(path: Path, count: int) -> None:
    status = {"fail": "failed", "error": "failed", "skip": "skipped", "retry": "passed", "pass": "passed"}
    with path.open("w") as out:
        out.write('{"reportFormat":"CTRF","specVersion":"0.0.0","results":{"tool":{"name":"jest"},"tests":[')
        for n in range(count):
            k = kind_of(n)
            test = {"name": name_of(n), "status": status[k], "duration": n % 900, "start": 1795455137000 + n,
                    "suite": ["pkg", f"module {n % 50}"], "tags": ["@smoke"], "filePath": f"tests/m{n % 50}.test.js"}
            if k in ("fail", "error"):
                test.update(message="AssertionError: expected 3, got 2", trace=STACK)
            if k == "retry":
                test.update(retries=1, flaky=True)
            out.write(("," if n else "") + json.dumps(test))
        out.write("]}}")


def gen_playwright(path: Path, count: int) -> None:
    files = []
    for f in range(0, count, 500):
        specs = []
        for n in range(f, min(count, f + 500)):
            k = kind_of(n)
            result = {"workerIndex": 0, "status": "passed", "duration": n % 900, "retry": 0,
                      "startTime": "2026-11-23T10:00:00.000Z", "errors": [], "stdout": [], "stderr": [],
                      "attachments": []}
            results = [result]
            status = "expected"
            if k in ("fail", "error"):
                err = {"message": "Error: expect(received).toBe(expected)", "stack": STACK}
                result.update(status="failed", error=err, errors=[err],
                              attachments=[{"name": "screenshot", "contentType": "image/png",
                                            "path": f"/ci/test-results/t{n}/test-failed-1.png"}])
                status = "unexpected"
            elif k == "skip":
                result["status"] = "skipped"
                status = "skipped"
            elif k == "retry":
                results = [{**result, "status": "failed", "error": {"message": "flaky"}}, {**result, "retry": 1}]
                status = "flaky"
            specs.append({"title": name_of(n), "ok": True, "tags": [], "id": str(n), "file": "a.spec.ts",
                          "line": 1, "column": 1, "tests": [{"timeout": 30000, "annotations": [],
                                                             "expectedStatus": "passed", "projectId": "chromium",
                                                             "projectName": "chromium", "results": results,
                                                             "status": status}]})
        files.append({"title": f"spec{f}.spec.ts", "file": f"spec{f}.spec.ts", "line": 0, "column": 0, "specs": [],
                      "suites": [{"title": "describe", "file": f"spec{f}.spec.ts", "line": 1, "column": 1,
                                  "specs": specs}]})
    path.write_text(json.dumps({"config": {"rootDir": "/ci", "projects": []}, "suites": files, "errors": [],
                               "stats": {}}))


def gen_allure(path: Path, count: int) -> None:
    path.mkdir()
    status = {"fail": "failed", "error": "broken", "skip": "skipped", "retry": "passed", "pass": "passed"}
    for n in range(count):
        k = kind_of(n)
        result = {"uuid": f"u{n}", "historyId": f"h{n}", "name": name_of(n), "fullName": f"m.t{n}",
                  "status": status[k], "stage": "finished", "start": 1795455137000 + n, "stop": 1795455137050 + n,
                  "labels": [{"name": "suite", "value": f"module {n % 50}"}, {"name": "tag", "value": "smoke"},
                             {"name": "framework", "value": "pytest"}],
                  "steps": [{"name": "step", "status": "passed", "steps": []}], "attachments": [], "parameters": []}
        if k in ("fail", "error"):
            result["statusDetails"] = {"message": "AssertionError: expected 3, got 2", "trace": STACK}
        (path / f"{n:08d}-result.json").write_text(json.dumps(result))
        if k == "retry":
            retry = {**result, "uuid": f"r{n}", "status": "failed", "start": result["start"] - 100}
            (path / f"{n:08d}r-result.json").write_text(json.dumps(retry))


def _xml(path: Path, head: str, body: Callable[[int], str], tail: str, count: int) -> None:
    with path.open("w") as out:
        out.write(head)
        for n in range(count):
            out.write(body(n))
        out.write(tail)


def gen_trx(path: Path, count: int) -> None:
    outcome = {"fail": "Failed", "error": "Error", "skip": "NotExecuted", "retry": "Passed", "pass": "Passed"}

    def result(n: int) -> str:
        k = kind_of(n)
        inner = ""
        if k in ("fail", "error"):
            inner = (f"<Output><StdOut>log line\n</StdOut><ErrorInfo><Message>Assert.AreEqual failed.</Message>"
                     f"<StackTrace>{escape(STACK)}</StackTrace></ErrorInfo></Output>")
        return (f'<UnitTestResult executionId="e{n}" testId="t{n}" testName={quoteattr(name_of(n))} '
                f'duration="00:00:00.{n % 1000:03d}0000" startTime="2026-11-23T10:00:00.0000000+00:00" '
                f'outcome="{outcome[k]}">{inner}</UnitTestResult>\n')

    with path.open("w") as out:
        out.write('<?xml version="1.0"?>\n<TestRun xmlns="http://microsoft.com/schemas/VisualStudio/TeamTest/2010">'
                  "<Results>\n")
        for n in range(count):
            out.write(result(n))
        out.write("</Results><TestDefinitions>\n")
        for n in range(count):
            out.write(f'<UnitTest name="t{n}" id="t{n}" storage="shop.tests.dll"><TestCategory>'
                      f'<TestCategoryItem TestCategory="smoke"/></TestCategory><TestMethod codeBase="x.dll" '
                      f'className="Shop.Tests.Module{n % 50}" name="t{n}"/></UnitTest>\n')
        out.write("</TestDefinitions></TestRun>\n")


def gen_nunit(path: Path, count: int) -> None:
    result = {"fail": 'result="Failed"', "error": 'result="Failed" label="Error"', "skip": 'result="Skipped"',
              "retry": 'result="Passed"', "pass": 'result="Passed"'}

    def case(n: int) -> str:
        k = kind_of(n)
        fixture = "" if n % 500 else (f'</test-suite><test-suite type="TestFixture" name="Fixture{n}">'
                                      if n else f'<test-suite type="TestFixture" name="Fixture{n}">')
        inner = (f"<failure><message>Expected 3 but was 2</message><stack-trace>{escape(STACK)}</stack-trace>"
                 "</failure><output>log line</output>") if k in ("fail", "error") else ""
        return (f'{fixture}<test-case name={quoteattr(name_of(n))} classname="Shop.Module{n % 50}" {result[k]} '
                f'duration="0.{n % 1000:03d}" start-time="2026-11-23 10:00:00Z">'
                f'<properties><property name="Category" value="smoke"/></properties>{inner}</test-case>\n')

    _xml(path, '<?xml version="1.0"?>\n<test-run><test-suite type="Assembly" name="Shop.Tests.dll">', case,
         "</test-suite></test-suite></test-run>\n", count)


def gen_xunit(path: Path, count: int) -> None:
    result = {"fail": "Fail", "error": "Fail", "skip": "Skip", "retry": "Pass", "pass": "Pass"}

    def test(n: int) -> str:
        k = kind_of(n)
        inner = (f'<failure exception-type="Xunit.Sdk.EqualException"><message>Assert.Equal() Failure</message>'
                 f"<stack-trace>{escape(STACK)}</stack-trace></failure>") if k in ("fail", "error") else ""
        if k == "skip":
            inner = "<reason>not ready</reason>"
        return (f'<test name={quoteattr(f"Shop.Module{n % 50}." + name_of(n))} type="Shop.Module{n % 50}" '
                f'method="M{n}" time="0.{n % 1000:03d}" result="{result[k]}"><traits>'
                f'<trait name="Category" value="smoke"/></traits>{inner}</test>\n')

    _xml(path, '<?xml version="1.0"?>\n<assemblies><assembly name="Shop.Tests.dll" run-date="2026-11-23" '
               'run-time="10:00:00"><collection name="Test collection for Shop">', test,
         "</collection></assembly></assemblies>\n", count)


def gen_testng(path: Path, count: int) -> None:
    status = {"fail": "FAIL", "error": "FAIL", "skip": "SKIP", "retry": "PASS", "pass": "PASS"}

    def method(n: int) -> str:
        k = kind_of(n)
        klass = "" if n % 500 else (f'</class><class name="shop.Module{n}">' if n else f'<class name="shop.Module{n}">')
        inner = (f'<exception class="java.lang.AssertionError"><message>expected [3] but found [2]</message>'
                 f"<full-stacktrace>{escape(STACK)}</full-stacktrace></exception>") if k in ("fail", "error") else ""
        retry = ""
        if k == "retry":
            retry = (f'<test-method status="SKIP" signature="m{n}()" name={quoteattr(name_of(n))} duration-ms="3" '
                     f'started-at="2026-11-23T10:00:00Z"><exception class="java.lang.AssertionError"><message>flaky'
                     "</message></exception></test-method>\n")
        return (f'{klass}{retry}<test-method status="{status[k]}" signature="m{n}()" name={quoteattr(name_of(n))} '
                f'duration-ms="{n % 900}" started-at="2026-11-23T10:00:00Z">{inner}</test-method>\n')

    _xml(path, '<?xml version="1.0"?>\n<testng-results><suite name="Shop"><test name="All">', method,
         "</class></test></suite></testng-results>\n", count)


def gen_robot(path: Path, count: int) -> None:
    status = {"fail": "FAIL", "error": "FAIL", "skip": "SKIP", "retry": "PASS", "pass": "PASS"}

    def test(n: int) -> str:
        k = kind_of(n)
        suite = "" if n % 500 else (f'</suite><suite name="Module {n}">' if n else f'<suite name="Module {n}">')
        kw_status = "FAIL" if k in ("fail", "error") else "PASS"
        message = "total mismatch: 2 != 3" if kw_status == "FAIL" else ""
        if k == "retry":
            message = "[RETRY] PASS on 1. retry."
        return (f'{suite}<test name={quoteattr(name_of(n))}><kw name="Check Total" owner="BuiltIn">'
                f'<msg time="2026-11-23T10:00:00" level="INFO">Arguments: [ 2 | 3 ]</msg>'
                f'<status status="{kw_status}" start="2026-11-23T10:00:00" elapsed="0.001"/></kw>'
                f'<tag>smoke</tag><status status="{status[k]}" start="2026-11-23T10:00:00" elapsed="0.{n % 1000:03d}">'
                f"{message}</status></test>\n")

    _xml(path, '<?xml version="1.0"?>\n<robot generator="Robot 7.5"><suite name="Shop">', test,
         "</suite></suite></robot>\n", count)


def gen_gotest(path: Path, count: int) -> None:
    action = {"fail": "fail", "error": "fail", "skip": "skip", "retry": "pass", "pass": "pass"}
    with path.open("w") as out:
        for n in range(count):
            package = f"example.com/shop/m{n % 50}"
            test = f"TestCase{n}/sub_{n % 7}"
            base = f'"Time":"2026-11-23T10:00:00.000Z","Package":"{package}","Test":"{test}"'
            out.write(f'{{{base},"Action":"run"}}\n')
            out.write(f'{{{base},"Action":"output","Output":"=== RUN   {test}\\n"}}\n')
            k = kind_of(n)
            if k in ("fail", "error"):
                line = "    shop_test.go:23: total 1000 over the limit\\n"
                out.write(f'{{{base},"Action":"output","Output":"{line}"}}\n')
            out.write(f'{{{base},"Action":"{action[k]}","Elapsed":0.01}}\n')


def gen_junit(path: Path, count: int) -> None:
    """The issue-6 JUnit report (bench/reporter.py): a calibration row, its parser met the targets."""
    sys.path.insert(0, str(ROOT / "bench"))
    from reporter import generate  # type: ignore[import-not-found]

    generate(path, count)


def gen_robot_big(path: Path, count: int) -> None:
    """A 100 MB Robot output.xml of 2,000 tests whose keywords log 50 kB each: memory must not follow
    the file's size (keyword logs are dropped as they end)."""
    chunk = "x" * 1000

    def test(n: int) -> str:
        logs = "".join(f'<msg time="2026-11-23T10:00:00" level="INFO">{chunk}</msg>' for _ in range(50))
        return (f'<test name="t{n}"><kw name="Log Many" owner="BuiltIn">{logs}'
                '<status status="PASS" start="2026-11-23T10:00:00" elapsed="0.001"/></kw>'
                '<status status="PASS" start="2026-11-23T10:00:00" elapsed="0.01"></status></test>\n')

    _xml(path, '<?xml version="1.0"?>\n<robot generator="Robot 7.5"><suite name="Shop">', test,
         "</suite></robot>\n", count)


GENERATORS: dict[str, Callable[[Path, int], None]] = {
    "junit": gen_junit, "ctrf": gen_ctrf, "playwright": gen_playwright, "allure": gen_allure, "trx": gen_trx,
    "nunit": gen_nunit, "xunit": gen_xunit, "testng": gen_testng, "robot": gen_robot, "gotest": gen_gotest,
}


def size_of(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir())
    return path.stat().st_size


def measure(report: Path, tree: Path = ROOT) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", CHILD, str(report)], cwd=tree, capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def export(ref: str, into: Path) -> Path:
    """The `tms` package of git revision `ref`, unpacked under `into`."""
    archive = subprocess.run(["git", "archive", ref, "tms"], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def best_of(runs: list[dict[str, float]]) -> tuple[dict[str, float], float]:
    return min(runs, key=lambda r: r["total_s"]), max(r["peak_mb"] for r in runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=3, help="runs per format; the best time and the worst RSS count")
    parser.add_argument("--only", help="comma-separated formats (default: all)")
    parser.add_argument("--baseline", metavar="REF", help="also measure git revision REF's parsers (before/after)")
    parser.add_argument("--append", action="store_true", help="append the numbers to bench/README.md")
    args = parser.parse_args()
    kinds = args.only.split(",") if args.only else list(GENERATORS)
    cases = [(kind, args.tests) for kind in kinds]
    if "allure" in kinds:
        cases.append(("allure", 100))
    if "robot" in kinds:
        cases.append(("robot-100mb", 2_000))
    before = f"before ({args.baseline}): total (CPU), RSS | " if args.baseline else ""
    lines = [f"| format | tests | size | {before}parse (best of {args.runs}) | total (CPU) | peak RSS | target |",
             "|---|---|---|---|---|---|---|" + ("---|" if args.baseline else "")]
    missed = 0
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as scratch:
        old_tree = export(args.baseline, Path(scratch)) if args.baseline else None
        for kind, count in cases:
            with tempfile.TemporaryDirectory() as tmp:
                report = Path(tmp) / ("allure-results" if kind == "allure" else f"report.{kind}")
                (gen_robot_big if kind == "robot-100mb" else GENERATORS[kind])(report, count)
                size = size_of(report) / 1e6
                runs, old_runs = [], []
                for _ in range(args.runs):  # alternating, so both trees see the same load
                    if old_tree is not None:
                        old_runs.append(measure(report, old_tree))
                    runs.append(measure(report))
            loads.append(os.getloadavg()[0])
            best, peak = best_of(runs)
            limit = 1.0 if kind == "allure" and count <= 100 else 2.0
            ok = best["total_s"] < limit and peak < 150
            missed += not ok
            label = f"{kind} ({count} files)" if kind == "allure" else kind
            was = ""
            if old_runs:
                old, old_peak = best_of(old_runs)
                was = f"{old['total_s']:.2f} s ({old['cpu_s']:.2f} s), {old_peak:.0f} MB | "
            lines.append(f"| {label} | {best['tests']:,} | {size:.1f} MB | {was}{best['parse_s']:.2f} s | "
                         f"{best['total_s']:.2f} s ({best['cpu_s']:.2f} s) | {peak:.0f} MB | "
                         f"< {limit:.0f} s, < 150 MB: {'met' if ok else 'MISSED'} |")
            print(lines[-1], flush=True)
    verdict = (f"load average (1 min) {min(loads):.1f} to {max(loads):.1f} on {os.cpu_count()} cores; "
               f"{missed} target(s) missed")
    print(verdict)
    if args.append:
        _append(lines, verdict, args)
    return 0


def _append(lines: list[str], verdict: str, args: argparse.Namespace) -> None:
    text = README.read_text() if README.exists() else "# Benchmarks\n"
    command = f".venv/bin/python bench/parsers.py --tests {args.tests} --runs {args.runs}"
    if args.only:
        command += f" --only {args.only}"
    if args.baseline:
        command += f" --baseline {args.baseline}"
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    entry = (f"\n{stamp}, {platform.python_implementation()} {platform.python_version()}, "
             f"`{command}`:\n\n" + "\n".join(lines) + f"\n\n{verdict}.\n")
    if HEADING not in text:
        text = text.rstrip("\n") + f"\n\n{HEADING}\n\nEach format's parser on a generated report in a fresh process "
        text += "(bench/parsers.py): finding the files, detection, parse, retry folding and mapping to ingest items.\n"
    start = text.index(HEADING) + len(HEADING)
    end = text.find("\n## ", start)  # the entry goes at the end of this section, before the next one
    end = len(text) if end < 0 else end + 1
    README.write_text(text[:end].rstrip("\n") + "\n" + entry + ("\n" + text[end:] if end < len(text) else ""))


if __name__ == "__main__":
    sys.exit(main())
