"""Failure intelligence benchmark (issue 15).

    .venv/bin/python bench/failures.py [--rounds 10] [--skip-history]

Starts real `tms serve` processes on temporary data dirs and measures over loopback HTTP:

1. ingest overhead of fingerprinting: POST /api/v1/ingest of 5,000 results (median of --rounds) and of
   100,000 results (median of 3), 4 s apart (the background flaky evaluation runs in between), half
   linked to cases, 8% FAILED/BROKEN with realistic stacks (Java,
   Python and JavaScript, 25-40 frames, ~40 root causes with per-test frames and per-run numbers), on
   this tree ("after") and on the same tree with that work switched off ("before": no fingerprint, no
   known-issue match, no flaky index; or `git archive <--before REF>`), the two servers taking turns;
2. GET /api/v1/runs/{id}/failures and /compare on a 20,000-result run (8% failing), p50;
3. GET /api/v1/flaky?runs=30 over 30 runs of 5,000 results, p50; then the same on a project that also
   holds ~3,000,000 older results (inserted with sqlite3 in the service's own schema, since going
   through HTTP would take an hour), p50.

Tenants, tokens and cases are made with `tms admin` and sqlite3 of each tree, so a `--before REF`
database never sees this tree's migrations. Prints a table; copy it into bench/README.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import ServerProcess  # noqa: E402
from tms.failures.fingerprints import fingerprint  # noqa: E402
from tms.ids import new_id, new_ids, now_iso  # noqa: E402

FEATURE = "Feature: Bench\n  Scenario: one\n    Given a step\n"
CAUSES = 40
# between two timed ingests, as between two CI pipelines: the flaky re-evaluation a write asks for runs
# 2 s after it, in the background; back to back, it would compete with the next ingest for the 2 cores
PAUSE = 4.0


def java_stack(cause: int, test: int, run: int) -> tuple[str, str]:
    message = f"org.opentest4j.AssertionFailedError: order {run * 7 + test} total ==> expected: <{cause * 10}> " \
              f"but was: <{cause * 10 + run % 3}>"
    frames = [message, "\tat org.junit.jupiter.api.AssertionUtils.fail(AssertionUtils.java:151)",
              "\tat org.junit.jupiter.api.AssertEquals.assertEquals(AssertEquals.java:182)",
              f"\tat com.shop.service{cause}.OrderService.total(OrderService.java:{40 + cause})",
              f"\tat com.shop.service{cause}.OrderChecks.verify(OrderChecks.java:{12 + cause})",
              f"\tat com.shop.tests.Checkout{test % 50}Test.test{test}(Checkout{test % 50}Test.java:{20 + test % 30})"]
    frames += [f"\tat java.base/jdk.internal.reflect.DirectMethodHandleAccessor.invoke(Method.java:{569 + i})"
               for i in range(8)]
    frames += [f"\tat org.junit.platform.engine.support.hierarchical.NodeTestTask.execute(NodeTestTask.java:{90 + i})"
               for i in range(20)]
    return message, "\n".join(frames)


def python_stack(cause: int, test: int, run: int) -> tuple[str, str]:
    message = f"ConnectionError: HTTPConnectionPool(host='127.0.0.1', port={5000 + run}): Max retries exceeded " \
              f"with url: /api/v{cause}/orders/{test} (request {new_id()})"
    lines = [f"tests/test_orders_{test % 40}.py:{10 + test % 20}: in test_{test}",
             f"    response = client.get('/api/v{cause}/orders/{test}')",
             f"/home/runner/work/shop/shop/orders_{cause}.py:{30 + cause}: in fetch",
             "    return client.get(url)",
             f"/home/runner/work/shop/shop/client_{cause}.py:{80 + cause}: in get",
             "    return self.session.get(url, timeout=5)"]
    lines += [f"/usr/lib/python3/site-packages/requests/adapters.py:{500 + i}: in send" for i in range(12)]
    lines += ["E   " + message, "/usr/lib/python3/site-packages/requests/adapters.py:519: ConnectionError"]
    return message, "\n".join(lines)


def js_stack(cause: int, test: int, run: int) -> tuple[str, str]:
    message = f"Error: expect(received).toBe(expected) // Object.is equality\n\nExpected: {cause}\nReceived: {run}"
    frames = [message, f"    at Object.toBe (/tmp/ci-{run}/src/cart{cause}.test.js:{11 + test % 9}:19)"]
    frames += [f"    at callAsyncCircusFn (/tmp/ci-{run}/node_modules/jest-circus/build/utils.js:{1774 + i}:10)"
               for i in range(25)]
    return message, "\n".join(frames)


STACKS = (java_stack, python_stack, js_stack)


def make_items(count: int, codes: list[str], run: int, linked_share: float = 0.5, seed: int = 7
               ) -> list[dict[str, Any]]:
    """``count`` results: the first ``linked_share`` linked by code, 8% failing with realistic stacks.

    As in a real suite, most failures are the same tests failing for the same ~40 causes run after run
    (7.5% of the tests); a few (0.5%) fail at random in one run.
    """
    rng = random.Random(seed + run)
    steady = random.Random(seed)
    out = []
    linked = min(int(count * linked_share), len(codes))
    for i in range(count):
        item: dict[str, Any] = {"status": "PASSED", "duration_ms": 10 + i % 500, "framework": "junit"}
        if i < linked:
            item["test_case_code"] = codes[i]
        else:
            item["title"] = f"tests/test_module_{i % 97}.py::test_case_{i}"
        if steady.random() < 0.075 or rng.random() < 0.005:
            cause = i % CAUSES
            item["status"] = "FAILED" if cause % 5 else "BROKEN"
            item["error_message"], item["error_stack"] = STACKS[cause % 3](cause, i, run)
        out.append(item)
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# Loaded by the "before" server's interpreter at start (sitecustomize): results are stored without a
# fingerprint or known-issue bug, so no first-seen/daily rows and no partial-index entries either.
PLAIN_SHIM = """
import tms.failures.service as failures


def _stamp(self, status, message, stack, bug_key, bug_url):
    return None, bug_key, bug_url


failures.Stamper.stamp = _stamp
"""


class Service:
    """A `tms serve` of one tree, with a tenant, a token and a project made by that tree's own admin."""

    def __init__(self, work: Path, name: str, tree: Path, plain: bool = False) -> None:
        self.tree = tree
        path = str(tree)
        if plain:  # this tree with the write-time work of failure intelligence switched off
            shim = work / f"{name}-shim"
            shim.mkdir()
            (shim / "sitecustomize.py").write_text(PLAIN_SHIM)
            path = f"{shim}:{tree}"
        (work / name).mkdir()
        self.server = ServerProcess(work / name, {"PYTHONPATH": path}).start()
        if plain:
            with sqlite3.connect(self.server.db_path, timeout=30) as conn:
                conn.execute("DROP INDEX IF EXISTS test_results_marks")
        self.env = {"PYTHONPATH": str(tree), "TMS_STORAGE_DATA_DIR": str(work / name)}
        tenant = self._admin("create-tenant", "--name", "bench")
        self.token = self._admin("create-token", "--tenant", tenant, "--name", "b", "--scopes", "read,write")
        self.tenant_id = tenant
        self.client = httpx.Client(base_url=self.server.url, headers={"Authorization": f"Bearer {self.token}"},
                                   timeout=600)

    def _admin(self, *args: str) -> str:
        import os

        done = subprocess.run([sys.executable, "-m", "tms", "admin", *args], env={**os.environ, **self.env},
                              capture_output=True, text=True, check=True, cwd=self.tree)
        return done.stdout.strip().splitlines()[-1]

    def project(self, name: str, cases: int) -> tuple[str, list[str]]:
        project = self.client.post("/api/v1/projects", json={"name": name}).json()["data"]["id"]
        codes = [f"B{abs(hash(name)) % 1000}-{i}" for i in range(1, cases + 1)]
        now = now_iso()
        with sqlite3.connect(self.server.db_path, timeout=30) as conn:
            conn.executemany(
                "INSERT INTO test_cases (id, tenant_id, project_id, code, title, bdd_content, automation_status, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'AUTOMATED', ?, ?)",
                [(case_id, self.tenant_id, project, code, f"Case {code}", FEATURE, now, now)
                 for case_id, code in zip(new_ids(len(codes)), codes, strict=True)])
        return project, codes

    def ingest(self, project: str, items: list[dict[str, Any]], **extra: Any) -> tuple[float, str]:
        body = gzip.compress(json.dumps({"project_id": project, "results": items, **extra}).encode(), 1)
        start = time.perf_counter()
        response = self.client.post("/api/v1/ingest", content=body,
                                    headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})
        elapsed = time.perf_counter() - start
        assert response.status_code == 201, response.text[:300]
        return elapsed, response.json()["run_id"]

    def timed_get(self, path: str, params: dict[str, Any] | None = None, rounds: int = 20) -> list[float]:
        self.client.get(path, params=params)  # warm-up
        latencies = []
        for _ in range(rounds):
            start = time.perf_counter()
            response = self.client.get(path, params=params)
            latencies.append(time.perf_counter() - start)
            assert response.status_code == 200, response.text[:300]
        return latencies

    def stop(self) -> None:
        self.client.close()
        self.server.stop()


def export_tree(ref: str, into: Path) -> Path:
    archive = subprocess.run(["git", "archive", "--format=tar", ref], cwd=ROOT, capture_output=True, check=True)
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def ingest_overhead(work: Path, before: str, rounds: int) -> list[tuple[str, str, str]]:
    """Both servers run side by side and take turns, so the load of the machine weighs on both alike."""
    if before == "plain":
        services = {"before": Service(work, "before", ROOT, plain=True), "after": Service(work, "after", ROOT)}
    else:
        tree = export_tree(before, work / "before-tree")
        services = {"before": Service(work, "before", tree), "after": Service(work, "after", ROOT)}
    timings: dict[str, dict[str, list[float]]] = {name: {"5k": [], "100k": []} for name in services}
    try:
        projects = {name: service.project("overhead", 50_000) for name, service in services.items()}
        for name, service in services.items():
            project, codes = projects[name]
            for _ in range(2):
                service.ingest(project, make_items(5_000, codes, run=1))  # warm-up
        for size, count, times in (("5k", 5_000, rounds), ("100k", 100_000, 3)):
            for r in range(times):
                for name in ("before", "after") if r % 2 else ("after", "before"):
                    project, codes = projects[name]
                    timings[name][size].append(services[name].ingest(project, make_items(count, codes, run=r))[0])
                    time.sleep(PAUSE)
    finally:
        for service in services.values():
            service.stop()
    rows = []
    label = "this tree without it" if before == "plain" else f"`{before[:12]}`"
    for size in ("5k", "100k"):
        before_s, after_s = (statistics.median(timings[name][size]) for name in ("before", "after"))
        rows.append((f"ingest {size}, 8% failing with stacks: {label} -> with fingerprinting (median)", "< +15%",
                     f"{before_s * 1000:.0f} ms -> {after_s * 1000:.0f} ms ({(after_s / before_s - 1) * 100:+.1f}%)"))
    return rows


def reads(work: Path, rounds: int, history: bool) -> list[tuple[str, str, str]]:
    service = Service(work, "reads", ROOT)
    rows = []
    try:
        project, codes = service.project("big runs", 20_000)
        _, _base = service.ingest(project, make_items(20_000, codes, run=1, linked_share=1.0), environment="ci")
        _, run = service.ingest(project, make_items(20_000, codes, run=2, linked_share=1.0), environment="ci")
        failures = service.timed_get(f"/api/v1/runs/{run}/failures", rounds=rounds * 3)
        clusters = len(service.client.get(f"/api/v1/runs/{run}/failures").json()["data"])
        compare = service.timed_get(f"/api/v1/runs/{run}/compare", rounds=rounds * 3)
        rows.append(("GET /runs/{id}/failures, 20,000-result run (1,600 failing), p50", "< 100 ms",
                     f"{percentile(failures, 0.5) * 1000:.1f} ms (p90 {percentile(failures, 0.9) * 1000:.1f}), "
                     f"{clusters} clusters"))
        rows.append(("GET /runs/{id}/compare, two 20,000-result runs, p50", "< 100 ms",
                     f"{percentile(compare, 0.5) * 1000:.1f} ms (p90 {percentile(compare, 0.9) * 1000:.1f})"))

        flaky_project, flaky_codes = service.project("flaky", 5_000)
        for r in range(30):
            service.ingest(flaky_project, flaky_items(flaky_codes, r))
        plain = service.timed_get("/api/v1/flaky", {"project_id": flaky_project, "runs": 30}, rounds * 3)
        found = service.client.get("/api/v1/flaky", params={"project_id": flaky_project}).json()["pagination"]
        rows.append(("GET /flaky?runs=30, 30 runs x 5,000 results, p50", "< 150 ms",
                     f"{percentile(plain, 0.5) * 1000:.1f} ms (p90 {percentile(plain, 0.9) * 1000:.1f}), "
                     f"{found['total']} flaky tests"))
        if history:
            deep_project, deep_codes = service.project("deep history", 5_000)
            inserted = old_history(service, deep_project, deep_codes, 3_000_000 - 150_000)
            for r in range(30):
                service.ingest(deep_project, flaky_items(deep_codes, r))
            deep = service.timed_get("/api/v1/flaky", {"project_id": deep_project, "runs": 30}, rounds * 3)
            ratio = percentile(deep, 0.5) / percentile(plain, 0.5)
            rows.append((f"GET /flaky?runs=30 with {inserted + 150_000:,} results of history, p50", "< 2x the above",
                         f"{percentile(deep, 0.5) * 1000:.1f} ms (p90 {percentile(deep, 0.9) * 1000:.1f}), "
                         f"{ratio:.2f}x"))
    finally:
        service.stop()
    return rows


def flaky_items(codes: list[str], run: int) -> list[dict[str, Any]]:
    """5,000 results: 8% failing, of which a tenth are tests that flip from run to run."""
    items = make_items(len(codes), codes, run, linked_share=1.0, seed=11)
    for i in range(0, 400, 10):  # 40 flippers
        if run % 2:
            items[i] = {"test_case_code": codes[i], "status": "FAILED", "error_message": f"flaky {i} in run {run}"}
        else:
            items[i] = {"test_case_code": codes[i], "status": "PASSED"}
    return items


def old_history(service: Service, project: str, codes: list[str], total: int) -> int:
    """Old runs of the project, inserted straight into the database in batches (the service's schema)."""
    with sqlite3.connect(service.server.db_path, timeout=60) as conn:
        ids = dict(conn.execute("SELECT code, id FROM test_cases WHERE project_id = ?", (project,)).fetchall())
        inserted, run_number = 0, 0
        while inserted < total:
            run_number += 1
            run_id, now = new_id(), now_iso()
            conn.execute("INSERT INTO test_runs (id, tenant_id, project_id, name, status, created_at, updated_at) "
                         "VALUES (?, ?, ?, ?, 'COMPLETED', ?, ?)",
                         (run_id, service.tenant_id, project, f"old {run_number}", now, now))
            rows = []
            for item, result_id in zip(make_items(len(codes), codes, run_number, linked_share=1.0),
                                       new_ids(len(codes)), strict=True):
                failed = item["status"] in ("FAILED", "BROKEN")
                print_ = fingerprint(item.get("error_message"), item.get("error_stack")) if failed else None
                code = item["test_case_code"]
                rows.append((result_id, service.tenant_id, run_id, ids[code], code, f"Case {code}", item["status"],
                             item.get("error_message"), now, now, print_))
            conn.executemany(
                "INSERT INTO test_results (id, tenant_id, run_id, test_case_id, test_case_code, title, status, "
                "error_message, created_at, updated_at, fingerprint) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            conn.commit()
            inserted += len(rows)
    return inserted


def cpu_overhead(rounds: int = 4) -> list[tuple[str, str, str]]:
    """The same 100,000-result ingests in one process through tms.runs.ingest.service, alternately with and
    without the write-time work of failure intelligence, timed in CPU seconds of the process (its SQLite
    threads included): on a VM whose load average is 10+, wall-clock medians of HTTP ingests vary 2-3x
    from one round to the next, CPU time far less.

    "without" ingests into its own database with stamping off (no fingerprint, no known-issue match, no
    first-seen/daily rows) and without the flaky index ``test_results_marks``, the only index of this
    work that holds rows whatever the fingerprints; "with" is the service as it runs.
    """
    import asyncio

    from tms.db import Database
    from tms.db.sqlite import SqliteDatabase
    from tms.failures import fingerprints as fingerprint_module
    from tms.failures import service as failure_service
    from tms.library.projects import service as projects
    from tms.library.projects.models import ProjectCreate
    from tms.runs.ingest import service as ingest
    from tms.team import accounts

    def without(self: Any, status: str, message: Any, stack: Any, key: Any, url: Any) -> Any:
        return None, key, url

    async def open_one(path: Path, plain: bool) -> tuple[Database, str, str, list[str]]:
        db = SqliteDatabase(path)
        await db.open()
        if plain:
            async with db.transaction() as tx:
                await tx.execute("DROP INDEX IF EXISTS test_results_marks")
        tenant = await accounts.create_tenant(db, "cpu")
        project = (await projects.create_project(db, tenant, ProjectCreate(name="p"))).id
        codes = [f"B-{i}" for i in range(1, 50_001)]
        now = now_iso()
        async with db.transaction() as tx:
            await tx.executemany(
                "INSERT INTO test_cases (id, tenant_id, project_id, code, title, bdd_content, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(i, tenant, project, c, c, FEATURE, now, now) for i, c in zip(new_ids(len(codes)), codes,
                                                                                 strict=True)])
        return db, tenant, project, codes

    async def run() -> dict[str, list[float]]:
        with tempfile.TemporaryDirectory(prefix="tms-bench-cpu-") as tmp:
            opened = {"with": await open_one(Path(tmp) / "with.db", False),
                      "without": await open_one(Path(tmp) / "without.db", True)}
            real = failure_service.Stamper.stamp
            times: dict[str, list[float]] = {"with": [], "without": []}
            try:
                for r in range(rounds):
                    for mode in ("with", "without") if r % 2 else ("without", "with"):
                        db, tenant, project, codes = opened[mode]
                        body = json.dumps({"project_id": project, "results": make_items(100_000, codes, r)}).encode()
                        failure_service.Stamper.stamp = real if mode == "with" else without  # type: ignore[method-assign]
                        fingerprint_module.fingerprint.cache_clear()
                        fingerprint_module._LINE_CACHE.clear()
                        fingerprint_module._MESSAGE_CACHE.clear()
                        start = time.process_time()
                        await ingest.ingest(db, tenant, body)
                        times[mode].append(time.process_time() - start)
            finally:
                failure_service.Stamper.stamp = real  # type: ignore[method-assign]
                for db, *_ in opened.values():
                    await db.close()
            return times

    times = asyncio.run(run())
    rows = []
    # the least CPU time of several rounds is the steadiest figure: a busy machine only ever adds to it
    for label, pick in (("least", min), ("median", statistics.median)):
        with_, without_ = pick(times["with"]), pick(times["without"])
        rows.append((f"ingest 100k in-process, CPU seconds: without -> with failure work ({label} of {rounds})",
                     "< +15%", f"{without_:.2f} s -> {with_:.2f} s ({(with_ / without_ - 1) * 100:+.1f}%)"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--before", default="plain",
                        help="git ref of a tree without fingerprinting; default: this tree with it switched off")
    parser.add_argument("--skip-history", action="store_true", help="skip the 3,000,000-result history")
    parser.add_argument("--skip-overhead", action="store_true")
    parser.add_argument("--skip-reads", action="store_true")
    parser.add_argument("--skip-cpu", action="store_true")
    parser.add_argument("--cpu-rounds", type=int, default=6, help="100k ingests per mode in the CPU comparison")
    args = parser.parse_args()
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="tms-bench-failures-") as tmp:
        work = Path(tmp)
        if not args.skip_overhead:
            rows += ingest_overhead(work, args.before, args.rounds)
        if not args.skip_cpu:
            rows += cpu_overhead(args.cpu_rounds)
        if not args.skip_reads:
            rows += reads(work, args.rounds, not args.skip_history)
    width = max(len(r[0]) for r in rows)
    print(f"| {'measure':<{width}} | target | result |")
    print(f"|{'-' * (width + 2)}|---|---|")
    for measure, target, result in rows:
        print(f"| {measure:<{width}} | {target} | {result} |")


if __name__ == "__main__":
    main()
