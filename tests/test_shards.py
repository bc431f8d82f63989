"""Shards: `tms run create`, `tms ingest --run-id` from several jobs, `tms run complete`, run by the real
CLI against a real server, and the ingest body's `run_id` rules checked over HTTP."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, Tenant, assert_problem
from tests.test_reporter_e2e import create_case, results_of
from tests.webhook_receiver import Receiver

# each test names its library case through a `service` property (pytest's record_property)
SHARD_A = '''
def test_login(record_property):
    record_property("service", "SHOP-1")


def test_search():
    assert 1 + 1 == 3, "search returned nothing"


def test_checkout(record_property):
    record_property("service", "SHOP-2")
    assert False, "card declined"
'''
SHARD_B = '''
import pytest


def test_profile(record_property):
    record_property("service", "SHOP-3")


@pytest.mark.skip(reason="export service down")
def test_export():
    pass


def test_checkout_again(record_property):
    record_property("service", "SHOP-2")  # passes in this shard: the case's result in the run is replaced
'''


def tms(tenant: Tenant, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMS_URL": tenant.server.url, "TMS_TOKEN": tenant.write_token}
    done = subprocess.run([sys.executable, "-m", "tms", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert tenant.write_token not in done.stdout + done.stderr
    return done


def junit_of_real_pytest(tmp_path: Path, name: str, source: str) -> Path:
    """Runs the real pytest on a small test module; returns the JUnit XML it wrote."""
    directory = tmp_path / name
    directory.mkdir()
    (directory / f"test_{name}.py").write_text(source)
    report = directory / "junit.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                    "-o", "junit_family=xunit1",
                    "--rootdir", str(directory), f"--junitxml={report}", str(directory)],
                   cwd=directory, capture_output=True, text=True, timeout=120, check=False)
    assert report.exists()
    return report



def test_two_shards_land_in_one_run_completed_once(tenant: Tenant, tmp_path: Path, receiver: Receiver) -> None:
    web = tenant.web()
    response = web.post("/api/webhooks", json={"url": receiver.url, "events": ["test_run.completed"]})
    assert response.status_code == 201, response.text
    subscription_id = response.json()["data"]["id"]
    project = tenant.create_project("Shop")
    for code in ("SHOP-1", "SHOP-2", "SHOP-3"):
        create_case(tenant, project["id"], code)
    shard_a = junit_of_real_pytest(tmp_path, "a", SHARD_A)
    shard_b = junit_of_real_pytest(tmp_path, "b", SHARD_B)
    assert "SHOP-2" in shard_a.read_text() and "SHOP-2" in shard_b.read_text()

    created = tms(tenant, "run", "create", "--project", project["id"], "--name", "CI #9", "--environment", "ci")
    assert created.returncode == 0, created.stderr
    run_id = created.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"[a-z0-9]{20,40}", run_id), created.stdout
    run = tenant.api.get(f"/api/v1/runs/{run_id}").json()["data"]
    assert (run["status"], run["name"], run["environment"]) == ("PENDING", "CI #9", "ci")

    first = tms(tenant, "ingest", str(shard_a), "--project", project["id"], "--run-id", run_id, "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["run_id"] == run_id
    run = tenant.api.get(f"/api/v1/runs/{run_id}").json()["data"]
    assert run["status"] == "IN_PROGRESS"
    assert run["counts"] == {"total": 3, "passed": 1, "failed": 2, "broken": 0, "skipped": 0, "unknown": 0}

    second = tms(tenant, "ingest", str(shard_b), "--project", project["id"], "--run-id", run_id)
    assert second.returncode == 0, second.stderr
    assert f"run {run_id}" in second.stdout
    # SHOP-2 failed in shard A and passed in shard B: one result for the case, the last one
    results = {(r["test_case_code"] or r["title"]): r["status"] for r in results_of(tenant, run_id)}
    assert len(results_of(tenant, run_id)) == 5
    assert {code: results[code] for code in ("SHOP-1", "SHOP-2", "SHOP-3")} == {
        "SHOP-1": "PASSED", "SHOP-2": "PASSED", "SHOP-3": "PASSED"}
    assert sorted(status for key, status in results.items() if not key.startswith("SHOP-")) == ["FAILED", "SKIPPED"]
    run = tenant.api.get(f"/api/v1/runs/{run_id}").json()["data"]
    assert run["status"] == "IN_PROGRESS"
    assert run["counts"] == {"total": 5, "passed": 3, "failed": 1, "broken": 0, "skipped": 1, "unknown": 0}

    completed = tms(tenant, "run", "complete", run_id)
    assert completed.returncode == 0, completed.stderr
    assert f"run {run_id} COMPLETED: 5 results" in completed.stdout
    (delivery,) = receiver.wait_for(1)
    event = json.loads(delivery.body)
    assert event["event"] == "test_run.completed" and event["data"]["run_id"] == run_id
    assert (event["data"]["total"], event["data"]["passed"], event["data"]["failed"]) == (5, 3, 1)

    # a shard arriving after completion is refused, clearly; completing again fires nothing
    late = tms(tenant, "ingest", str(shard_b), "--project", project["id"], "--run-id", run_id)
    assert late.returncode == 1 and "409" in late.stderr and "COMPLETED" in late.stderr
    assert "tms run complete" in late.stderr
    assert tms(tenant, "run", "complete", run_id).returncode == 0
    # a barrier: a later run's event is fanned out after anything the second complete could have fired
    barrier = tms(tenant, "ingest", str(shard_a), "--project", project["id"], "--json")
    assert barrier.returncode == 0, barrier.stderr
    receiver.wait_for(2)
    log = web.get(f"/api/webhooks/{subscription_id}/deliveries").json()["data"]
    assert len(log) == 2


def test_run_id_rules_over_http(tenant: Tenant, other_tenant: Tenant) -> None:
    project, other_project = tenant.create_project("A"), tenant.create_project("B")
    run = tenant.api.post("/api/v1/runs", json={"project_id": project["id"], "name": "shards"}).json()["data"]
    item = [{"title": "t", "status": "PASSED"}]

    def ingest(tenant_: Tenant, **body: Any) -> Any:
        return tenant_.api.post("/api/v1/ingest", json={"results": item, **body})

    ok = ingest(tenant, project_id=project["id"], run_id=run["id"])
    assert ok.status_code == 201, ok.text
    assert ok.json()["run_id"] == run["id"]
    # a shard's answer names its results too, so `tms ingest --run-id` can attach files to them
    [stored] = tenant.api.get(f"/api/v1/runs/{run['id']}/results").json()["data"]
    assert ok.json()["result_ids"] == [stored["id"]]
    # another project's run, an unknown run, another tenant's run: 404 naming run_id
    for problem in (ingest(tenant, project_id=other_project["id"], run_id=run["id"]),
                    ingest(tenant, project_id=project["id"], run_id="nope"),
                    ingest(other_tenant, project_id=other_tenant.create_project()["id"], run_id=run["id"])):
        body = assert_problem(problem, 404)
        assert "run" in body["detail"]
    bad = assert_problem(ingest(tenant, project_id=project["id"], run_id=run["id"], run_name="x"), 400)
    assert bad["errors"][0]["field"] == "run_name"
    assert_problem(ingest(tenant, project_id=project["id"], run_id=run["id"], environment="x"), 400)
    assert_problem(ingest(tenant, project_id=project["id"], run_id=""), 400)

    done = tenant.api.patch(f"/api/v1/runs/{run['id']}", json={"status": "COMPLETED"})
    assert done.status_code == 200
    conflict = assert_problem(ingest(tenant, project_id=project["id"], run_id=run["id"]), 409)
    assert "COMPLETED" in conflict["detail"]
    # nothing of the refused calls was stored
    assert tenant.api.get(f"/api/v1/runs/{run['id']}").json()["data"]["counts"]["total"] == 1


def test_run_commands_refuse_clearly(tenant: Tenant) -> None:
    unknown = tms(tenant, "run", "create", "--project", "no-such-project", "--name", "x")
    assert unknown.returncode == 1 and "404" in unknown.stderr and "no project 'no-such-project'" in unknown.stderr
    assert unknown.stdout == ""
    missing = tms(tenant, "run", "complete", "no-such-run")
    assert missing.returncode == 1 and "no run 'no-such-run'" in missing.stderr
    both = tms(tenant, "ingest", str(ROOT / "tests/fixtures/reports/pytest/junit.xml"), "--project", "p",
               "--run-id", "r", "--run-name", "n")
    assert both.returncode == 2 and "--run-id" in both.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("TMS_URL", "TMS_TOKEN")}
    no_url = subprocess.run([sys.executable, "-m", "tms", "run", "complete", "x"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert no_url.returncode == 2 and "TMS_URL" in no_url.stderr
    unreachable = subprocess.run(
        [sys.executable, "-m", "tms", "run", "complete", "x", "--url", "http://127.0.0.1:9", "--token", "t0ken",
         "--retries", "0"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert unreachable.returncode == 4 and "could not reach" in unreachable.stderr


def test_ci_snippets_are_valid_yaml_and_their_tms_commands_parse() -> None:
    import shlex

    import yaml

    from tms.cli import _build_parser

    docs = (ROOT / "docs" / "reporter.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", docs, flags=re.S)
    assert len(blocks) >= 6
    for block in blocks:
        assert isinstance(yaml.safe_load(block), dict)
    groovy = re.findall(r"```groovy\n(.*?)```", docs, flags=re.S)
    assert groovy and "credentials('tms-token')" in groovy[0]
    code = "\n".join(re.findall(r"```(?:yaml|groovy|sh)\n(.*?)```", docs, flags=re.S))
    commands = re.findall(r"\b(tms (?:ingest|run) [^\n]*)", code)
    assert len(commands) >= 10
    parser = _build_parser()
    for command in commands:
        command = re.sub(r"\$\{\{[^}]*\}\}", "X", command)  # GitHub expressions
        command = re.sub(r"\$\([A-Za-z_.]+\)", "X", command)  # Azure macros
        command = command.rstrip(" \\)'")
        try:
            parser.parse_args(shlex.split(command, comments=True)[1:])
        except SystemExit:
            pytest.fail(f"documented command does not parse: {command}")


def test_concurrent_shards_naming_the_same_cases_count_each_case_once(tenant: Tenant) -> None:
    from concurrent.futures import ThreadPoolExecutor

    project = tenant.create_project()
    codes = [f"SH-{n}" for n in range(1, 21)]
    for code in codes:
        create_case(tenant, project["id"], code)
    run = tenant.api.post("/api/v1/runs", json={"project_id": project["id"], "name": "parallel"}).json()["data"]

    def shard(number: int) -> int:
        status = "FAILED" if number == 0 else "PASSED"
        results = [{"test_case_code": code, "status": status} for code in codes]
        results += [{"title": f"unlinked {number}-{n}", "status": "SKIPPED"} for n in range(5)]
        with tenant.client() as client:
            response = client.post("/api/v1/ingest", json={"project_id": project["id"], "run_id": run["id"],
                                                           "results": results})
        return response.status_code

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(shard, range(4))) == [201] * 4
    counts = tenant.api.get(f"/api/v1/runs/{run['id']}").json()["data"]["counts"]
    assert counts["total"] == 20 + 4 * 5 and counts["skipped"] == 20
    assert counts["passed"] + counts["failed"] == 20
    assert len(results_of(tenant, run["id"])) == 40

    nothing = tenant.api.post("/api/v1/ingest", json={"project_id": project["id"], "run_id": run["id"],
                                                      "results": [{"test_case_code": "NOPE-1", "status": "PASSED"}]})
    assert assert_problem(nothing, 400)["errors"][0]["field"] == "results[0]"
    assert tenant.api.get(f"/api/v1/runs/{run['id']}").json()["data"]["counts"] == counts
