"""Result fields on the ingest path (issue 26).

    .venv/bin/python bench/result_fields.py [--rounds 15]

Starts a real `tms serve` on a temporary data dir, defines three result fields (select, number,
multiselect) in a project, and times POST /api/v1/ingest of 5,000 results (bench/ingest.py's items:
half linked, half unlinked) twice: without values, then with three values on every item (four
`result_field_values` rows a result). The first is bench/ingest.py's 5,000 case with the fields
defined; the second is what values cost. Prints p50/p90 of `--rounds` requests each.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ingest as bench_ingest  # bench/ingest.py, a sibling script

from tests.conftest import ServerProcess, make_tenant_on

FIELDS = ({"key": "browser", "type": "select", "options": ["Chrome", "Firefox"]},
          {"key": "build", "type": "number"},
          {"key": "areas", "type": "multiselect", "options": ["cart", "pay", "search"]})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory(prefix="tms-bench-fields-") as tmp:
        (Path(tmp) / "data").mkdir()
        server = ServerProcess(Path(tmp) / "data", {}).start()
        try:
            tenant = make_tenant_on(server)
            project = tenant.create_project("Bench")
            for field in FIELDS:
                answer = tenant.api.post("/api/v1/custom-fields", json={
                    "project_id": project["id"], "name": field["key"], "entity": "result", **field})
                assert answer.status_code == 201, answer.text
            codes = bench_ingest.make_cases(server, tenant, project["id"], 10_000)
            with tenant.client() as client:
                for label, with_values in (("no values", False), ("3 values on every result", True)):
                    payload = bench_ingest.items(5_000, codes)
                    if with_values:
                        for i, item in enumerate(payload):
                            item["custom_fields"] = {"browser": ("Chrome", "Firefox")[i % 2], "build": i,
                                                     "areas": ["cart", "pay"]}
                    body = json.dumps({"project_id": project["id"], "results": payload}).encode()
                    bench_ingest.time_ingests(client, body, 2)  # warm-up
                    latencies = bench_ingest.time_ingests(client, body, rounds)
                    print(f"| ingest 5,000 results, {label} | {bench_ingest.percentile(latencies, 0.5) * 1000:.0f} ms"
                          f" | {bench_ingest.percentile(latencies, 0.9) * 1000:.0f} ms |")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
