"""`tms cases export|import`: the library's import/export over the API, like `tms ingest`.

A client: it talks to a running service with --url/--token (or TMS_URL/TMS_TOKEN) and imports
nothing of the server.

Exit status: 0 done (an import with rejected rows prints them as warnings), 1 the service refused
(bad file, unknown project, token) or a file could not be read, 2 usage (no URL or token),
3 rows rejected with --strict, 4 the service could not be reached.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, TextIO

import httpx

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_REJECTED, EXIT_NETWORK = 0, 1, 2, 3, 4


def add_cases_arguments(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="cases_command", required=True, metavar="CASES_COMMAND")
    export = commands.add_parser("export", help="write a project's cases as CSV")
    export.add_argument("--project", required=True, metavar="ID")
    export.add_argument("--output", "-o", metavar="FILE", help="file to write (default: standard output)")
    imp = commands.add_parser("import", help="import cases from a CSV or TestRail XML file (one transaction)")
    imp.add_argument("file", metavar="FILE")
    imp.add_argument("--project", required=True, metavar="ID")
    imp.add_argument("--format", choices=("csv", "testrail-xml"), help="default: from the file name (.xml = TestRail)")
    imp.add_argument("--dry-run", action="store_true",
                     help="show what would be created/updated/rejected; write nothing")
    imp.add_argument("--strict", action="store_true", help="exit 3 when any row is rejected")
    for sub in (export, imp):
        sub.add_argument("--url", help="service base URL (default: $TMS_URL)")
        sub.add_argument("--token", help="API token (default: $TMS_TOKEN); import needs the write scope")
        sub.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS")


def _problem(response: httpx.Response) -> str:
    try:
        body: Any = response.json()
    except ValueError:
        return f"HTTP {response.status_code}"
    detail = body.get("detail") if isinstance(body, dict) else None
    return f"HTTP {response.status_code}: {detail or body}"


def run_cases(args: argparse.Namespace, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    url = (args.url or os.environ.get("TMS_URL") or "").strip().rstrip("/")
    token = (args.token or os.environ.get("TMS_TOKEN") or "").strip()
    if not url or not token:
        print("tms cases: error: pass --url and --token (or set TMS_URL and TMS_TOKEN)", file=err)
        return EXIT_USAGE
    headers = {"Authorization": f"Bearer {token}"}
    try:
        with httpx.Client(base_url=url, headers=headers, timeout=args.timeout) as client:
            if args.cases_command == "export":
                return _export(client, args, out, err)
            return _import(client, args, out, err)
    except httpx.TransportError as exc:
        print(f"tms cases: error: could not reach {url}: {type(exc).__name__}", file=err)
        return EXIT_NETWORK


def _export(client: httpx.Client, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    params = {"project_id": args.project, "format": "csv"}
    with client.stream("GET", "/api/v1/cases/export", params=params) as response:
        if response.status_code != 200:
            response.read()
            print(f"tms cases export: error: {_problem(response)}", file=err)
            return EXIT_FAILED
        if args.output:
            with Path(args.output).open("wb") as handle:
                for chunk in response.iter_bytes():
                    handle.write(chunk)
            print(f"wrote {args.output}", file=err)
        else:
            for text in response.iter_text():
                out.write(text)
    return EXIT_OK


def _import(client: httpx.Client, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    path = Path(args.file)
    try:
        data = path.read_bytes()
    except OSError as exc:
        print(f"tms cases import: error: cannot read {path}: {exc.strerror}", file=err)
        return EXIT_FAILED
    fmt = args.format or ("testrail-xml" if path.suffix.lower() == ".xml" else "csv")
    params = {"project_id": args.project, "format": fmt, "dry_run": "true" if args.dry_run else "false"}
    response = client.post("/api/v1/cases/import", params=params, files={"file": (path.name, data)})
    if response.status_code not in (201, 207):
        print(f"tms cases import: error: {_problem(response)}", file=err)
        return EXIT_FAILED
    body = response.json()
    verb = "would be" if args.dry_run else "were"
    print(f"{body['created']} created, {body['updated']} updated, {body.get('unchanged', 0)} unchanged, "
          f"{body['rejected']} rejected ({'dry run: nothing ' + verb + ' written' if args.dry_run else 'imported'})",
          file=out)
    for error in body["errors"]:
        print(f"row {error['row']}: {error['error']}", file=err)
    if body["rejected"] and args.strict:
        return EXIT_REJECTED
    return EXIT_OK
