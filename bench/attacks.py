"""The four "one small request freezes every tenant" attacks of issue 22, run together.

    .venv/bin/python bench/attacks.py [--seconds 20] [--database-url postgresql://...]

Starts a real `tms serve` on a temporary data dir (SQLite, or the PostgreSQL database given) and
two tenants. The attacker sends, each from its own thread and in a loop for ``--seconds``:

1. an ingest of 20 failures with 8 KB messages into a project with 5 known issues whose pattern is
   ``.{0,1000}.{0,1000}.{0,1000}Q`` (or, where the server refuses that pattern, the refusal and then
   the same ingest);
2. the versions page of a case of 16,000 Gherkin lines edited once (a 16,000-line diff);
3. an import preview (``dry_run=true``) of a 23 KB CSV whose section path is 3,000 deep, and of a
   TestRail XML nested 990 deep;
4. the execution view and a ``PATCH step_results`` of a stored Scenario Outline of 100 steps x
   1,000 example rows (written straight into the database: the API refuses to save it now).

Meanwhile the other tenant lists its projects every 20 ms. Prints the other tenant's p50, p99 and
worst latency, and each attack's answers (status codes) and time, as Markdown. Issue 22's target:
p99 under 200 ms on the 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.web_pages import sign_in
from tests.conftest import ServerProcess, Tenant, make_tenant_on, run_admin

HEAVY_PATTERN = ".{0,1000}.{0,1000}.{0,1000}Q"


def outline(steps: int, rows: int) -> str:
    lines = ["Feature: Outline", "  Scenario Outline: many rows"]
    lines += [f"    Given step {n} with <value>" for n in range(steps)]
    lines += ["    Examples:", "      | value |"] + [f"      | v{n} |" for n in range(rows)]
    return "\n".join(lines) + "\n"


def long_case(lines: int, tag: str) -> str:
    # short lines: 16,000 of them fit the 200,000-character limit on bdd_content
    body = [f"    * {tag if n % 7 == 0 else n}" for n in range(lines)]
    return "Feature: Long\n  Scenario: long\n    Given a start\n" + "\n".join(body) + "\n"


def prepare_known_issues(tenant: Tenant, project_id: str) -> str:
    """Five known issues with the heavy pattern; where the API refuses it (it does since issue 22),
    they are written straight into the database, as patterns stored before the limit was."""
    answers = [tenant.api.post("/api/v1/known-issues", json={
        "project_id": project_id, "bug_ticket_key": f"SLOW-{n}", "pattern": HEAVY_PATTERN}).status_code
        for n in range(5)]
    refused = sum(1 for code in answers if code != 201)

    async def write(db: Any) -> None:
        async with db.transaction() as tx:
            await tx.executemany(
                "INSERT INTO known_issues (id, tenant_id, project_id, pattern, bug_ticket_key, status, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, 'OPEN', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
                [(f"ki-stored-{n}", tenant.id, project_id, HEAVY_PATTERN, f"STORED-{n}") for n in range(refused)])

    if refused:
        run_admin(tenant.server.db_path, write)
    shown = ", ".join(f"{code} x{count}" for code, count in Counter(answers).items())
    return f"{shown} through the API, {refused} stored straight into the database"


def ingest_failures(api: httpx.Client, project_id: str) -> int:
    message = "x" * 8192
    body = {"project_id": project_id, "run_name": "attack", "results": [
        {"title": f"t{n}", "status": "FAILED", "error_message": message} for n in range(20)]}
    return api.post("/api/v1/ingest", json=body, timeout=600).status_code


def store_outline_case(tenant: Tenant, project_id: str) -> str:
    """Writes the oversized outline straight into the database, as a case saved before the limit."""
    created = tenant.api.post("/api/v1/cases", json={
        "project_id": project_id, "title": "Outline", "bdd_content": outline(2, 2)})
    created.raise_for_status()
    case_id = created.json()["data"]["id"]

    async def write(db: Any) -> None:
        async with db.transaction() as tx:
            await tx.execute("UPDATE test_cases SET bdd_content = ? WHERE id = ?", (outline(100, 1000), case_id))

    run_admin(tenant.server.db_path, write)
    run = tenant.api.post("/api/v1/runs", json={"name": "manual", "project_id": project_id,
                                                "test_case_ids": [case_id]})
    run.raise_for_status()
    results = tenant.api.get(f"/api/v1/runs/{run.json()['data']['id']}/results").json()["data"]
    return str(results[0]["id"])


def csv_deep_path(depth: int) -> bytes:
    path = " / ".join(f"s{n}" for n in range(depth))
    return ("code,title,section,bdd_content\n" f',Deep,"{path}",\n').encode()


def testrail_deep(depth: int) -> bytes:
    opening = "".join(f"<section><name>s{n}</name><sections>" for n in range(depth))
    leaf = "<section><name>leaf</name><cases><case><id>C1</id><title>deep</title></case></cases></section>"
    closing = "</sections></section>" * depth
    return (f'<?xml version="1.0"?><suite><name>S</name><sections>{opening}{leaf}{closing}</sections></suite>'
            ).encode()


def attack_loop(name: str, until: float, action: Callable[[], list[int]], log: dict[str, Any]) -> None:
    answers: Counter[int] = Counter()
    times: list[float] = []
    while time.perf_counter() < until:
        start = time.perf_counter()
        try:
            answers.update(action())
        except httpx.HTTPError as error:
            answers.update([-1])
            log.setdefault("errors", []).append(f"{name}: {error!r}")
        times.append(time.perf_counter() - start)
    log[name] = (answers, times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--database-url", default="")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        env = {"TMS_STORAGE_DATABASE_URL": args.database_url} if args.database_url else {}
        server = ServerProcess(Path(data_dir), env).start()
        try:
            attacker, bystander = make_tenant_on(server, "Attacker"), make_tenant_on(server, "Bystander")
            bystander.create_project("Quiet")
            project_id = attacker.create_project("Target")["id"]
            known_issue_answers = prepare_known_issues(attacker, project_id)
            case = attacker.api.post("/api/v1/cases", json={
                "project_id": project_id, "title": "Long", "bdd_content": long_case(16_000, "a")}).json()["data"]
            edit = attacker.api.patch(f"/api/v1/cases/{case['id']}", json={"bdd_content": long_case(16_000, "b")})
            result_id = store_outline_case(attacker, project_id)
            web = sign_in(server, attacker.email, attacker.password)
            web.timeout = httpx.Timeout(600)
            api = attacker.client()
            api.timeout = httpx.Timeout(600)
            imports = {"csv": csv_deep_path(3000), "testrail-xml": testrail_deep(990)}
            attacks: dict[str, Callable[[], list[int]]] = {
                "1 known-issue patterns (ingest)": lambda: [ingest_failures(api, project_id)],
                "2 case history diff (versions page)": lambda: [web.get(f"/cases/{case['code']}/versions").status_code],
                "3 import planning (dry run, CSV + TestRail)": lambda: [
                    api.post(f"/api/v1/cases/import?project_id={project_id}&format={fmt}&dry_run=true",
                             files={"file": (f"deep.{fmt}", body)}).status_code for fmt, body in imports.items()],
                "4 outline expansion (execute page + PATCH)": lambda: [
                    web.get(f"/results/{result_id}/execute").status_code,
                    api.patch(f"/api/v1/results/{result_id}",
                              json={"step_results": [{"index": 1, "status": "PASSED"}]}).status_code],
            }
            log: dict[str, Any] = {}
            until = time.perf_counter() + args.seconds
            threads = [threading.Thread(target=attack_loop, args=(name, until, action, log), daemon=True)
                       for name, action in attacks.items()]
            probes: list[float] = []
            with bystander.client("read") as probe:
                probe.get("/api/v1/projects").raise_for_status()
                for thread in threads:
                    thread.start()
                while any(thread.is_alive() for thread in threads):
                    sent = time.perf_counter()
                    assert probe.get("/api/v1/projects", timeout=600).status_code == 200
                    probes.append((time.perf_counter() - sent) * 1000)
                    time.sleep(0.02)
            probes.sort()
            backend = "PostgreSQL" if args.database_url else "SQLite"
            print(f"## Four attacks together, {args.seconds:g} s, {backend}\n")
            print(f"Setup: known issues with the heavy pattern: {known_issue_answers}; "
                  f"16,000-line edit: {edit.status_code}\n")
            print("| attack | answers | requests | median s | worst s |\n|---|---|---|---|---|")
            for name in attacks:
                answers, times = log.get(name, (Counter(), [0.0]))
                shown = ", ".join(f"{code} x{count}" for code, count in sorted(answers.items()))
                print(f"| {name} | {shown} | {len(times)} | {statistics.median(times):.2f} | {max(times):.2f} |")
            p99 = probes[min(len(probes) - 1, int(len(probes) * 0.99))]
            print(f"\nAnother tenant's `GET /api/v1/projects` meanwhile: {len(probes)} requests, "
                  f"p50 {statistics.median(probes):.1f} ms, p99 {p99:.1f} ms, worst {probes[-1]:.1f} ms")
            for error in log.get("errors", [])[:5]:
                print(f"- {error}")
            print(json.dumps({"p99_ms": round(p99, 1)}))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
