"""`tms ingest --gate failures|new-failures` and `tms quarantine list`: clients of the failure API.

The gate reads the run's clusters (GET /api/v1/runs/{id}/failures) once the ingest is stored and sorts
every failure into one of: quarantined (set aside, never fails a gate), known (a known issue explains
it), new (its fingerprint was never seen in the project before) and recurring (seen before, no known
issue). ``failures`` fails on any failure that is not quarantined; ``new-failures`` only on new ones.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, TextIO

import httpx

EXIT_GATE = 5
GATES = ("failures", "new-failures")


class GateError(Exception):
    """The gate could not be decided: the service did not answer the failures request."""


BUCKETS = ("quarantined", "known", "new", "recurring")


def classify_failures(clusters: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each failure of the run in exactly one bucket: quarantined, known, new or recurring."""
    buckets: dict[str, list[dict[str, Any]]] = {name: [] for name in BUCKETS}
    for cluster in clusters:
        for result in cluster.get("results") or []:
            item = {"test_case_code": result.get("test_case_code"), "title": result.get("title"),
                    "fingerprint": cluster.get("fingerprint"), "error_message": cluster.get("error_message"),
                    "bug_ticket_key": (cluster.get("known_issue") or {}).get("bug_ticket_key")}
            if result.get("quarantined"):
                buckets["quarantined"].append(item)
            elif cluster.get("known_issue"):
                buckets["known"].append(item)
            elif cluster.get("new"):
                buckets["new"].append(item)
            else:
                buckets["recurring"].append(item)
    return buckets


def failed(gate: str, buckets: dict[str, list[dict[str, Any]]]) -> bool:
    if gate == "new-failures":
        return bool(buckets["new"])
    return bool(buckets["known"] or buckets["new"] or buckets["recurring"])


def fetch_clusters(url: str, token: str, run_id: str, timeout: float) -> list[dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    try:
        response = httpx.get(f"{url}/api/v1/runs/{run_id}/failures", headers=headers, timeout=timeout)
    except httpx.HTTPError as exc:
        raise GateError(f"could not read the run's failures: {type(exc).__name__}") from exc
    if response.status_code != 200:
        raise GateError(f"could not read the run's failures: HTTP {response.status_code}")
    data = response.json().get("data")
    return data if isinstance(data, list) else []


def describe(gate: str, buckets: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The summary lines: counts per bucket, then the failures that decide the gate."""
    # only the buckets: the summary that carries them also names the gate
    total = sum(len(buckets[name]) for name in BUCKETS)
    verdict = "FAILED" if failed(gate, buckets) else "passed"
    lines = [f"gate {gate}: {verdict} — {total} failure(s): {len(buckets['new'])} new, "
             f"{len(buckets['recurring'])} recurring, {len(buckets['known'])} known issue, "
             f"{len(buckets['quarantined'])} quarantined"]
    shown = ("new",) if gate == "new-failures" else ("new", "recurring", "known")
    for bucket in (*shown, "quarantined"):
        for item in buckets[bucket][:50]:
            name = " ".join(part for part in (item["test_case_code"], item["title"]) if part)
            bug = f" [{item['bug_ticket_key']}]" if item["bug_ticket_key"] else ""
            message = (item["error_message"] or "").splitlines()[0][:160] if item["error_message"] else ""
            lines.append(f"  {bucket:<11} {name}{bug}: {message}".rstrip(": "))
        if len(buckets[bucket]) > 50:
            lines.append(f"  {bucket:<11} … and {len(buckets[bucket]) - 50} more")
    return lines


# ---- tms quarantine list -------------------------------------------------------------------------

def add_quarantine_arguments(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="quarantine_command", required=True, metavar="QUARANTINE_COMMAND")
    listing = commands.add_parser("list", help="print the project's quarantined tests")
    listing.add_argument("--project", required=True, metavar="ID", help="project id")
    listing.add_argument("--url", help="service base URL (default: $TMS_URL)")
    listing.add_argument("--token", help="API token with read scope (default: $TMS_TOKEN)")
    listing.add_argument("--json", action="store_true", help="print the entries as JSON")
    listing.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS")


def run_quarantine(args: argparse.Namespace, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    url = (args.url or os.environ.get("TMS_URL") or "").strip().rstrip("/")
    token = (args.token or os.environ.get("TMS_TOKEN") or "").strip()
    if not url or not token:
        print("tms quarantine: error: set TMS_URL and TMS_TOKEN (or pass --url and --token)", file=err)
        return 2
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    entries: list[dict[str, Any]] = []
    offset = 0
    try:
        with httpx.Client(base_url=url, headers=headers, timeout=args.timeout) as client:
            while True:
                response = client.get("/api/v1/quarantine",
                                      params={"project_id": args.project, "limit": 500, "offset": offset})
                if response.status_code != 200:
                    detail = response.json().get("detail", "") if response.headers.get(
                        "content-type", "").endswith("json") else ""
                    print(f"tms quarantine: error: HTTP {response.status_code} {detail}".rstrip(), file=err)
                    return 1
                body = response.json()
                entries += body["data"]
                offset += len(body["data"])
                if not body["data"] or offset >= body["pagination"]["total"]:
                    break
    except httpx.HTTPError as exc:
        print(f"tms quarantine: error: could not reach {url}: {type(exc).__name__}", file=err)
        return 4
    if args.json:
        print(json.dumps(entries, ensure_ascii=False, indent=2), file=out)
        return 0
    if not entries:
        print(f"no quarantined test in project {args.project}", file=out)
        return 0
    for entry in entries:
        name = entry["test_case_code"] or entry["title"]
        state = "active" if entry["active"] else "expired"
        until = f" until {entry['expires_at']}" if entry["expires_at"] else ""
        flag = " (unknown test)" if entry["unknown_test"] else ""
        print(f"{state:<8} {name}{flag}{until}: {entry['reason']}", file=out)
    active = sum(1 for entry in entries if entry["active"])
    print(f"{active} active, {len(entries) - active} expired", file=out)
    return 0
