"""The traceability matrix against a running service: requirements from cases' tickets, the latest
result per environment, coverage, filters, paging, CSV, and titles read from a (fake, loopback) tracker
by the background refresh, never on a read."""

from __future__ import annotations

import csv
import io
import time
from typing import Any

import pytest

from tests.conftest import Tenant, assert_problem
from tests.test_defects import TOKEN, FakeTracker, tracker  # noqa: F401 - the fixture
from tests.test_integrations import GHERKIN

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)


def case(tenant: Tenant, project_id: str, title: str, tickets: list[tuple[str, str]], **fields: Any) -> str:
    body = {"title": title, "bdd_content": GHERKIN, "project_id": project_id,
            "tickets": [{"key": key, "source": source} for key, source in tickets], **fields}
    response = tenant.api.post("/api/v1/cases", json=body)
    assert response.status_code == 201, response.text
    return response.json()["data"]["code"]  # type: ignore[no-any-return]


def run(tenant: Tenant, project_id: str, environment: str, statuses: dict[str, str]) -> None:
    created = tenant.api.post("/api/v1/runs", json={"name": f"run {environment}", "project_id": project_id,
                                                    "environment": environment}).json()["data"]
    items = [{"test_case_code": code, "status": status} for code, status in statuses.items()]
    posted = tenant.api.post(f"/api/v1/runs/{created['id']}/results", json={"results": items})
    assert posted.status_code in (200, 201), posted.text
    time.sleep(0.002)  # runs are ordered by created_at (milliseconds): the next one is newer


@pytest.fixture
def library(tenant: Tenant) -> dict[str, Any]:
    """SHOP-1: A (passes) and B (passes on staging now, broken on prod) -> failed; SHOP-2: B -> failed;
    acme/shop#5: C without results -> untested; SHOP-3: only a deprecated case -> none;
    SHOP-4: A -> passed."""
    project = tenant.create_project()
    pid = project["id"]
    a = case(tenant, pid, "Pay by card", [("SHOP-1", "JIRA"), ("shop-4", "JIRA")])
    b = case(tenant, pid, "=HYPERLINK(\"http://evil\") <b>refund</b>", [("SHOP-1", "JIRA"), ("SHOP-2", "JIRA")])
    c = case(tenant, pid, "Ship it", [("acme/shop#5", "GITHUB")])
    d = case(tenant, pid, "Old flow", [("SHOP-3", "JIRA")], status="DEPRECATED")
    run(tenant, pid, "staging", {a: "PASSED", b: "FAILED", d: "FAILED"})
    run(tenant, pid, "staging", {b: "PASSED"})
    run(tenant, pid, "prod", {b: "BROKEN", a: "PASSED"})
    return {"project": project, "a": a, "b": b, "c": c, "d": d}


def matrix(tenant: Tenant, project_id: str, **params: Any) -> dict[str, Any]:
    response = tenant.api.get("/api/v1/traceability", params={"project_id": project_id, **params})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_requirements_cases_latest_results_and_coverage(tenant: Tenant, library: dict[str, Any]) -> None:
    a, b, c = library["a"], library["b"], library["c"]
    body = matrix(tenant, library["project"]["id"])
    rows = {row["key"]: row for row in body["data"]}
    assert [row["key"] for row in body["data"]] == ["acme/shop#5", "SHOP-1", "SHOP-2", "SHOP-3", "shop-4"]
    assert {key: row["coverage"] for key, row in rows.items()} == {
        "acme/shop#5": "untested", "SHOP-1": "failed", "SHOP-2": "failed", "SHOP-3": "none", "shop-4": "passed"}
    assert rows["SHOP-1"]["cases"] == [
        {"code": a, "title": "Pay by card", "latest": {"prod": "PASSED", "staging": "PASSED"}},
        {"code": b, "title": "=HYPERLINK(\"http://evil\") <b>refund</b>",
         "latest": {"prod": "BROKEN", "staging": "PASSED"}},
    ]
    assert rows["acme/shop#5"]["cases"] == [{"code": c, "title": "Ship it", "latest": {}}]
    assert rows["acme/shop#5"]["source"] == "GITHUB"
    assert rows["SHOP-3"]["cases"] == []
    assert rows["SHOP-1"]["title"] is None and rows["SHOP-1"]["status"] is None and rows["SHOP-1"]["url"] is None
    assert body["pagination"] == {"total": 5, "limit": 100, "offset": 0}
    assert body["totals"] == {"passed": 1, "failed": 2, "untested": 1, "none": 1}


def test_filters_and_paging(tenant: Tenant, library: dict[str, Any]) -> None:
    pid = library["project"]["id"]
    assert [r["key"] for r in matrix(tenant, pid, source="GITHUB")["data"]] == ["acme/shop#5"]
    gaps = matrix(tenant, pid, gaps="true")
    assert [r["key"] for r in gaps["data"]] == ["acme/shop#5", "SHOP-1", "SHOP-2", "SHOP-3"]
    assert gaps["pagination"]["total"] == 4
    assert [r["key"] for r in matrix(tenant, pid, coverage="none")["data"]] == ["SHOP-3"]
    page = matrix(tenant, pid, limit=2, offset=2)
    assert [r["key"] for r in page["data"]] == ["SHOP-2", "SHOP-3"]
    assert page["pagination"] == {"total": 5, "limit": 2, "offset": 2}
    beyond = matrix(tenant, pid, offset=50)
    assert beyond["data"] == [] and beyond["pagination"]["total"] == 5 and beyond["totals"]["failed"] == 2


@pytest.mark.parametrize(("params", "field"), [
    ({}, "project_id"),
    ({"source": "BUGZILLA"}, "source"),
    ({"coverage": "green"}, "coverage"),
    ({"format": "xml"}, "format"),
    ({"limit": 0}, "limit"),
])
def test_bad_parameters_are_400_naming_them(tenant: Tenant, params: dict[str, Any], field: str) -> None:
    project = tenant.create_project()
    query = {"project_id": project["id"], **params} if field != "project_id" else params
    problem = assert_problem(tenant.api.get("/api/v1/traceability", params=query), 400)
    assert field in str(problem)


def test_other_tenants_project_is_404_and_reads_need_a_token(tenant: Tenant, other_tenant: Tenant,
                                                               library: dict[str, Any]) -> None:
    pid = library["project"]["id"]
    assert_problem(other_tenant.api.get("/api/v1/traceability", params={"project_id": pid}), 404)
    assert_problem(other_tenant.api.get("/api/v1/traceability", params={"project_id": pid, "format": "csv"}), 404)
    assert tenant.client("read").get("/api/v1/traceability", params={"project_id": pid}).status_code == 200
    assert_problem(tenant.client("read").post("/api/v1/traceability/refresh"), 403)
    web = other_tenant.web()
    assert web.get(f"/traceability?project_id={pid}").status_code == 404
    assert web.get(f"/traceability/download?project_id={pid}").status_code == 404


def test_csv_has_a_line_per_requirement_and_case_with_formulas_neutralised(tenant: Tenant,
                                                                             library: dict[str, Any]) -> None:
    response = tenant.api.get("/api/v1/traceability", params={"project_id": library["project"]["id"],
                                                              "format": "csv"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/csv")
    text = response.content.decode("utf-8")
    assert text.startswith("\ufeff")
    rows = list(csv.DictReader(io.StringIO(text.lstrip("\ufeff"))))
    assert [(r["key"], r["test_case_code"]) for r in rows] == [
        ("acme/shop#5", library["c"]), ("SHOP-1", library["a"]), ("SHOP-1", library["b"]),
        ("SHOP-2", library["b"]), ("SHOP-3", ""), ("shop-4", library["a"])]
    refund = rows[2]
    assert refund["test_case_title"] == "'=HYPERLINK(\"http://evil\") <b>refund</b>"
    assert refund["latest"] == "prod=BROKEN; staging=PASSED" and refund["coverage"] == "failed"


def test_titles_and_statuses_come_from_the_tracker_in_the_background(
        tenant: Tenant, library: dict[str, Any], tracker: FakeTracker) -> None:  # noqa: F811 - the fixture
    tracker.add("SHOP-1", "Card payments", "In Progress")
    tracker.add("SHOP-4", "Gift cards", "Done")
    tracker.add("acme/shop#5", "Shipping labels", "open")
    jira = tenant.api.post("/api/v1/integrations", json={
        "kind": "JIRA", "name": "Jira", "api_url": tracker.url, "api_token": TOKEN, "api_user": "qa@example.com",
        "project_key": "SHOP"})
    assert jira.status_code == 201, jira.text
    github = tenant.api.post("/api/v1/integrations", json={
        "kind": "GITHUB", "name": "GitHub", "api_url": tracker.url, "api_token": TOKEN, "repository": "acme/shop"})
    assert github.status_code == 201, github.text
    pid = library["project"]["id"]
    matrix(tenant, pid)
    assert tracker.requests == [], "a read never calls the tracker"

    assert tenant.api.post("/api/v1/traceability/refresh").status_code == 202
    deadline = time.monotonic() + 20
    rows: dict[str, Any] = {}
    while time.monotonic() < deadline:
        rows = {row["key"]: row for row in matrix(tenant, pid)["data"]}
        if all(row["fetched_at"] for row in rows.values()):
            break
        time.sleep(0.1)
    assert (rows["SHOP-1"]["title"], rows["SHOP-1"]["status"]) == ("Card payments", "In Progress")
    assert rows["SHOP-1"]["url"] == f"{tracker.url}/browse/SHOP-1"
    assert (rows["shop-4"]["title"], rows["shop-4"]["status"]) == ("Gift cards", "Done")
    assert (rows["acme/shop#5"]["title"], rows["acme/shop#5"]["status"]) == ("Shipping labels", "open")
    assert rows["SHOP-2"]["title"] is None and "404" in rows["SHOP-2"]["tracker_error"]
    reads = len(tracker.requests)
    matrix(tenant, pid)
    tenant.web().get(f"/traceability?project_id={pid}")
    assert len(tracker.requests) == reads


def test_the_matrix_page(tenant: Tenant, library: dict[str, Any]) -> None:
    pid = library["project"]["id"]
    web = tenant.web()
    assert web.get("/traceability").status_code == 200
    page = web.get(f"/traceability?project_id={pid}")
    assert page.status_code == 200
    for text in ("SHOP-1", "acme/shop#5", library["b"], "coverage-failed", "coverage-untested",
                 "&lt;b&gt;refund&lt;/b&gt;"):
        assert text in page.text, text
    assert "<b>refund</b>" not in page.text
    gaps = web.get(f"/traceability?project_id={pid}&gaps=1")
    assert "shop-4" not in gaps.text and "SHOP-3" in gaps.text
    download = web.get(f"/traceability/download?project_id={pid}&gaps=1")
    assert download.status_code == 200 and "shop-4" not in download.text and "SHOP-3" in download.text
    refreshed = web.post("/traceability/refresh", data={"project_id": pid})
    assert refreshed.status_code == 303
