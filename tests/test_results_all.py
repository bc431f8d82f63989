"""GET /runs/{id}/results without `limit`: every result of the run, streamed; with `limit` it pages."""

from __future__ import annotations

import csv
import io
from typing import Any

from tests.conftest import Tenant, assert_problem

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)

FEATURE = "Feature: f\n  Scenario: s\n    Given a step\n"
LINKED, UNLINKED = 1_200, 800  # both tables cross the server's 1,000-row chunks


def _big_run(tenant: Tenant) -> tuple[str, list[str]]:
    """A run of 1,200 linked and 800 unlinked results (some FAILED, one with an attachment)."""
    project = tenant.create_project()
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(["code", "title", "bdd_content"])
    codes = [f"ALL-{i}" for i in range(LINKED)]
    writer.writerows([code, f"case {code}", FEATURE] for code in codes)
    imported = tenant.api.post("/api/v1/cases/import", params={"project_id": project["id"], "format": "csv"},
                               files={"file": ("cases.csv", buffer.getvalue().encode(), "text/csv")})
    assert imported.status_code in (200, 201), imported.text[:500]
    items: list[dict[str, Any]] = [
        {"test_case_code": code, "status": "FAILED" if i % 7 == 0 else "PASSED", "error_message": f"boom {i % 3}"}
        for i, code in enumerate(codes)]
    items += [{"title": f"unlinked {i}", "status": "FAILED" if i % 5 == 0 else "SKIPPED"} for i in range(UNLINKED)]
    response = tenant.api.post("/api/v1/ingest", json={"project_id": project["id"], "results": items})
    assert response.status_code == 201, response.text[:500]
    run_id = response.json()["run_id"]
    return run_id, codes


def test_without_limit_every_result_with_limit_pages(tenant: Tenant) -> None:
    run_id, codes = _big_run(tenant)
    url = f"/api/v1/runs/{run_id}/results"
    reader = tenant.client("read")
    first = reader.get(url, params={"limit": 1}).json()["data"][0]
    attached = tenant.api.post(f"/api/v1/results/{first['id']}/attachments",
                               files={"file": ("log.txt", b"hello", "text/plain")})
    assert attached.status_code == 201, attached.text

    response = reader.get(url)
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
    whole = response.json()
    assert len(whole["data"]) == LINKED + UNLINKED
    assert whole["pagination"] == {"total": LINKED + UNLINKED, "limit": LINKED + UNLINKED, "offset": 0}
    assert [r["test_case_code"] for r in whole["data"][:LINKED]] == codes  # linked first, in stored order
    assert [r["title"] for r in whole["data"][LINKED:]] == [f"unlinked {i}" for i in range(UNLINKED)]
    assert len({r["id"] for r in whole["data"]}) == LINKED + UNLINKED
    assert [a["fileName"] for a in whole["data"][0]["attachments"]] == ["log.txt"]

    # with limit it pages as before, and the pages are exactly the rows of the whole answer
    pages = [reader.get(url, params={"limit": 5_000 if offset else 700, "offset": offset}).json()
             for offset in (0, 700)]
    assert [p["pagination"] for p in pages] == [{"total": 2_000, "limit": 700, "offset": 0},
                                                {"total": 2_000, "limit": 5_000, "offset": 700}]
    assert [r for p in pages for r in p["data"]] == whole["data"]  # every field, the same rows, in order

    # offset without limit: the rest of the run; beyond its end, nothing (total = what the run holds)
    rest = reader.get(url, params={"offset": 1_500}).json()
    assert rest["data"] == whole["data"][1_500:]
    assert rest["pagination"] == {"total": 2_000, "limit": 500, "offset": 1_500}
    beyond = reader.get(url, params={"offset": 2_500}).json()
    assert beyond == {"data": [], "pagination": {"total": 2_000, "limit": 0, "offset": 2_500}}

    # filters stream too: every matching row, whichever table it is in
    failed = reader.get(url, params={"status": "FAILED"}).json()
    expected = [r for r in whole["data"] if r["status"] == "FAILED"]
    assert failed["data"] == expected and failed["pagination"]["total"] == len(expected) > 1_000 // 7
    paged_failed = reader.get(url, params={"status": "FAILED", "limit": 5_000}).json()
    assert paged_failed["data"] == expected


def test_all_results_errors_and_other_tenants(tenant: Tenant, other_tenant: Tenant) -> None:
    project = tenant.create_project()
    run_id = tenant.api.post("/api/v1/ingest", json={
        "project_id": project["id"], "results": [{"title": "one", "status": "PASSED"}]}).json()["run_id"]
    url = f"/api/v1/runs/{run_id}/results"
    assert tenant.api.get(url).json()["pagination"] == {"total": 1, "limit": 1, "offset": 0}
    assert_problem(other_tenant.api.get(url), 404)
    assert_problem(tenant.api.get("/api/v1/runs/no-such-run/results"), 404)
    assert_problem(tenant.api.get(url, params={"status": "nope"}), 400)
    assert_problem(tenant.api.get(url, params={"offset": -1}), 400)
    empty = tenant.api.post("/api/v1/runs", json={"name": "empty", "project_id": project["id"]}).json()["data"]
    assert tenant.api.get(f"/api/v1/runs/{empty['id']}/results").json() == {
        "data": [], "pagination": {"total": 0, "limit": 0, "offset": 0}}
