"""`tms ingest` run as a real subprocess against a loopback fake of the service.

The fake (http.server in a thread) is the edge of the world for the client: it records every
request as it arrived on the wire and answers from a script, so retries, 429/Retry-After, 5xx,
dropped connections, gzip and the Idempotency-Key are checked on the bytes. End-to-end runs against
the real service are in test_reporter_e2e.py.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.webhook_receiver import POLL

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / "tests" / "fixtures" / "reports"
TOKEN = "svc_abcd1234_" + "S3cretS3cretS3cretS3cretS3cretS3cret"
PROJECT = "cfakeproject0000000000001"  # shaped like a project id: sent without a lookup


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    def json(self) -> Any:
        raw = gzip.decompress(self.body) if self.headers.get("content-encoding") == "gzip" else self.body
        return json.loads(raw)


@dataclass
class FakeService:
    """Answers POST /api/v1/ingest from `script` (then 201), GET /api/v1/cases/{code} from `known`,
    GET /api/v1/projects from `projects` (or with `projects_status`)."""

    script: list[Any] = field(default_factory=list)
    known: set[str] = field(default_factory=set)
    projects: list[dict[str, str]] = field(default_factory=list)
    projects_status: int = 200
    requests: list[Recorded] = field(default_factory=list)
    url: str = ""

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in handler.headers.items()}
        self.requests.append(Recorded(handler.command, handler.path, headers, body, time.monotonic()))
        if handler.command == "GET" and handler.path.startswith("/api/v1/cases/"):
            code = handler.path.rsplit("/", 1)[-1]
            self.send(handler, 200 if code in self.known else 404, {"data": {"code": code}})
            return
        if handler.command == "GET" and handler.path == "/api/v1/projects":
            self.send(handler, self.projects_status, {"data": self.projects})
            return
        step = self.script.pop(0) if self.script else (201, {}, None)
        if step == "drop":  # a connection that dies before any answer
            handler.close_connection = True
            handler.connection.shutdown(2)
            return
        status, extra_headers, payload = step
        if payload is None:
            results = Recorded("", "", headers, body, 0).json()["results"]
            payload = {"run_id": "run123", "accepted": len(results), "rejected": 0, "errors": []}
        self.send(handler, status, payload, extra_headers)

    @staticmethod
    def send(handler: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)

    @property
    def ingests(self) -> list[Recorded]:
        return [r for r in self.requests if r.method == "POST"]


@pytest.fixture
def fake() -> Iterator[FakeService]:
    service = FakeService()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            service.answer(self)

        def do_GET(self) -> None:
            service.answer(self)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    service.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs=POLL, daemon=True)
    thread.start()
    yield service
    server.shutdown()
    server.server_close()


@dataclass
class Run:
    code: int
    out: str
    err: str


def tms_ingest(*args: str, url: str | None = None, token: str | None = TOKEN, timeout: float = 60) -> Run:
    env = {k: v for k, v in os.environ.items() if k not in ("TMS_URL", "TMS_TOKEN")}
    if url is not None:
        env["TMS_URL"] = url
    if token is not None:
        env["TMS_TOKEN"] = token
    done = subprocess.run(
        [sys.executable, "-m", "tms", "ingest", *args], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=timeout, stdin=subprocess.DEVNULL,
    )
    # the token must never reach a log, whatever happened
    assert TOKEN not in done.stdout and TOKEN not in done.stderr
    assert "S3cretS3cret" not in done.stdout + done.stderr
    return Run(done.returncode, done.stdout, done.stderr)


PYTEST = str(REPORTS / "pytest" / "junit.xml")
FAST = ("--retry-backoff", "0.01")


def test_one_gzip_request_with_idempotency_key_and_a_summary(fake: FakeService) -> None:
    run = tms_ingest(PYTEST, str(REPORTS / "cucumber" / "cucumber-js.json"), "--project", PROJECT,
                     "--run-name", "CI #42", "--environment", "staging", "--framework", "ci-default", url=fake.url)
    assert run.code == 0, run.err
    [request] = fake.requests
    assert request.path == "/api/v1/ingest"
    assert request.headers["content-encoding"] == "gzip"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert uuid.UUID(request.headers["idempotency-key"]).version == 4
    body = request.json()
    assert {k: body[k] for k in ("project_id", "run_name", "environment", "framework")} == {
        "project_id": PROJECT, "run_name": "CI #42", "environment": "staging", "framework": "ci-default",
    }
    assert len(body["results"]) == 14  # 10 pytest + 4 cucumber-js (two outline rows share SHOP-11)
    # the report's own framework overrides the default per result
    assert {r["framework"] for r in body["results"]} == {"pytest", "cucumber"}
    assert len(request.body) < len(json.dumps(body))
    assert f"run run123: {fake.url}/runs/run123" in run.out
    assert "14 results: 14 accepted, 0 rejected" in run.out
    assert "status: FAILED 4, BROKEN 2, PASSED 6, SKIPPED 2" in run.out
    assert "linked to cases: 5, unlinked: 9" in run.out
    assert run.err == ""  # no progress line when stderr is not a terminal


def test_retries_dropped_connections_and_5xx_under_one_key(fake: FakeService) -> None:
    fake.script = ["drop", (503, {}, {"title": "Service Unavailable"}), (500, {}, {}), (201, {}, None)]
    run = tms_ingest(PYTEST, "--project", PROJECT, *FAST, url=fake.url)
    assert run.code == 0, run.err
    assert len(fake.ingests) == 4
    assert len({r.headers["idempotency-key"] for r in fake.ingests}) == 1
    assert len({r.body for r in fake.ingests}) == 1  # the very same bytes, so the service can replay


def test_429_waits_for_retry_after(fake: FakeService) -> None:
    fake.script = [(429, {"Retry-After": "1"}, {"title": "Too Many Requests"}), (201, {}, None)]
    run = tms_ingest(PYTEST, "--project", PROJECT, "--retry-backoff", "0", url=fake.url)
    assert run.code == 0, run.err
    first, second = fake.ingests
    assert second.at - first.at >= 0.95  # the backoff alone would have been 0
    assert first.headers["idempotency-key"] == second.headers["idempotency-key"]


def test_gives_up_after_the_retries_with_exit_4(fake: FakeService) -> None:
    fake.script = [(502, {}, {"title": "Bad Gateway"})] * 3
    run = tms_ingest(PYTEST, "--project", PROJECT, "--retries", "2", *FAST, url=fake.url)
    assert run.code == 4
    assert len(fake.ingests) == 3
    assert "HTTP 502 Bad Gateway (after 3 attempts)" in run.err


def test_unreachable_service_exit_4() -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    run = tms_ingest(PYTEST, "--project", PROJECT, "--retries", "1", *FAST, url=f"http://127.0.0.1:{port}")
    assert run.code == 4
    assert "could not deliver" in run.err and "ConnectError" in run.err


@pytest.mark.parametrize(("status", "hint"), [
    (401, "check TMS_TOKEN"), (403, "write scope"), (404, f"no project {PROJECT!r}"), (400, None), (413, "split"),
])
def test_4xx_is_never_retried(fake: FakeService, status: int, hint: str | None) -> None:
    problem = {"type": "about:blank", "title": "Refused", "status": status,
               "detail": f"token {TOKEN} is not welcome",  # a careless server echo is redacted too
               "errors": [{"field": "project_id", "message": "unknown"}]}
    fake.script = [(status, {}, problem)]
    run = tms_ingest(PYTEST, "--project", PROJECT, *FAST, url=fake.url)
    assert run.code == 1
    assert len(fake.ingests) == 1
    assert f"HTTP {status} Refused: token *** is not welcome" in run.err
    assert "project_id: unknown" in run.err
    if hint:
        assert hint in run.err


def test_a_redirect_is_not_followed_with_the_token(fake: FakeService) -> None:
    fake.script = [(308, {"Location": "https://tms.example.com/api/v1/ingest"}, {})]
    run = tms_ingest(PYTEST, "--project", PROJECT, url=fake.url)
    assert run.code == 1 and len(fake.requests) == 1
    assert "HTTP 308" in run.err and "Location: https://tms.example.com/api/v1/ingest" in run.err


def test_207_lists_each_rejected_test_by_title(fake: FakeService) -> None:
    answer = {"run_id": "run9", "accepted": 8, "rejected": 2, "errors": [
        {"index": 1, "error": "unknown test_case_code 'SHOP-2'"},
        {"index": 2, "error": "unknown test_case_code 'SHOP-3'"},
    ]}
    fake.script = [(207, {}, answer)]
    run = tms_ingest(PYTEST, "--project", PROJECT, url=fake.url)
    assert run.code == 0
    assert "10 results: 8 accepted, 2 rejected" in run.out
    assert ("#1 pytest > sample_checkout > test_logout_service_property [SHOP-2]: unknown test_case_code 'SHOP-2'"
            in run.out)
    assert "#2 pytest > sample_checkout > test_pay [SHOP-3]: unknown test_case_code 'SHOP-3'" in run.out
    assert "warning: 2 result(s) rejected" in run.err

    fake.script = [(207, {}, answer)]
    strict = tms_ingest(PYTEST, "--project", PROJECT, "--strict", "--json", url=fake.url)
    assert strict.code == 3
    summary = json.loads(strict.out)
    assert summary["run_id"] == "run9" and summary["url"] == f"{fake.url}/runs/run9"
    assert summary["accepted"] == 8 and summary["rejected"] == 2
    assert summary["errors"][0] == {"index": 1, "title": "pytest > sample_checkout > test_logout_service_property",
                                    "test_case_code": "SHOP-2", "error": "unknown test_case_code 'SHOP-2'"}
    assert summary["statuses"] == {"FAILED": 2, "BROKEN": 1, "UNKNOWN": 0, "PASSED": 5, "SKIPPED": 2}
    assert (summary["linked"], summary["unlinked"], summary["tests"]) == (3, 7, 10)


def test_flaky_tests_are_counted_in_the_summary(fake: FakeService) -> None:
    run = tms_ingest(str(REPORTS / "surefire"), str(REPORTS / "go"), "--project", PROJECT, "--json", url=fake.url)
    assert run.code == 0, run.err
    summary = json.loads(run.out)
    assert summary["flaky"] == 2 and summary["tests"] == 17
    results = fake.ingests[0].json()["results"]
    assert {r["framework"] for r in results} == {"surefire", "go"}


@pytest.mark.parametrize(("args", "env_url", "token", "message"), [
    ((PYTEST, "--project", PROJECT), None, TOKEN, "no service URL"),
    ((PYTEST, "--project", PROJECT), "http://127.0.0.1:9", None, "no API token"),
    ((PYTEST, "--project", PROJECT), "ftp://example", TOKEN, "must be an http(s) URL"),
    (("missing.xml", "--project", PROJECT), "http://127.0.0.1:9", TOKEN, "missing.xml: no such file"),
    (("tests/fixtures/reports/nothing-*.xml", "--project", PROJECT), "http://127.0.0.1:9", TOKEN, "no report file"),
    ((PYTEST, "--project", " "), "http://127.0.0.1:9", TOKEN, "--project must name"),
    ((PYTEST,), "http://127.0.0.1:9", TOKEN, "--project"),
    ((PYTEST, "--project", PROJECT), "http://127.0.0.1:9", TOKEN + " x", "characters a token never has"),
])
def test_usage_errors_exit_2(args: tuple[str, ...], env_url: str | None, token: str | None, message: str) -> None:
    run = tms_ingest(*args, url=env_url, token=token)
    assert run.code == 2
    assert message in run.err


def test_token_flag_works_and_is_never_printed(fake: FakeService) -> None:
    run = tms_ingest(PYTEST, "--project", PROJECT, "--verbose", "--url", fake.url, "--token", TOKEN, token=None)
    assert run.code == 0, run.err
    assert fake.ingests[0].headers["authorization"] == f"Bearer {TOKEN}"
    assert "Idempotency-Key" in run.err and "attempt 1" in run.err  # verbose tells the requests


def test_malformed_report_names_the_file_and_line_and_strict_sends_nothing(tmp_path: Path, fake: FakeService) -> None:
    bad = tmp_path / "broken.xml"
    bad.write_text('<testsuite name="s">\n  <testcase name="a">\n</testsuite>\n')
    run = tms_ingest(PYTEST, str(bad), "--project", PROJECT, "--strict", url=fake.url)
    assert run.code == 1
    assert f"{bad}:3: malformed XML" in run.err and "nothing was sent (--strict)" in run.err
    assert fake.requests == []  # nothing half-sent


def test_a_bad_report_does_not_hide_the_others(tmp_path: Path, fake: FakeService) -> None:
    bad = tmp_path / "broken.xml"
    bad.write_text('<testsuite name="s">\n  <testcase name="a">\n</testsuite>\n')
    run = tms_ingest(PYTEST, str(bad), "--project", PROJECT, "--json", url=fake.url)
    assert run.code == 1  # the job still fails: a report was unreadable
    assert f"{bad}:3: malformed XML" in run.err and "the run holds the results of the others" in run.err
    assert len(fake.ingests[0].json()["results"]) == 10  # the good report was sent
    summary = json.loads(run.out)
    assert summary["unreadable"] == [{"file": str(bad), "line": 3, "reason": summary["unreadable"][0]["reason"]}]


def test_xml_bomb_is_refused_cleanly(tmp_path: Path, fake: FakeService) -> None:
    levels = ['<!ENTITY a0 "lollollollollollollollollollol">']
    levels += [f'<!ENTITY a{i} "{f"&a{i - 1};" * 10}">' for i in range(1, 10)]
    bomb = tmp_path / "bomb.xml"
    bomb.write_text(f'<?xml version="1.0"?>\n<!DOCTYPE t [{"".join(levels)}]>\n'
                    '<testsuite name="&a9;"><testcase name="x"/></testsuite>\n')
    run = tms_ingest(str(bomb), "--project", PROJECT, url=fake.url, timeout=30)
    assert run.code == 1
    assert str(bomb) in run.err and "possible XML bomb" in run.err
    assert "Traceback" not in run.err
    assert fake.requests == []


def test_a_report_without_tests_is_an_error(tmp_path: Path, fake: FakeService) -> None:
    empty = tmp_path / "empty.xml"
    empty.write_text("<testsuites/>")
    run = tms_ingest(str(empty), "--project", PROJECT, url=fake.url)
    assert run.code == 1 and "no test found" in run.err


def test_directory_skips_files_that_are_not_reports(tmp_path: Path, fake: FakeService) -> None:
    (tmp_path / "package.json").write_text('{"name": "x"}')
    (tmp_path / "pom.xml").write_text("<project/>")
    (tmp_path / "junit.xml").write_bytes(Path(PYTEST).read_bytes())
    run = tms_ingest(str(tmp_path), "--project", PROJECT, "-v", url=fake.url)
    assert run.code == 0, run.err
    assert "skipped" in run.err and "pom.xml" in run.err
    assert len(fake.ingests[0].json()["results"]) == 10


def test_dry_run_sends_nothing_and_needs_no_service() -> None:
    run = tms_ingest(PYTEST, "--project", PROJECT, "--dry-run", token=None)
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    assert lines[0].split() == ["PASSED", "-", "pytest", ">", "sample_checkout", ">", "test_login_works"]
    assert lines[1].startswith("PASSED   SHOP-2")
    assert "nothing was sent" in lines[-1] and f"10 results for project {PROJECT}" in lines[-1]

    as_json = tms_ingest(PYTEST, "--project", PROJECT, "--dry-run", "--json", "--framework", "x", token=None)
    data = json.loads(as_json.out)
    assert data["dry_run"] is True and data["unknown_codes"] is None
    assert data["payload"]["framework"] == "x" and len(data["payload"]["results"]) == 10


def test_dry_run_with_a_token_lists_unknown_codes(fake: FakeService) -> None:
    fake.known = {"SHOP-2", "SHOP-4"}
    run = tms_ingest(PYTEST, "--project", PROJECT, "--dry-run", url=fake.url)
    assert run.code == 0, run.err
    assert "unknown case codes (would be rejected): SHOP-3" in run.out
    assert fake.ingests == []
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in fake.requests)


def test_results_without_a_detected_framework_take_the_default(tmp_path: Path, fake: FakeService) -> None:
    plain = tmp_path / "plain.xml"
    plain.write_text('<testsuite name="S"><testcase name="a" classname="C" time="2"/></testsuite>')
    run = tms_ingest(str(plain), "--project", PROJECT, "--framework", "custom", url=fake.url)
    assert run.code == 0, run.err
    body = fake.ingests[0].json()
    assert body["framework"] == "custom"
    assert body["results"] == [{"title": "S > C > a", "status": "PASSED", "duration_ms": 2000}]


def test_progress_line_only_on_a_terminal(fake: FakeService) -> None:
    import pty

    leader, follower = pty.openpty()
    env = {**os.environ, "TMS_URL": fake.url, "TMS_TOKEN": TOKEN}
    process = subprocess.Popen([sys.executable, "-m", "tms", "ingest", PYTEST, "--project", PROJECT], cwd=ROOT,
                               env=env, stdout=subprocess.PIPE, stderr=follower, stdin=subprocess.DEVNULL)
    os.close(follower)
    out, _ = process.communicate(timeout=60)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert process.returncode == 0
    assert b"uploading 10 results" in seen
    assert TOKEN.encode() not in seen and b"run run123" in out


def test_every_ingest_option_and_exit_code_is_documented() -> None:
    import argparse

    from tms.reporter.cli import add_ingest_arguments

    parser = argparse.ArgumentParser()
    add_ingest_arguments(parser)
    docs = (ROOT / "docs" / "reporter.md").read_text()
    for action in parser._actions:
        for option in action.option_strings:
            if option not in ("-h", "--help"):
                assert f"`{option}" in docs, f"{option} is not in docs/reporter.md"
    for code in range(5):
        assert f"\n| {code} | " in docs, f"exit status {code} is not in docs/reporter.md"


def test_attachments_are_named_when_the_service_gives_no_result_ids(fake: FakeService) -> None:
    report = ROOT / "tests" / "fixtures" / "playwright" / "playwright.json"
    run = tms_ingest(str(report), "--project", PROJECT, url=fake.url)
    assert run.code == 0, run.err  # skipped attachments never fail the job: the results are stored
    assert [r.path for r in fake.requests] == ["/api/v1/ingest"]  # nothing uploaded blind
    assert "attachments: 0 uploaded, 20 skipped" in run.out
    assert "trace.zip: the service's answer names no result ids (an older service)" in run.out


def test_project_by_name_is_looked_up_and_an_id_is_sent_as_is(fake: FakeService) -> None:
    fake.projects = [{"id": "cweb0000000000000000shop1", "name": "Web shop"},
                     {"id": "capp00000000000000000app1", "name": "App"}]
    run = tms_ingest(PYTEST, "--project", "Web shop", url=fake.url)
    assert run.code == 0, run.err
    assert [r.path for r in fake.requests] == ["/api/v1/projects", "/api/v1/ingest"]
    assert fake.ingests[0].json()["project_id"] == "cweb0000000000000000shop1"
    fake.requests.clear()
    assert tms_ingest(PYTEST, "--project", "web SHOP", url=fake.url).code == 0  # any case, when unambiguous
    assert fake.ingests[0].json()["project_id"] == "cweb0000000000000000shop1"
    fake.requests.clear()
    assert tms_ingest(PYTEST, "--project", PROJECT, url=fake.url).code == 0
    assert [r.path for r in fake.requests] == ["/api/v1/ingest"]  # an id needs no lookup (nor read scope)


def test_unknown_or_ambiguous_project_name_is_refused_before_sending(fake: FakeService) -> None:
    fake.projects = [{"id": "ca00000000000000000000001", "name": "Twin"},
                     {"id": "ca00000000000000000000002", "name": "Twin"}]
    unknown = tms_ingest(PYTEST, "--project", "Nope", url=fake.url)
    assert unknown.code == 1 and "no project has the id or name 'Nope'" in unknown.err and "'Twin'" in unknown.err
    twins = tms_ingest(PYTEST, "--project", "Twin", url=fake.url)
    assert twins.code == 1 and "several projects are named 'Twin'" in twins.err
    assert "ca00000000000000000000001" in twins.err
    fake.projects_status = 403
    write_only = tms_ingest(PYTEST, "--project", "Twin", url=fake.url)
    assert write_only.code == 1 and "read scope" in write_only.err
    assert fake.ingests == []
