"""Failure analysis through the CLI (`tms ingest --gate`, `tms quarantine list`: subprocesses, so against
the shared `tms serve`). The rest of failure analysis runs in-process (tests/test_failures.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import Tenant
from tests.test_failures import REPORTS, ROOT, failures_of


def run_cli(tenant: Tenant, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMS_URL": tenant.server.url, "TMS_TOKEN": tenant.write_token}
    return subprocess.run([sys.executable, "-m", "tms", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


def test_the_ingest_gate_fails_only_on_new_failures_of_tests_not_quarantined(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    report = str(REPORTS / "pytest" / "junit.xml")  # 3 failures: two FAILED, one BROKEN

    first = run_cli(tenant, "ingest", report, "--project", project, "--gate", "new-failures")
    assert first.returncode == 5, first.stdout + first.stderr
    assert "gate new-failures: FAILED — 3 failure(s): 3 new" in first.stdout

    # the same failures again: not new any more, but still failures
    again = run_cli(tenant, "ingest", report, "--project", project, "--gate", "new-failures")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "3 recurring" in again.stdout
    strict = run_cli(tenant, "ingest", report, "--project", project, "--gate", "failures", "--json")
    assert strict.returncode == 5
    summary = json.loads(strict.stdout)["gate"]
    assert len(summary["recurring"]) == 3 and summary["new"] == []

    # quarantine every failing test and explain nothing else: the failures gate passes, marked quarantined
    titles = {r["title"] for c in failures_of(tenant, summary_run(strict)) for r in c["results"]}
    for title in titles:
        made = tenant.api.post("/api/v1/quarantine", json={"project_id": project, "title": title, "reason": "wip"})
        assert made.status_code == 201, made.text
    quiet = run_cli(tenant, "ingest", report, "--project", project, "--gate", "failures")
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert "3 quarantined" in quiet.stdout

    listed = run_cli(tenant, "quarantine", "list", "--project", project)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.count("active") >= 3 and "wip" in listed.stdout
    as_json = json.loads(run_cli(tenant, "quarantine", "list", "--project", project, "--json").stdout)
    assert {e["title"] for e in as_json} == titles


def summary_run(done: subprocess.CompletedProcess[str]) -> str:
    return json.loads(done.stdout)["run_id"]  # type: ignore[no-any-return]
