"""`tms ingest REPORT... --project ID`: argument parsing and the command's flow."""

from __future__ import annotations

import argparse


def add_ingest_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("reports", nargs="+", metavar="REPORT", help="report files, directories or globs")
    parser.add_argument("--project", required=True, metavar="ID", help="project id the run is created in")
    parser.add_argument("--run-name", help="display name of the run (default: a timestamp)")
    parser.add_argument("--environment", help="environment label of the run")
    parser.add_argument("--framework", help="framework label when the report does not name one")
    parser.add_argument("--url", help="service base URL (default: $TMS_URL)")
    parser.add_argument("--token", help="API token with write scope (default: $TMS_TOKEN)")


def run_ingest(args: argparse.Namespace) -> int:
    raise SystemExit("tms ingest: the reporter is being built in issue 6")
