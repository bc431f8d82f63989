"""Web interface benchmark (issue 5): every page under 100 ms with 10,000 cases and 1,000 runs.

    .venv/bin/python bench/web_pages.py [--cases 10000] [--runs 1000] [--results-per-run 20] [--requests 20]

Starts a real `tms serve` on a temporary data dir, seeds one tenant straight into SQLite through
tms.db.Database (one executemany per table, as `tms admin` would), signs in like a browser and
times each page over loopback: `--requests` GETs per page after one warm-up, p50 and p95 of the
full round trip (so server time plus a little client overhead). Prints a Markdown table; copy it
into bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.conftest import ServerProcess, make_tenant_on, run_admin
from tms.ids import new_ids

FEATURE = """@smoke @checkout
Feature: Checkout {n}

  Background:
    Given a signed-in customer

  Scenario Outline: Pay with <method>
    Given a cart with "2" items
    When they pay with <method>
    Then the order is <result>

    Examples:
      | method | result    |
      | card   | confirmed |
      | paypal | confirmed |
"""
STATUSES = ["PASSED"] * 14 + ["FAILED", "FAILED", "BROKEN", "SKIPPED"]
STACK = "Traceback (most recent call last):\n  File \"tests/test_checkout.py\", line 42, in test_pay\n" \
        "    assert resp.status_code == 200\nAssertionError: expected 200, got 500"


def seed(db_path: Path, tenant_id: str, cases: int, runs: int, per_run: int) -> dict[str, Any]:
    """Writes the tenant's library and history directly; returns ids the pages need."""
    rnd = random.Random(5)

    async def write(db: Any) -> dict[str, Any]:
        t0 = "2026-01-01T00:00:00.000Z"
        project_id = new_ids(1)[0]
        case_ids = new_ids(cases)
        codes = [f"TC-{i + 1}" for i in range(cases)]
        run_ids = new_ids(runs)
        async with db.transaction() as tx:
            await tx.execute(
                "INSERT INTO projects (id, tenant_id, name, description, active, environments, created_at, "
                "updated_at) VALUES (?, ?, 'Web shop', 'Bench project', 1, '[\"staging\"]', ?, ?)",
                (project_id, tenant_id, t0, t0))
            await tx.executemany(
                "INSERT INTO test_cases (id, tenant_id, project_id, code, title, bdd_content, status, priority, "
                "layer, is_e2e, automation_status, tags, tickets, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(case_ids[i], tenant_id, project_id, codes[i], f"Checkout scenario number {i + 1}",
                  FEATURE.format(n=i + 1), rnd.choice(["DRAFT", "READY", "READY", "DEPRECATED"]),
                  rnd.choice(["LOW", "MEDIUM", "HIGH", "CRITICAL"]), rnd.choice(["UI", "API", None]),
                  int(rnd.random() < 0.2),
                  rnd.choice(["MANUAL", "AUTOMATED", "AUTOMATED", "FLAKY", "IN_PROGRESS"]),
                  json.dumps(rnd.sample(["smoke", "checkout", "payments", "regression", "api"], 2)),
                  json.dumps([{"key": f"SHOP-{i}", "source": "JIRA"}]), t0, t0) for i in range(cases)])
            await tx.execute("UPDATE tenants SET case_seq = ? WHERE id = ?", (cases, tenant_id))
            run_rows, result_rows, unlinked_rows = [], [], []
            for r, run_id in enumerate(run_ids):
                at = f"2026-02-{1 + r // 40:02d}T{(r % 24):02d}:{r % 60:02d}:00.000Z"
                picked = rnd.sample(range(cases), per_run)
                counts = dict.fromkeys(("PASSED", "FAILED", "BROKEN", "SKIPPED", "UNKNOWN"), 0)
                ids = new_ids(per_run + 2)
                for k, index in enumerate(picked):
                    status = rnd.choice(STATUSES)
                    counts[status] += 1
                    bad = status in ("FAILED", "BROKEN")
                    result_rows.append((ids[k], tenant_id, run_id, case_ids[index], codes[index], None, status,
                                        None, "SHOP-42" if bad else None, None, rnd.randint(20, 90_000),
                                        "pytest", "AssertionError: expected 200" if bad else None,
                                        STACK if bad else None, at, at, at))
                for k in range(2):
                    counts["PASSED"] += 1
                    unlinked_rows.append((ids[per_run + k], tenant_id, project_id, run_id, f"unlinked test {k}",
                                        "PASSED", None, None, None, 1200, "pytest", None, None, at, at, at))
                total = per_run + 2
                run_rows.append((run_id, tenant_id, project_id, f"Nightly #{r + 1}", "staging", "COMPLETED", at,
                                 at, at, total, counts["PASSED"], counts["FAILED"], counts["BROKEN"],
                                 counts["SKIPPED"], counts["UNKNOWN"]))
            await tx.executemany(
                "INSERT INTO test_runs (id, tenant_id, project_id, name, environment, status, created_at, "
                "updated_at, completed_at, results_total, results_passed, results_failed, results_broken, "
                "results_skipped, results_unknown) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", run_rows)
            await tx.executemany(
                "INSERT INTO test_results (id, tenant_id, run_id, test_case_id, test_case_code, title, status, "
                "comment, bug_ticket_key, bug_ticket_url, duration_ms, framework, error_message, error_stack, "
                "executed_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                result_rows)
            await tx.executemany(
                "INSERT INTO unlinked_test_results (id, tenant_id, project_id, run_id, title, status, comment, "
                "bug_ticket_key, bug_ticket_url, duration_ms, framework, error_message, error_stack, executed_at, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", unlinked_rows)
            # one full-library run: a nightly of every case, the largest run page there is
            big_id, big_at = new_ids(1)[0], "2026-03-01T00:00:00.000Z"
            big_ids = new_ids(cases)
            big = [(big_ids[i], tenant_id, big_id, case_ids[i], codes[i], None, rnd.choice(STATUSES), None, None, None,
                    rnd.randint(20, 9000), "pytest", None, None, big_at, big_at, big_at) for i in range(cases)]
            tally = {s: sum(1 for row in big if row[6] == s) for s in ("PASSED", "FAILED", "BROKEN", "SKIPPED")}
            await tx.execute(
                "INSERT INTO test_runs (id, tenant_id, project_id, name, environment, status, created_at, "
                "updated_at, completed_at, results_total, results_passed, results_failed, results_broken, "
                "results_skipped, results_unknown) VALUES (?, ?, ?, 'Full library', 'staging', 'COMPLETED', ?, ?, ?, "
                "?, ?, ?, ?, ?, 0)",
                (big_id, tenant_id, project_id, big_at, big_at, big_at, cases, tally["PASSED"], tally["FAILED"],
                 tally["BROKEN"], tally["SKIPPED"]))
            await tx.executemany(
                "INSERT INTO test_results (id, tenant_id, run_id, test_case_id, test_case_code, title, status, "
                "comment, bug_ticket_key, bug_ticket_url, duration_ms, framework, error_message, error_stack, "
                "executed_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                big)
            # a retest queue of 25 cases
            await tx.executemany(
                "UPDATE test_cases SET needs_retest = 1, retest_reason = 'bug resolved', retest_bug_key = 'SHOP-42', "
                "retest_flagged_at = ? WHERE id = ?", [(t0, case_ids[i]) for i in range(0, cases, max(1, cases // 25))])
        await db.fetch_value("PRAGMA optimize")
        return {"project_id": project_id, "code": codes[0], "run_id": run_ids[-1], "big_run_id": big_id}

    return run_admin(db_path, write)  # type: ignore[no-any-return]


def sign_in(server: ServerProcess, email: str, password: str) -> httpx.Client:
    client = httpx.Client(base_url=server.url, timeout=30, headers={"accept": "text/html"})
    client.get("/login")
    token = client.cookies.get("csrftoken") or ""
    response = client.post("/login", data={"email": email, "password": password, "_csrf_token": token})
    assert response.status_code == 303, response.text
    client.headers["x-csrftoken"] = token
    return client


def time_page(client: httpx.Client, path: str, requests: int) -> tuple[float, float, int]:
    first = client.get(path)
    assert first.status_code == 200, (path, first.status_code, first.text[:300])
    samples = []
    for _ in range(requests):
        start = time.perf_counter()
        response = client.get(path)
        samples.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200
    samples.sort()
    p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
    return statistics.median(samples), p95, len(first.content)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=1_000)
    parser.add_argument("--results-per-run", type=int, default=20)
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        data_dir.mkdir()
        server = ServerProcess(data_dir, {}).start()
        try:
            tenant = make_tenant_on(server, "Bench")
            started = time.perf_counter()
            ids = seed(server.db_path, tenant.id, args.cases, args.runs, args.results_per_run)
            print(f"seeded {args.cases} cases, {args.runs} runs x {args.results_per_run + 2} results "
                  f"in {time.perf_counter() - started:.1f} s", file=sys.stderr)
            web = sign_in(server, tenant.email, tenant.password)
            hook = web.post("/settings/webhooks", data={"url": "http://127.0.0.1:9/hook",
                                                         "events": ["test_run.completed"], "active": "on"})
            hook_path = hook.headers["location"]
            pages = [
                ("Dashboard", "/"),
                ("Projects", "/projects"),
                ("Test cases, first page", "/cases"),
                ("Test cases, page 100", "/cases?offset=4950"),
                ("Test cases, search", "/cases?q=number+77"),
                ("Test cases, 3 filters + tag", "/cases?status=READY&automation_status=FLAKY&tag=smoke"),
                ("Test case page (with history)", f"/cases/{ids['code']}"),
                ("Test case edit form", f"/cases/{ids['code']}/edit"),
                ("New test case form", "/cases/new"),
                ("Runs, first page", "/runs"),
                ("Runs, last page", "/runs?offset=950"),
                ("Run page", f"/runs/{ids['run_id']}"),
                ("Run page, failed only", f"/runs/{ids['run_id']}?status=FAILED"),
                (f"Run page, {args.cases:,} results (first 200 shown)", f"/runs/{ids['big_run_id']}"),
                ("Same run, failed only", f"/runs/{ids['big_run_id']}?status=FAILED"),
                ("API tokens", "/settings/tokens"),
                ("Webhooks", "/settings/webhooks"),
                ("Webhook with log", hook_path),
            ]
            print(f"\n{args.cases:,} cases, {args.runs:,} runs x {args.results_per_run + 2} results, "
                  f"{args.requests} requests per page after a warm-up\n")
            print("| page | p50 ms | p95 ms | HTML KB |\n|---|---|---|---|")
            for name, path in pages:
                p50, p95, size = time_page(web, path, args.requests)
                print(f"| {name} | {p50:.1f} | {p95:.1f} | {size / 1024:.0f} |")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
