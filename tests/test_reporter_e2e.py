"""`tms ingest` end to end: the real command against a real `tms serve`, checked through the API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import Tenant
from tests.webhook_receiver import POLL

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / "tests" / "fixtures" / "reports"


def ingest(tenant: Tenant, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    token = token or tenant.write_token
    env = {**os.environ, "TMS_URL": tenant.server.url, "TMS_TOKEN": token}
    done = subprocess.run([sys.executable, "-m", "tms", "ingest", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert token not in done.stdout and token not in done.stderr
    return done


def create_case(tenant: Tenant, project_id: str, code: str) -> None:
    response = tenant.api.post("/api/v1/cases", json={
        "project_id": project_id, "code": code, "title": f"Case {code}",
        "bdd_content": f"Feature: {code}\n  Scenario: it works\n    Given it works\n",
    })
    assert response.status_code == 201, response.text


def results_of(tenant: Tenant, run_id: str) -> list[dict[str, Any]]:
    response = tenant.api.get(f"/api/v1/runs/{run_id}/results")
    assert response.status_code == 200, response.text
    return response.json()["data"]  # type: ignore[no-any-return]


def test_reports_of_three_frameworks_become_one_run(tenant: Tenant) -> None:
    project = tenant.create_project("Shop")
    for code in ("SHOP-1", "SHOP-2", "SHOP-4", "SHOP-10", "SHOP-11"):
        create_case(tenant, project["id"], code)
    done = ingest(tenant, str(REPORTS / "pytest" / "junit.xml"), str(REPORTS / "surefire"),
                  str(REPORTS / "cucumber" / "cucumber-js.json"), "--project", project["id"],
                  "--run-name", "CI #7", "--environment", "staging", "--json")
    # SHOP-3 is not a case of this tenant: the service rejects that one item, the run holds the rest
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["results"] == 22 and summary["rejected"] == 1 and summary["accepted"] == 21
    [error] = summary["errors"]
    assert error["test_case_code"] == "SHOP-3" and error["title"] == "pytest > sample_checkout > test_pay"
    assert "SHOP-3" in error["error"]
    assert summary["url"] == f"{tenant.server.url}/runs/{summary['run_id']}"
    assert "1 result(s) rejected" in done.stderr

    run = tenant.api.get(f"/api/v1/runs/{summary['run_id']}").json()["data"]
    assert (run["name"], run["environment"], run["project_id"]) == ("CI #7", "staging", project["id"])

    results = results_of(tenant, summary["run_id"])
    assert len(results) == 21
    linked = {r["test_case_code"]: r for r in results if r["test_case_code"]}
    assert set(linked) == {"SHOP-1", "SHOP-2", "SHOP-4", "SHOP-10", "SHOP-11"}
    assert linked["SHOP-1"]["framework"] == "surefire" and linked["SHOP-1"]["status"] == "PASSED"
    assert linked["SHOP-2"]["framework"] == "pytest"
    assert linked["SHOP-11"]["status"] == "FAILED"  # one outline row of two failed
    assert "20 !== 25" in linked["SHOP-11"]["error_stack"]
    unlinked = {r["title"]: r for r in results if not r["test_case_code"]}
    flaky = unlinked["com.example.shop.CartTest > applesAreCounted"]
    assert flaky["status"] == "PASSED" and "flaky: passed only on retry" in flaky["comment"]
    failed = unlinked["pytest > sample_checkout.TestCart > test_total_is_wrong"]
    assert failed["status"] == "FAILED" and failed["error_message"].startswith("AssertionError: total mismatch")
    assert failed["executed_at"].startswith("2026-11-22T05:55:46")
    assert unlinked["Checkout > Pay by voucher"]["status"] == "BROKEN"
    assert unlinked["pytest > sample_checkout > test_with_broken_fixture"]["status"] == "BROKEN"
    assert sorted(r["status"] for r in results).count("SKIPPED") == 3


def test_strict_fails_the_job_on_rejected_results(tenant: Tenant) -> None:
    project = tenant.create_project()
    done = ingest(tenant, str(REPORTS / "go" / "go-junit-report.xml"), "--project", project["id"], "--strict")
    assert done.returncode == 3
    assert "#1 example.com/shop/cart > TestTotal/rounds_to_cents_ [GO-1]" in done.stdout


def test_everything_unlinked_is_accepted_with_framework_default(tenant: Tenant) -> None:
    project = tenant.create_project()
    done = ingest(tenant, str(REPORTS / "phpunit" / "junit.xml"), str(REPORTS / "robot"), "--project", project["id"],
                  "--framework", "phpunit")
    assert done.returncode == 0, done.stderr
    # PHP-1 and SHOP-20 are unknown: refused; everything else is unlinked and accepted
    assert "9 results: 7 accepted, 2 rejected" in done.stdout
    run_id = done.stdout.split()[1].rstrip(":")
    results = results_of(tenant, run_id)
    assert {r["framework"] for r in results} == {"phpunit"}  # neither report names its framework
    assert "Robot > Nested > Payment > Refund Is Possible" in {r["title"] for r in results}


def test_unknown_project_and_read_only_token_are_refused(tenant: Tenant) -> None:
    done = ingest(tenant, str(REPORTS / "node" / "junit.xml"), "--project", "c" + "0" * 24)
    assert done.returncode == 1 and "HTTP 404" in done.stderr
    by_name = ingest(tenant, str(REPORTS / "node" / "junit.xml"), "--project", "nope")
    assert by_name.returncode == 1 and "no project has the id or name 'nope'" in by_name.stderr
    project = tenant.create_project()
    read_only = ingest(tenant, str(REPORTS / "node" / "junit.xml"), "--project", project["id"],
                       token=tenant.read_token)
    assert read_only.returncode == 1 and "HTTP 403" in read_only.stderr and "write scope" in read_only.stderr


def test_project_may_be_named_instead_of_its_id(tenant: Tenant) -> None:
    project = tenant.create_project("Web shop")
    done = ingest(tenant, str(REPORTS / "node" / "junit.xml"), "--project", "Web shop", "--json")
    assert done.returncode == 0, done.stderr
    run = tenant.api.get(f"/api/v1/runs/{json.loads(done.stdout)['run_id']}").json()["data"]
    assert run["project_id"] == project["id"]


def test_dry_run_asks_the_service_which_codes_it_knows(tenant: Tenant) -> None:
    project = tenant.create_project()
    create_case(tenant, project["id"], "SHOP-10")
    done = ingest(tenant, str(REPORTS / "cucumber"), "--project", project["id"], "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "unknown case codes (would be rejected): SHOP-11" in done.stdout
    runs = tenant.api.get("/api/v1/runs", params={"project_id": project["id"]}).json()["data"]
    assert runs == []  # nothing was created


def test_a_lost_answer_is_retried_without_a_second_run(tenant: Tenant) -> None:
    """A loopback proxy forwards the first ingest to the service, then drops the connection before
    the answer reaches the client: the retry carries the same Idempotency-Key, so the service replays
    its first answer instead of creating the run again."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import httpx

    forwarded: list[str] = []

    class Proxy(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
            answer = httpx.post(tenant.server.url + self.path, content=body, headers=headers, timeout=30)
            forwarded.append(self.headers["Idempotency-Key"])
            if len(forwarded) == 1:
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self.send_response(answer.status_code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer.content)))
            self.end_headers()
            self.wfile.write(answer.content)

        def log_message(self, *args: Any) -> None:
            pass

    proxy = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=proxy.serve_forever, kwargs=POLL, daemon=True).start()
    try:
        project = tenant.create_project()
        env = {**os.environ, "TMS_URL": f"http://127.0.0.1:{proxy.server_address[1]}",
               "TMS_TOKEN": tenant.write_token}
        done = subprocess.run([sys.executable, "-m", "tms", "ingest", str(REPORTS / "jest" / "junit.xml"),
                               "--project", project["id"], "--retry-backoff", "0.05", "--json"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    finally:
        proxy.shutdown()
        proxy.server_close()
    assert done.returncode == 0, done.stderr
    assert len(forwarded) == 2 and forwarded[0] == forwarded[1]
    runs = tenant.api.get("/api/v1/runs", params={"project_id": project["id"]}).json()["data"]
    assert [run["id"] for run in runs] == [json.loads(done.stdout)["run_id"]]
    assert len(results_of(tenant, runs[0]["id"])) == 4  # SHOP-30 is no case here: rejected
