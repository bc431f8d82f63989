"""`tms ingest REPORT... --project ID`: argument parsing and the command's flow.

find files -> detect each one's format -> parse (retries folded where the format says so) -> title
repeated tests apart -> map to ingest items -> one
gzip POST /api/v1/ingest (retried under one Idempotency-Key) -> upload the files the reports
reference to their results -> summary.

Exit status (docs/reporter.md):
  0  every result accepted (201), or some rejected (207) without --strict: a warning lists them
  1  a report cannot be parsed (file, line, reason: the other reports are still sent unless
     --strict), no report holds a test, or the service refused the request (4xx: bad token,
     missing scope, unknown project, body too large)
  2  usage or configuration error: no URL or token, a report path that does not exist
  3  some results rejected (207) with --strict
  4  the service could not be reached, or kept answering 5xx/429, after every retry
  5  --gate failures|new-failures: the gate failed (see tms.reporter.gate)
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any, TextIO
from urllib.parse import urlsplit

from tms.reporter.allure import AllureResults
from tms.reporter.allure import is_container as is_allure_container
from tms.reporter.answer import report_answer, report_dry_run, size_text, summary_of
from tms.reporter.console import EXIT_FAILED, EXIT_NETWORK, EXIT_OK, EXIT_REJECTED, EXIT_USAGE, Console
from tms.reporter.ctrf import parse_ctrf
from tms.reporter.cucumber import parse_cucumber
from tms.reporter.dart import parse_dart
from tms.reporter.detect import (
    ALLURE,
    ALLURE_NAMES,
    CTRF,
    CUCUMBER,
    DART,
    FORMATS,
    GOTEST,
    JEST,
    JUNIT,
    MOCHA,
    NUNIT,
    NUNIT2,
    PLAYWRIGHT,
    ROBOT,
    RSPEC,
    TESTNG,
    TRX,
    XUNIT,
)
from tms.reporter.files import NoReports, Report, classify, expand
from tms.reporter.gate import GATES
from tms.reporter.gotest import parse_gotest
from tms.reporter.jest import parse_jest
from tms.reporter.junit import parse_junit
from tms.reporter.mapping import Item, to_items
from tms.reporter.mocha import parse_mocha
from tms.reporter.model import ReportError, TestOutcome, paused_gc, title_apart
from tms.reporter.nunit import parse_nunit
from tms.reporter.nunit2 import parse_nunit2
from tms.reporter.playwright import parse_playwright
from tms.reporter.projects import ProjectNotResolved, resolve_project
from tms.reporter.robot import parse_robot
from tms.reporter.rspec import parse_rspec
from tms.reporter.testng import parse_testng
from tms.reporter.trx import parse_trx
from tms.reporter.upload import NetworkFailure, compress, post_ingest
from tms.reporter.xunit import parse_xunit


def add_ingest_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("reports", nargs="+", metavar="REPORT", help="report files, directories or globs")
    parser.add_argument("--project", required=True, metavar="ID|NAME",
                        help="the project the run is created in: its id (Projects page) or its name")
    parser.add_argument("--run-name", help="display name of the run (default: a timestamp)")
    parser.add_argument("--environment", help="environment label of the run")
    parser.add_argument("--framework", help="framework label when the report does not name one")
    parser.add_argument("--run-id", metavar="ID",
                        help="add the results to this existing run (a shard; see `tms run create`) "
                             "instead of creating a completed run")
    parser.add_argument("--url", help="service base URL (default: $TMS_URL)")
    parser.add_argument("--token", help="API token with write scope (default: $TMS_TOKEN)")
    parser.add_argument("--dry-run", action="store_true",
                        help="parse and print what would be sent, create nothing; with a URL and token, "
                             "also list the case codes the service does not know")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON on standard output")
    parser.add_argument("--format", choices=FORMATS, metavar="FORMAT",
                        help="read every report as this format instead of detecting it: " + ", ".join(FORMATS))
    parser.add_argument("--strict", action="store_true",
                        help="send nothing when a report cannot be read; exit 3 when the service rejects any result")
    parser.add_argument("-v", "--verbose", action="store_true", help="tell each file, request and retry")
    parser.add_argument("--retries", type=int, default=4, metavar="N",
                        help="retries on connection errors, 429 and 5xx (default: 4)")
    parser.add_argument("--retry-backoff", type=float, default=1.0, metavar="SECONDS",
                        help="first retry delay, doubled each time (default: 1)")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                        help="time limit of one request (default: 120)")
    parser.add_argument("--gate", choices=GATES, help="exit 5 when any failure (failures) or any failure never "
                        "seen before (new-failures) remains once quarantined tests are set aside")


def run_ingest(args: argparse.Namespace, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    url = (args.url or os.environ.get("TMS_URL") or "").strip().rstrip("/")
    token = (args.token or os.environ.get("TMS_TOKEN") or "").strip()
    console = Console(token or None, args.verbose, stdout or sys.stdout, stderr or sys.stderr)
    try:
        return _run(args, url, token, console)
    except KeyboardInterrupt:
        console.err("tms ingest: interrupted")
        return 130
    except Exception as exc:
        # never Python's own traceback: it bypasses the Console and could carry the token
        if args.verbose:
            import traceback

            console.err(traceback.format_exc().rstrip())
        console.err(f"tms ingest: error: unexpected {type(exc).__name__}: {exc}")
        return EXIT_FAILED


def _run(args: argparse.Namespace, url: str, token: str, console: Console) -> int:
    args.token_value = token
    problem = _check_settings(args, url, token)
    if problem:
        console.err(f"tms ingest: error: {problem}")
        return EXIT_USAGE

    try:
        files, warnings = expand(args.reports)
    except NoReports as exc:
        console.err(f"tms ingest: error: {exc}")
        return EXIT_USAGE
    for warning in warnings:
        console.err(f"tms ingest: warning: {warning}")

    outcomes, parsed, unreadable = _parse_all(args.reports, files, console, args.format)
    for error in unreadable:
        console.err(f"tms ingest: error: {error}")
    if unreadable and args.strict:
        console.err(f"tms ingest: error: {len(unreadable)} report(s) cannot be read; nothing was sent (--strict)")
        return EXIT_FAILED
    if not outcomes:
        if not unreadable:
            console.err(f"tms ingest: error: no test found in {len(parsed)} report(s): {', '.join(parsed) or '-'}")
        else:
            console.err("tms ingest: error: no readable report holds a test; nothing was sent")
        return EXIT_FAILED

    if url and token:
        try:
            resolved = resolve_project(url, token, args.project, args.timeout)
        except ProjectNotResolved as exc:
            console.err(f"tms ingest: error: {exc}")
            return EXIT_NETWORK if exc.network else EXIT_FAILED
        if resolved.looked_up:
            console.debug(f"project {args.project.strip()!r} is {resolved.project_id}")
        args.project = resolved.project_id

    items = to_items(outcomes)
    payload = _payload(args, items)
    summary = summary_of(args, files=parsed, outcomes=outcomes, items=items)
    summary["unreadable"] = [{"file": e.path, "line": e.line, "reason": e.reason} for e in unreadable]

    if args.dry_run:
        return report_dry_run(args, url, token, payload, items, summary, console)

    body = compress(payload)
    console.debug(f"{len(items)} results, {len(body)} bytes gzip")
    console.progress(f"uploading {len(items)} results ({size_text(len(body))} gzip)...")
    try:
        reply = post_ingest(url, token, body, retries=max(0, args.retries), backoff=max(0.0, args.retry_backoff),
                            timeout=args.timeout, log=console.debug)
    except NetworkFailure as exc:
        console.err(f"tms ingest: error: could not deliver the results to {url}: {exc}")
        return EXIT_NETWORK
    code = report_answer(args, url, token, reply, items, summary, console)
    if unreadable and code in (EXIT_OK, EXIT_REJECTED):
        console.err(f"tms ingest: error: {len(unreadable)} report(s) could not be read (listed above); the run holds "
                    "the results of the others (--strict sends nothing when a report is unreadable)")
        return EXIT_FAILED
    return code


def _check_settings(args: argparse.Namespace, url: str, token: str) -> str | None:
    if not args.project.strip():
        return "--project must name a project (its id or its name)"
    if args.run_id is not None and (not args.run_id.strip() or args.run_name or args.environment):
        return "--run-id must name a run, and takes no --run-name or --environment: the run already has them"
    if args.retries < 0 or args.retry_backoff < 0 or args.timeout <= 0:
        return "--retries and --retry-backoff must be >= 0, --timeout > 0"
    if args.dry_run and not (url and token):
        return None  # a dry run without a service only parses
    if not url:
        return "no service URL: pass --url or set TMS_URL"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return f"--url/TMS_URL must be an http(s) URL, got {url!r}"
    if not token:
        return "no API token: set TMS_TOKEN (or pass --token) to a token with the write scope"
    if not token.isascii() or not token.isprintable() or " " in token:
        return "the API token holds spaces or characters a token never has: check TMS_TOKEN (not shown)"
    return None


# every format but Allure, whose result files are read together (tms.reporter.allure)
PARSERS: dict[str, Callable[[str], list[TestOutcome]]] = {
    JUNIT: parse_junit, CUCUMBER: parse_cucumber, CTRF: parse_ctrf, PLAYWRIGHT: parse_playwright, TRX: parse_trx,
    NUNIT: parse_nunit, XUNIT: parse_xunit, TESTNG: parse_testng, ROBOT: parse_robot, GOTEST: parse_gotest,
    NUNIT2: parse_nunit2, MOCHA: parse_mocha, JEST: parse_jest, RSPEC: parse_rspec, DART: parse_dart,
}


@paused_gc
def _parse_all(arguments: list[str], files: list[str], console: Console,
               forced: str | None = None) -> tuple[list[TestOutcome], list[str], list[ReportError]]:
    """Outcomes of every readable report, the files read, and the errors of those that could not be
    read: one bad file never hides the others' results (--strict decides what the errors mean)."""
    explicit = {os.path.normpath(a) for a in arguments if os.path.isfile(a)}
    reports: list[Report] = []
    errors: list[ReportError] = []
    allure_results = AllureResults()  # read as they are found: detection has read each one already
    passed_over: list[str] = []
    for path in files:
        try:
            found_reports, skipped = classify([path], explicit, forced)
        except ReportError as exc:
            errors.append(exc)
            continue
        for found_report in found_reports:
            if found_report.format == ALLURE:
                allure_results.add(found_report.path, found_report.content)
                found_report = Report(found_report.path, ALLURE)  # its bytes are not kept
            reports.append(found_report)
        for skipped_path in skipped:
            passed_over.append(skipped_path)
    # a file named like an Allure result in a results folder is never passed over in silence: read as
    # one, it is either a result after all or an error in the summary naming what is wrong with it
    allure_folders = {os.path.dirname(r.path) for r in reports if r.format == ALLURE}
    for skipped_path in passed_over:
        folder = os.path.dirname(skipped_path)
        if skipped_path.endswith(ALLURE_NAMES) and (folder in allure_folders or "allure" in os.path.basename(folder)):
            allure_results.add(skipped_path)
            reports.append(Report(skipped_path, ALLURE))
        else:
            console.debug(f"skipped {skipped_path}: not a test report of a known format")
    outcomes: list[TestOutcome] = []
    parsed: list[str] = []
    allure = [r.path for r in reports if r.format == ALLURE]
    for report in reports:
        if report.format == ALLURE:
            if allure and report.path == allure[0]:
                found, failures = allure_results.finish()
                errors.extend(failures)
                bad = {e.path for e in failures}
                read = [p for p in allure if p not in bad and not is_allure_container(p)]
                console.debug(f"allure: {len(read)} result file(s), {len(found)} tests")
                outcomes.extend(found)
                parsed.extend(read)
            continue

        def tick(count: int, path: str = report.path) -> None:
            console.progress(f"parsing {path}: {count} tests")

        try:
            found = parse_junit(report.path, tick) if report.format == JUNIT else PARSERS[report.format](report.path)
        except ReportError as exc:
            if exc.not_a_report and report.path not in explicit and forced is None:
                console.debug(f"skipped {report.path}: {exc.reason}")
                continue
            errors.append(exc)
            continue
        frameworks = sorted({o.framework for o in found if o.framework})
        console.debug(f"{report.path}: {report.format}, {len(found)} tests"
                      + (f", framework {', '.join(frameworks)}" if frameworks else ""))
        outcomes.extend(found)
        parsed.append(report.path)
    console.end_progress()
    return title_apart(outcomes), parsed, errors


def _payload(args: argparse.Namespace, items: list[Item]) -> dict[str, Any]:
    payload: dict[str, Any] = {"project_id": args.project.strip()}
    if args.run_id:
        payload["run_id"] = args.run_id.strip()
    if args.run_name:
        payload["run_name"] = args.run_name
    if args.environment:
        payload["environment"] = args.environment
    if args.framework:
        payload["framework"] = args.framework  # the default; a framework read from a report overrides it
    payload["results"] = [item.result for item in items]
    return payload
