"""The organised library (issue 14): tree, search, filters, import and export at 100,000 cases.

    .venv/bin/python bench/library.py [--cases 100000] [--sections 2000] [--requests 30] [--import-rows 20000]

Starts a real `tms serve`, builds a project with a three-level tree of `--sections` sections and
`--cases` cases spread over them (realistic Gherkin from a 3,000-word vocabulary, tags, priorities,
layers), then times over loopback:
- the section tree with counts (GET /api/v1/sections, and the whole cases page that draws it);
- `q` searches (a common word, a rare word, two words, a code, a prefix);
- filtered pages (each filter, a subtree, combinations, a sorted page);
- a CSV import of `--import-rows` new cases into another project (one request);
- the CSV export of the whole project, streamed (time and the server's peak memory growth).
Prints tables to copy into bench/README.md.
"""

from __future__ import annotations

import argparse
import csv
import io
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.conftest import ServerProcess, make_tenant_on, run_admin

random.seed(14)
SYLLABLES = ["ka", "lo", "mi", "ren", "tas", "vo", "qui", "zen", "par", "dul", "fen", "gor", "hil", "jas", "nup"]
VOCABULARY = sorted({"".join(random.choice(SYLLABLES) for _ in range(3)) for _ in range(6000)})[:3000]
PRIORITIES = ("LOW", "MEDIUM", "HIGH", "CRITICAL")
LAYERS = ("UI", "API", "INTEGRATION", "UNIT", None)
AUTOMATION = ("MANUAL", "AUTOMATED", "IN_PROGRESS", "FLAKY")
TAGS = ("smoke", "regression", "nightly", "checkout", "auth", "search", "mobile", "slow")


def words(n: int) -> str:
    # a Zipf-like pick: low indexes are common words, high ones rare
    return " ".join(VOCABULARY[min(len(VOCABULARY) - 1, int(random.paretovariate(1.1)) - 1)] for _ in range(n))


def feature(i: int) -> str:
    return (f"Feature: {words(3)}\n\n  Scenario: case {i} {words(4)}\n    Given {words(5)}\n"
            f"    And {words(4)}\n    When {words(5)}\n    Then {words(5)}\n")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def timed(client: Any, path: str, params: dict[str, Any], requests: int) -> tuple[float, float, int, int]:
    latencies = []
    response = None
    for _ in range(requests + 3):
        start = time.perf_counter()
        response = client.get(path, params=params)
        latencies.append(time.perf_counter() - start)
        assert response.status_code == 200, response.text[:300]
    latencies = latencies[3:]
    assert response is not None
    body = response.json() if path.startswith("/api") else {}
    count = len(body.get("data", [])) if body else 0
    total = body.get("pagination", {}).get("total", count) if body else 0
    return percentile(latencies, 0.5), percentile(latencies, 0.9), count, total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--sections", type=int, default=2_000)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--import-rows", type=int, default=20_000)
    args = parser.parse_args()
    from tms.library.cases import service as case_service
    from tms.library.sections import service as section_service
    from tms.library.sections.models import SectionCreate

    with tempfile.TemporaryDirectory(prefix="tms-bench-library-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        server = ServerProcess(data, {}).start()
        try:
            tenant = make_tenant_on(server)
            project = tenant.create_project("Library")
            target = tenant.create_project("Import target")
            started = time.perf_counter()
            section_ids: list[str] = []

            async def build(db: Any) -> None:
                # three levels: top sections, ~9 children each, ~10 grandchildren each
                tops = max(1, args.sections // 100)
                levels: list[list[str]] = [[], [], []]
                for t in range(tops):
                    s = await section_service.create_section(db, tenant.id, SectionCreate(
                        project_id=project["id"], name=f"Area {t}"))
                    levels[0].append(s.id)
                n = tops
                parent_index = 0
                while n < args.sections:
                    level = 1 if len(levels[1]) < tops * 9 else 2
                    parents = levels[level - 1]
                    parent = parents[parent_index % len(parents)]
                    parent_index += 1
                    s = await section_service.create_section(db, tenant.id, SectionCreate(
                        project_id=project["id"], name=f"Part {n}", parent_id=parent))
                    levels[level].append(s.id)
                    n += 1
                    if level == 1 and len(levels[1]) == tops * 9:
                        parent_index = 0
                section_ids.extend(levels[0] + levels[1] + levels[2])
                for start in range(0, args.cases, 5_000):
                    await case_service.create_cases(db, tenant.id, [
                        {"title": f"Case {i} {words(3)}", "bdd_content": feature(i), "project_id": project["id"],
                         "section_id": section_ids[i % len(section_ids)], "priority": PRIORITIES[i % 4],
                         "layer": LAYERS[i % 5], "automation_status": AUTOMATION[i % 4],
                         "tags": [TAGS[i % 8], TAGS[(i // 8) % 8]],
                         "tickets": [{"key": f"SHOP-{i}", "source": "JIRA"}] if i % 10 == 0 else []}
                        for i in range(start, min(args.cases, start + 5_000))
                    ])

            run_admin(server.db_path, build)
            seeded = time.perf_counter() - started
            top, mid = section_ids[0], section_ids[len(section_ids) // 2]
            common, rare = VOCABULARY[0], VOCABULARY[2500]
            rows: list[tuple[str, str, float, float, int, int]] = []
            with tenant.client("read") as client:
                p50, p90, count, total = timed(client, "/api/v1/sections", {"project_id": project["id"]},
                                               args.requests)
                rows.append((f"GET /sections, the whole tree with counts ({count} sections)", "< 100 ms", p50, p90,
                             count, count))
                web = tenant.web()
                p50, p90, _, _ = timed(web, "/cases", {"project_id": project["id"]}, args.requests)
                rows.append(("GET /cases page (tree + 50 cases + pickers), HTML", "< 100 ms", p50, p90, 50, 0))
                searches = [
                    (f"q={common} (common word)", {"q": common}),
                    (f"q={rare} (rare word)", {"q": rare}),
                    (f"q={common} {VOCABULARY[1]} (two words)", {"q": f"{common} {VOCABULARY[1]}"}),
                    ("q=SHOP-4210 (a ticket key)", {"q": "SHOP-4210"}),
                    ("q=TC-77777 (a code)", {"q": "TC-77777"}),
                    (f"q={rare[:4]} (prefix)", {"q": rare[:4]}),
                    (f"q={common} + priority=HIGH + section subtree", {"q": common, "priority": "HIGH",
                                                                        "section_id": top,
                                                                        "include_subsections": "true"}),
                ]
                for label, params in searches:
                    p50, p90, count, total = timed(client, "/api/v1/cases",
                                                   {"project_id": project["id"], "limit": 100, **params},
                                                   args.requests)
                    rows.append((f"search {label}", "p50 < 50 ms", p50, p90, count, total))
                filters = [
                    ("priority=HIGH", {"priority": "HIGH"}),
                    ("automation_status=FLAKY", {"automation_status": "FLAKY"}),
                    ("layer=API", {"layer": "API"}),
                    ("tag=nightly", {"tag": "nightly"}),
                    ("tag=smoke&tag=auth (any)", {"tag": ["smoke", "auth"]}),
                    ("section_id (one section)", {"section_id": mid}),
                    ("section_id + include_subsections (top area, ~1% of the tree)",
                     {"section_id": top, "include_subsections": "true"}),
                    ("priority + layer + automation", {"priority": "HIGH", "layer": "UI",
                                                       "automation_status": "MANUAL"}),
                    ("priority=HIGH, offset 20,000", {"priority": "HIGH", "offset": 20_000}),
                    ("sort=title (whole project)", {"sort": "title"}),
                    ("sort=priority&order=desc + tag", {"sort": "priority", "order": "desc", "tag": "slow"}),
                ]
                for label, params in filters:
                    p50, p90, count, total = timed(client, "/api/v1/cases",
                                                   {"project_id": project["id"], "limit": 100, **params},
                                                   args.requests)
                    rows.append((f"filter {label}", "p50 < 50 ms", p50, p90, count, total))

                # export: streamed; the server's peak RSS before and after tells whether it buffered. Run
                # twice: the first also fills SQLite's page caches (up to 32 MB per connection), which the
                # earlier requests, all answered from indexes, may have left nearly empty; the second
                # export's growth is what streaming itself costs.
                pid = server.process.pid if server.process else 0
                exports: list[tuple[float, float, int]] = []
                for _ in range(2):
                    before = peak_rss_kb(pid)
                    start = time.perf_counter()
                    size = lines = 0
                    with client.stream("GET", "/api/v1/cases/export", params={"project_id": project["id"]},
                                       timeout=300) as stream:
                        first_byte = None
                        for chunk in stream.iter_bytes():
                            if first_byte is None:
                                first_byte = time.perf_counter() - start
                            size += len(chunk)
                            lines += chunk.count(b"\r\n")
                    exports.append((time.perf_counter() - start, first_byte or 0, peak_rss_kb(pid) - before))

                # import: a CSV of new cases into another project, sections by path
                buffer = io.StringIO()
                writer = csv.writer(buffer, lineterminator="\r\n")
                writer.writerow(["code", "title", "section", "status", "priority", "layer", "is_e2e",
                                 "automation_status", "tags", "tickets", "bdd_content"])
                for i in range(args.import_rows):
                    writer.writerow([f"IMP-{i}", f"Imported {i} {words(3)}", f"Area {i % 10} / Part {i % 7}", "READY",
                                     PRIORITIES[i % 4], "UI", "false", "MANUAL", "smoke;imported", f"JIRA:IMP-{i}",
                                     feature(i)])
                payload = buffer.getvalue().encode()
                writer_client = tenant.api
                start = time.perf_counter()
                response = writer_client.post("/api/v1/cases/import", params={"project_id": target["id"]},
                                              files={"file": ("cases.csv", payload, "text/csv")}, timeout=300)
                import_seconds = time.perf_counter() - start
                assert response.status_code == 201, response.text[:500]
                imported = response.json()
                start = time.perf_counter()
                again = writer_client.post("/api/v1/cases/import", params={"project_id": target["id"]},
                                           files={"file": ("cases.csv", payload, "text/csv")}, timeout=300)
                reimport_seconds = time.perf_counter() - start
                assert again.json()["unchanged"] == args.import_rows, again.text[:300]

        finally:
            server.stop()

    print(f"seeded {args.sections:,} sections and {args.cases:,} cases in {seeded:.1f} s\n")
    width = max(len(r[0]) for r in rows)
    print(f"| {'request (limit=100)':<{width}} | target | p50 | p90 | rows / total |")
    print(f"|{'-' * (width + 2)}|---|---|---|---|")
    for label, target_text, p50, p90, count, total in rows:
        print(f"| {label:<{width}} | {target_text} | {p50 * 1000:.1f} ms | {p90 * 1000:.1f} ms | {count} / {total} |")
    print()
    print(f"| CSV import of {args.import_rows:,} new cases (one request, {len(payload) / 1e6:.1f} MB) | < 10 s | "
          f"{import_seconds:.2f} s ({imported['created']} created, {imported['sections_created']} sections) |")
    print(f"| the same file again (all unchanged) | - | {reimport_seconds:.2f} s |")
    for n, (seconds, first_byte, _) in enumerate(exports, 1):
        print(f"| CSV export {n} of {args.cases:,} cases ({size / 1e6:.1f} MB, {lines - 1:,} rows, first byte "
              f"{first_byte * 1000:.0f} ms) | < 5 s | {seconds:.2f} s |")
    for n, (_, _, growth) in enumerate(exports, 1):
        print(f"| server peak RSS growth during export {n} | constant memory | {growth / 1024:.1f} MB |")

if __name__ == "__main__":
    main()
