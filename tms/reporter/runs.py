"""`tms run create` and `tms run complete`: one run for several CI shards (docs/reporter.md, "Shards").

    RUN_ID=$(tms run create --project P --name "CI #42" | tail -n 1)   # once, before the shards
    tms ingest reports/ --project P --run-id "$RUN_ID"                 # in every shard
    tms run complete "$RUN_ID"                                         # once, after the shards

A client of the public API like `tms ingest` (same --url/--token, TMS_URL/TMS_TOKEN, exit
statuses): ``create`` POSTs /api/v1/runs and prints the run id alone on its last line; ``complete``
PATCHes the run to COMPLETED, which fires test_run.completed once (completing it again is harmless).

Retries: ``complete`` is idempotent, so it is retried like an ingest (connection errors, 429, 5xx);
``create`` is retried only when the connection could not be made, so a lost answer never leaves a
second, empty run behind.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, TextIO
from urllib.parse import quote, urlsplit

import httpx

from tms.reporter.upload import USER_AGENT

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_NETWORK = 4


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="run_command", required=True, metavar="RUN_COMMAND")
    create = commands.add_parser("create", help="create a PENDING run for shards; prints its id on the last line")
    create.add_argument("--project", required=True, metavar="ID", help="project id the run is created in")
    create.add_argument("--name", required=True, help="display name of the run")
    create.add_argument("--environment", help="environment label of the run")
    complete = commands.add_parser("complete", help="complete a run after its shards (fires test_run.completed)")
    complete.add_argument("run_id", metavar="ID", help="the run id `tms run create` printed")
    for sub in (create, complete):
        sub.add_argument("--url", help="service base URL (default: $TMS_URL)")
        sub.add_argument("--token", help="API token with write scope (default: $TMS_TOKEN)")
        sub.add_argument("--retries", type=int, default=4, metavar="N",
                         help="retries on connection errors (and 429/5xx for complete; default: 4)")
        sub.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                         help="time limit of one request (default: 30)")


class _Output:
    def __init__(self, token: str, stdout: TextIO, stderr: TextIO) -> None:
        self.token, self.stdout, self.stderr = token, stdout, stderr

    def _clean(self, text: str) -> str:
        return text.replace(self.token, "***") if len(self.token) >= 4 else text

    def out(self, text: str) -> None:
        self.stdout.write(self._clean(text) + "\n")
        self.stdout.flush()

    def err(self, text: str) -> None:
        self.stderr.write(self._clean(text) + "\n")
        self.stderr.flush()


def run_run(args: argparse.Namespace, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    url = (args.url or os.environ.get("TMS_URL") or "").strip().rstrip("/")
    token = (args.token or os.environ.get("TMS_TOKEN") or "").strip()
    output = _Output(token, stdout or sys.stdout, stderr or sys.stderr)
    name = f"tms run {args.run_command}"
    problem = _check(url, token, args)
    if problem:
        output.err(f"{name}: error: {problem}")
        return EXIT_USAGE
    if args.run_command == "create":
        body: dict[str, Any] = {"project_id": args.project.strip(), "name": args.name}
        if args.environment:
            body["environment"] = args.environment
        method, path, idempotent = "POST", "/api/v1/runs", False
    else:
        body = {"status": "COMPLETED"}
        method, path, idempotent = "PATCH", f"/api/v1/runs/{quote(args.run_id.strip(), safe='')}", True
    try:
        response = _send(url, token, method, path, body, retries=max(0, args.retries), timeout=args.timeout,
                         idempotent=idempotent)
    except _Unreachable as exc:
        output.err(f"{name}: error: could not reach {url}: {exc}")
        return EXIT_NETWORK
    if response.status_code >= 400:
        output.err(f"{name}: error: the service refused: {_problem(response)}")
        hint = _hint(args, response.status_code)
        if hint:
            output.err(f"  hint: {hint}")
        return EXIT_FAILED
    run = response.json()["data"]
    counts = run.get("counts") or {}
    summary = ", ".join(f"{k} {v}" for k, v in counts.items() if k != "total" and v)
    if args.run_command == "create":
        output.err(f"created run {run['id']} ({run['status']}) in project {run['project_id']}: {url}/runs/{run['id']}")
        output.out(run["id"])
    else:
        output.out(f"run {run['id']} {run['status']}: {counts.get('total', 0)} results"
                   + (f" ({summary})" if summary else "") + f": {url}/runs/{run['id']}")
    return EXIT_OK


def _check(url: str, token: str, args: argparse.Namespace) -> str | None:
    if not url:
        return "no service URL: pass --url or set TMS_URL"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return f"--url/TMS_URL must be an http(s) URL, got {url!r}"
    if not token:
        return "no API token: set TMS_TOKEN (or pass --token) to a token with the write scope"
    if not token.isascii() or not token.isprintable() or " " in token:
        return "the API token holds spaces or characters a token never has: check TMS_TOKEN (not shown)"
    if args.timeout <= 0:
        return "--timeout must be > 0"
    if args.run_command == "create" and not (args.project.strip() and args.name.strip()):
        return "--project and --name must not be blank"
    if args.run_command == "complete" and not args.run_id.strip():
        return "give the run id"
    return None


class _Unreachable(Exception):
    pass


def _send(url: str, token: str, method: str, path: str, body: dict[str, Any], *, retries: int, timeout: float,
          idempotent: bool) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json", "User-Agent": USER_AGENT}
    attempt = 0
    with httpx.Client(base_url=url, headers=headers, timeout=httpx.Timeout(timeout, connect=min(timeout, 15.0)),
                      follow_redirects=False) as client:
        while True:
            attempt += 1
            try:
                response = client.request(method, path, json=body)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                # the request never left: safe to send again, even a create
                if attempt > retries:
                    raise _Unreachable(f"{type(exc).__name__} (after {attempt} attempts)") from exc
            except httpx.TransportError as exc:
                if not idempotent or attempt > retries:
                    sent = "" if idempotent else "; the request was sent, so the run may exist: see the project's runs"
                    raise _Unreachable(f"{type(exc).__name__}: {exc}".rstrip(": ") + sent) from exc
            else:
                if not (idempotent and (response.status_code == 429 or response.status_code >= 500)):
                    return response
                if attempt > retries:
                    raise _Unreachable(f"HTTP {response.status_code} (after {attempt} attempts)")
            time.sleep(min(30.0, 2 ** (attempt - 1)))


def _problem(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code} {response.text.strip()[:300]}"
    if not isinstance(body, dict):
        return f"HTTP {response.status_code}"
    text = f"HTTP {response.status_code} " + ": ".join(str(body[k]) for k in ("title", "detail") if body.get(k))
    fields = [f"{e.get('field')}: {e.get('message')}" for e in body.get("errors") or [] if isinstance(e, dict)]
    return text + "".join(f"\n  {line}" for line in fields)


def _hint(args: argparse.Namespace, status: int) -> str | None:
    if status == 401:
        return "the token is missing, malformed, revoked or unknown: check TMS_TOKEN"
    if status == 403:
        return "the token lacks the write scope"
    if status == 404:
        if args.run_command == "create":
            return f"no project {args.project!r} in this token's tenant"
        return f"no run {args.run_id!r} in this token's tenant"
    return None
