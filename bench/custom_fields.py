"""Custom fields (issue 26): filters on field values at 100,000 cases with 20 fields, and a CSV import.

    .venv/bin/python bench/custom_fields.py [--cases 100000] [--requests 30] [--import-rows 10000]

Starts a real `tms serve` (SQLite, or PostgreSQL with TMS_TEST_DATABASE=postgres as the tests do),
defines 20 case fields on a project (5 selects, 5 texts, 3 numbers, 2 checkboxes, 2 multiselects, a
date, a url, a textarea) and creates `--cases` cases holding a value in each, then times over loopback:
- `cf.<key>=` filters: a select value held by 1 case in 5, a text value held by ~100 cases, a number,
  a multiselect option, a checkbox; combined with priority, with a `q` search, and a deep page;
- the same page without a field filter, for comparison;
- the web list (`/cases`) showing 5 field columns, without and with a filter (target < 150 ms; its
  "total" column counts the field cells on the page, "rows" the table rows);
- a CSV import of `--import-rows` new cases with the 20 `cf:` columns (one request).
Prints a table to copy into bench/README.md.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.conftest import ServerProcess, make_tenant_on, run_admin

random.seed(26)
BROWSERS = ["Chrome", "Firefox", "Safari", "Edge", "Opera"]
OPTIONS = [f"option {n}" for n in range(8)]
PLATFORMS = ["Linux", "macOS", "Windows", "Android", "iOS"]
PRIORITIES = ("LOW", "MEDIUM", "HIGH", "CRITICAL")
FIELDS: list[tuple[str, str, dict[str, Any]]] = [
    ("browser", "select", {"options": BROWSERS}),
    *[(f"choice_{n}", "select", {"options": OPTIONS}) for n in range(4)],
    ("component", "text", {}), *[(f"text_{n}", "text", {}) for n in range(4)],
    ("effort", "number", {}), ("risk", "number", {}), ("points", "number", {}),
    ("smoke", "checkbox", {}), ("blocking", "checkbox", {}),
    ("platforms", "multiselect", {"options": PLATFORMS}), ("markets", "multiselect", {"options": OPTIONS}),
    ("due", "date", {}), ("spec", "url", {}), ("notes", "textarea", {}),
]
GHERKIN = "Feature: F\n  Scenario: S {i}\n    Given step {i}\n    When it runs\n    Then it passes\n"


def values(i: int) -> dict[str, Any]:
    return {
        "browser": BROWSERS[i % 5], **{f"choice_{n}": OPTIONS[(i + n) % 8] for n in range(4)},
        "component": f"component {i % 1000}", **{f"text_{n}": f"value {n} {random.randrange(5000)}" for n in range(4)},
        "effort": i % 13, "risk": round((i % 100) / 10, 1), "points": i % 8, "smoke": i % 3 == 0,
        "blocking": i % 7 == 0, "platforms": [PLATFORMS[i % 5], PLATFORMS[(i // 5) % 5]],
        "markets": [OPTIONS[i % 8]], "due": f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}",
        "spec": f"https://specs.example.com/{i}", "notes": f"note {i}\nsecond line",
    }


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(client: Any, params: dict[str, Any], requests: int, path: str = "/api/v1/cases",
          ) -> tuple[float, float, int, int]:
    latencies = []
    response = None
    for _ in range(requests + 3):
        start = time.perf_counter()
        response = client.get(path, params=params)
        latencies.append(time.perf_counter() - start)
        assert response.status_code == 200, response.text[:300]
    assert response is not None
    latencies = latencies[3:]
    if path != "/api/v1/cases":  # the web list: its rows and the cells of the field columns
        return (percentile(latencies, 0.5), percentile(latencies, 0.9), response.text.count("<tr") - 1,
                response.text.count('cf-col">') - response.text.count('class="cf-col">'))
    body = response.json()
    return percentile(latencies, 0.5), percentile(latencies, 0.9), len(body["data"]), body["pagination"]["total"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--import-rows", type=int, default=10_000)
    args = parser.parse_args()
    from tms.library.cases import service as case_service

    with tempfile.TemporaryDirectory(prefix="tms-bench-fields-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        server = ServerProcess(data, {}).start()
        try:
            tenant = make_tenant_on(server)
            project = tenant.create_project("Fields")["id"]
            target = tenant.create_project("Import target")["id"]
            for where in (project, target):
                for key, kind, more in FIELDS:
                    response = tenant.api.post("/api/v1/custom-fields", json={
                        "project_id": where, "key": key, "name": key.title(), "type": kind, **more})
                    assert response.status_code == 201, response.text
            started = time.perf_counter()

            async def build(db: Any) -> None:
                for start in range(0, args.cases, 5_000):
                    await case_service.create_cases(db, tenant.id, [
                        {"title": f"Case {i}", "bdd_content": GHERKIN.format(i=i), "project_id": project,
                         "priority": PRIORITIES[i % 4], "custom_fields": values(i)}
                        for i in range(start, min(args.cases, start + 5_000))
                    ])

            run_admin(server.db_path, build)
            seeded = time.perf_counter() - started
            rows: list[tuple[str, str, float, float, int, int]] = []
            cases = [
                ("no field filter (the project's first page)", {}),
                ("cf.browser=Chrome (select, 1 case in 5)", {"cf.browser": "Chrome"}),
                ("cf.component=component 7 (text, 1 in 1,000)", {"cf.component": "component 7"}),
                ("cf.effort=5 (number, 1 in 13)", {"cf.effort": "5"}),
                ("cf.platforms=iOS (multiselect option)", {"cf.platforms": "iOS"}),
                ("cf.smoke=true (checkbox, 1 in 3)", {"cf.smoke": "true"}),
                ("cf.browser=Chrome + priority=HIGH", {"cf.browser": "Chrome", "priority": "HIGH"}),
                ("cf.browser=Chrome + cf.choice_0=option 3", {"cf.browser": "Chrome", "cf.choice_0": "option 3"}),
                ("cf.browser=Chrome + q=component", {"cf.browser": "Chrome", "q": "component"}),
                ("cf.browser=Chrome, offset 10,000", {"cf.browser": "Chrome", "offset": 10_000}),
                ("cf.browser=Chrome, sort=title", {"cf.browser": "Chrome", "sort": "title"}),
            ]
            with tenant.client("read") as client:
                for label, params in cases:
                    print(f"timing: {label}", file=sys.stderr, flush=True)
                    p50, p90, count, total = timed(client, {"project_id": project, "limit": 50, **params},
                                                   args.requests)
                    rows.append((label, "p50 < 100 ms", p50, p90, count, total))
            columns = "browser,component,effort,smoke,platforms"
            web = tenant.web()  # signed in, used without `with` (httpx opens a client once)
            for label, params in [
                (f"web list, 5 field columns ({columns})", {}),
                ("web list, 5 field columns + cf.browser=Chrome", {"cf.browser": "Chrome"}),
            ]:
                p50, p90, count, total = timed(web, {"project_id": project, "cols": columns, **params},
                                               args.requests, path="/cases")
                rows.append((label, "< 150 ms", p50, p90, count, total))
            web.close()

            header = ["title", "bdd_content", *(f"cf:{key}" for key, _, _ in FIELDS)]
            buffer = io.StringIO()
            writer = csv.writer(buffer, lineterminator="\r\n")
            writer.writerow(header)
            for i in range(args.import_rows):
                v = values(i)
                writer.writerow([f"Imported {i}", GHERKIN.format(i=i),
                                 *(";".join(v[key]) if isinstance(v[key], list) else
                                   ("true" if v[key] is True else "false" if v[key] is False else v[key])
                                   for key, _, _ in FIELDS)])
            body = buffer.getvalue().encode()
            start = time.perf_counter()
            response = tenant.api.post("/api/v1/cases/import", params={"project_id": target, "format": "csv"},
                                       files={"file": ("cases.csv", body, "text/csv")}, timeout=600)
            imported = time.perf_counter() - start
            assert response.status_code == 201, response.text[:500]
            assert response.json()["created"] == args.import_rows
        finally:
            server.stop()

    print(f"\n{args.cases:,} cases with {len(FIELDS)} custom fields each, seeded in {seeded:.0f} s "
          f"({'PostgreSQL' if server.database_url else 'SQLite'}), load average {os.getloadavg()[0]:.1f} at the end, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    print("| request (limit 50) | target | p50 | p90 | rows | total |")
    print("|---|---|---|---|---|---|")
    for label, target_text, p50, p90, count, total in rows:
        print(f"| {label} | {target_text} | {p50 * 1000:.1f} ms | {p90 * 1000:.1f} ms | {count} | {total:,} |")
    print(f"| CSV import of {args.import_rows:,} cases with {len(FIELDS)} cf: columns ({len(body) / 1e6:.1f} MB) "
          f"| < 10 s | {imported:.1f} s | | {args.import_rows:,} | |")


if __name__ == "__main__":
    main()
