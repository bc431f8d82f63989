"""NUL characters through the real `tms ingest` (a subprocess, so against the shared `tms serve`): the issue's
case, a run lost on PostgreSQL. The rest of the NUL checks run in-process (tests/test_nul_characters.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import Tenant
from tests.test_nul_characters import FIXTURES, ROOT, _results_of, world  # noqa: F401 (world: the fixture)


def _ingest_cli(tenant: Tenant, report: Path, project: str) -> dict[str, Any]:
    env = {**os.environ, "TMS_URL": tenant.server.url, "TMS_TOKEN": tenant.write_token}
    done = subprocess.run([sys.executable, "-m", "tms", "ingest", str(report), "--project", project, "--json"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_tms_ingest_of_ctrf_and_go_reports_with_nul_in_their_output_stores_the_run(
    world: dict[str, Any], tmp_path: Path  # noqa: F811
) -> None:
    """The issue's case: the whole run was lost on PostgreSQL (a 500), SQLite stored it."""
    tenant: Tenant = world["tenant"]
    ctrf = json.loads((FIXTURES / "ctrf" / "pytest-ctrf.json").read_text())
    failing = [t for t in ctrf["results"]["tests"] if t.get("message")]
    assert failing
    for test in failing:
        test["message"] = "\x00" + test["message"]
    (tmp_path / "ctrf.json").write_text(json.dumps(ctrf))
    lines = (FIXTURES / "gotest" / "go-test.json").read_text().splitlines()
    go = [json.loads(line) for line in lines if line.strip()]
    for event in go:
        if event.get("Action") == "output":
            event["Output"] = event["Output"].replace("panic", "pa\x00nic").replace("FAIL", "FA\x00IL")
    (tmp_path / "go.json").write_text("\n".join(json.dumps(event) for event in go) + "\n")

    for name in ("ctrf.json", "go.json"):
        summary = _ingest_cli(tenant, tmp_path / name, world["project"])
        # the fixtures name a case (SHOP-n) this tenant lacks: that one item is rejected, for that alone
        assert summary["accepted"] > 0 and all("NUL" not in e["error"] for e in summary["errors"]), summary
        stored = _results_of(tenant, summary["run_id"])
        texts = " ".join(str(r[key]) for r in stored for key in ("error_message", "error_stack", "comment"))
        assert "\ufffd" in texts and "\x00" not in texts, name
