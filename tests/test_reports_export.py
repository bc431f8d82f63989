"""The run export read back through the real `tms ingest` (a subprocess, so against the shared `tms serve`):
each format round-trips what it can hold. The reports themselves run in-process (tests/test_reports.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Tenant
from tests.test_reports import _case, _ingest, _ingest_file, _round_trip_results, _rows


@pytest.mark.parametrize("fmt", ["junit", "ctrf"])
def test_export_round_trips_through_tms_ingest(tenant: Tenant, tmp_path: Path, fmt: str) -> None:
    project = tenant.create_project("Round trip")
    for number in range(1, 6):
        _case(tenant, project["id"], f"RT-{number}", f"Case {number}")
    original = _ingest(tenant, project["id"], _round_trip_results(fmt), run_name="original",
                       environment="ci")
    response = tenant.client("read").get(f"/api/v1/runs/{original}/export", params={"format": fmt})
    assert response.status_code == 200 and "attachment" in response.headers["content-disposition"]
    path = tmp_path / ("export.xml" if fmt == "junit" else "export.json")
    path.write_bytes(response.content)
    summary = _ingest_file(tenant, path, project["id"], "--environment", "ci")
    assert summary["rejected"] == 0
    assert _rows(tenant, summary["run_id"]) == _rows(tenant, original)


def test_junit_export_keeps_multiline_messages(tenant: Tenant, tmp_path: Path) -> None:
    project = tenant.create_project("Multiline")
    original = _ingest(tenant, project["id"], [
        {"title": "t", "status": "FAILED", "error_message": "line one\nline two\twith a tab",
         "error_stack": "elsewhere\n  at x"}], run_name="original")
    path = tmp_path / "export.xml"
    path.write_bytes(tenant.api.get(f"/api/v1/runs/{original}/export", params={"format": "junit"}).content)
    summary = _ingest_file(tenant, path, project["id"])
    assert _rows(tenant, summary["run_id"]) == _rows(tenant, original)
