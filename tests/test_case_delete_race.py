"""A case DELETE landing between the lookup of the cases a batch names and the write of its results.

The window is a few milliseconds wide in a real server, so these tests make it certain: the write
runs in-process on the session server's database (as `tms admin` does) with the lookup wrapped so
that the case is deleted right after it was resolved. The result must then be rejected as naming an
unknown case, never stored for a case that no longer exists. Everything is read back over HTTP.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Tenant, run_admin
from tests.test_cases import new_case
from tests.test_ingest import results_of
from tms.attachments.objects import LocalStore
from tms.library.cases import service as case_service
from tms.runs.ingest import service as ingest_service
from tms.runs.results import service as result_service


def delete_after_lookup(monkeypatch: pytest.MonkeyPatch, module: Any, tenant: Tenant, code: str) -> None:
    """Wraps ``module.resolve_cases`` so its first call deletes the case right after resolving it."""
    original = module.resolve_cases
    calls = []

    async def resolve_then_delete(db: Any, tenant_id: str, items: Any) -> Any:
        found = await original(db, tenant_id, items)
        if not calls:
            calls.append(1)
            # the server's own attachment folder: the case has no files, so nothing leaves it
            store = LocalStore(tenant.server.data_dir / "attachments")
            await case_service.delete_case(db, tenant.id, code, store)
        return found

    monkeypatch.setattr(module, "resolve_cases", resolve_then_delete)


def test_ingest_never_stores_a_result_for_a_case_deleted_after_its_lookup(
    tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tenant.create_project()
    doomed, kept = new_case(tenant, title="Doomed"), new_case(tenant, title="Kept")
    body = {"project_id": project["id"], "results": [
        {"test_case_code": doomed["code"], "status": "FAILED"},
        {"test_case_code": kept["code"], "status": "PASSED"},
        {"title": "unlinked", "status": "PASSED"},
    ]}
    delete_after_lookup(monkeypatch, ingest_service, tenant, doomed["code"])
    status, raw = run_admin(tenant.server.db_path,
                            lambda db: ingest_service.ingest(db, tenant.id, json.dumps(body).encode()))
    answer = json.loads(raw)
    assert status == 207, answer
    assert (answer["accepted"], answer["rejected"]) == (2, 1)
    assert answer["errors"][0]["index"] == 0 and "does not exist" in answer["errors"][0]["error"]
    rows = results_of(tenant, answer["run_id"])
    assert [(r["test_case_code"], r["title"], r["status"]) for r in rows] == [
        (kept["code"], "Kept", "PASSED"), (None, "unlinked", "PASSED")]
    run = tenant.api.get(f"/api/v1/runs/{answer['run_id']}").json()["data"]
    assert run["counts"] == {"total": 2, "passed": 2, "failed": 0, "broken": 0, "skipped": 0, "unknown": 0}


def test_posted_results_never_land_on_a_case_deleted_after_its_lookup(
    tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tenant.create_project()
    doomed, kept = new_case(tenant, title="Doomed"), new_case(tenant, title="Kept")
    run = tenant.api.post("/api/v1/runs", json={"project_id": project["id"], "name": "r"}).json()["data"]
    body = {"results": [{"test_case_id": doomed["id"], "status": "PASSED"},
                        {"test_case_code": kept["code"], "status": "PASSED"}]}
    delete_after_lookup(monkeypatch, result_service, tenant, doomed["code"])
    answer = run_admin(tenant.server.db_path,
                       lambda db: result_service.post_results(db, tenant.id, run["id"], json.dumps(body).encode()))
    assert (answer.accepted, answer.rejected) == (1, 1)
    assert answer.errors[0].index == 0 and "does not exist" in answer.errors[0].error
    assert [r["test_case_code"] for r in results_of(tenant, run["id"])] == [kept["code"]]
    counts = tenant.api.get(f"/api/v1/runs/{run['id']}").json()["data"]["counts"]
    assert (counts["total"], counts["passed"]) == (1, 1)
