"""Failure intelligence end to end through HTTP: fingerprints on results, clusters per run, run comparison,
known issues (fingerprint and pattern, closed by the tracker loop), quarantine, flaky tests, and the
`tms ingest --gate` / `tms quarantine list` commands."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ServerProcess, Tenant, assert_problem, connect_db

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / "tests" / "fixtures" / "reports"
GHERKIN = "Feature: F\n  Scenario: S\n    Given a step\n"

IN_PROCESS = True  # tests/inprocess.py; the CLI's gate (a subprocess) runs on a server: test_failures_cli.py


@pytest.fixture
def server(app_server: ServerProcess) -> ServerProcess:
    """The app the tenants live on (in-process here)."""
    return app_server

JAVA_STACK = (
    "org.opentest4j.AssertionFailedError: {message}\n"
    "\tat org.junit.jupiter.api.AssertionUtils.fail(AssertionUtils.java:151)\n"
    "\tat com.shop.PaymentClient.charge(PaymentClient.java:{line})\n"
    "\tat com.shop.CartTest.checkout(CartTest.java:31)\n"
    "\tat java.base/java.lang.reflect.Method.invoke(Method.java:569)\n"
)


def cases(tenant: Tenant, project_id: str, *codes: str) -> None:
    for code in codes:
        response = tenant.api.post("/api/v1/cases", json={"project_id": project_id, "code": code,
                                                          "title": f"Case {code}", "bdd_content": GHERKIN})
        assert response.status_code == 201, response.text


def ingest(tenant: Tenant, project_id: str, results: list[dict[str, Any]], **extra: Any) -> str:
    response = tenant.api.post("/api/v1/ingest", json={"project_id": project_id, "results": results, **extra})
    assert response.status_code == 201, response.text
    return response.json()["run_id"]  # type: ignore[no-any-return]


def timeout_failure(code: str | None, run: int, title: str | None = None) -> dict[str, Any]:
    """The same failure as each CI run prints it: another port, request id, temp dir and duration."""
    item: dict[str, Any] = {
        "status": "FAILED",
        "error_message": f"TimeoutError: GET http://127.0.0.1:{5000 + run}/api/orders/{run * 17} timed out after "
                         f"{3000 + run}ms (request 6f1c2a3b-1111-2222-3333-44445555{run:04d})",
        "error_stack": f'Traceback (most recent call last):\n  File "/tmp/ci-{run}/tests/test_orders.py", line 12, '
                       f'in test_list\n    client.get(url)\n  File "/home/runner/work/r{run}/shop/client.py", '
                       f'line 88, in get\n    raise TimeoutError(url)\n',
    }
    if code:
        item["test_case_code"] = code
    if title:
        item["title"] = title
    return item


def payment_failure(code: str, run: int) -> dict[str, Any]:
    message = f"payment provider answer ==> expected: <paid> but was: <declined-{run}>"
    return {"test_case_code": code, "status": "BROKEN", "error_message": message,
            "error_stack": JAVA_STACK.format(message=message, line=70 + run)}


def failures_of(tenant: Tenant, run_id: str) -> list[dict[str, Any]]:
    response = tenant.api.get(f"/api/v1/runs/{run_id}/failures")
    assert response.status_code == 200, response.text
    return response.json()["data"]  # type: ignore[no-any-return]


def results_of(tenant: Tenant, run_id: str) -> list[dict[str, Any]]:
    return tenant.api.get(f"/api/v1/runs/{run_id}/results").json()["data"]  # type: ignore[no-any-return]


# --- fingerprints and clusters ------------------------------------------------------------------------


def test_clusters_group_the_same_failure_and_mark_what_is_new(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    cases(tenant, project, "ORD-1", "ORD-2", "ORD-3", "PAY-1", "OK-1")
    first = ingest(tenant, project, [
        timeout_failure("ORD-1", 1), timeout_failure("ORD-2", 1), timeout_failure(None, 1, title="unlinked orders"),
        {"test_case_code": "OK-1", "status": "PASSED"}, {"test_case_code": "ORD-3", "status": "SKIPPED"},
    ])
    second = ingest(tenant, project, [
        timeout_failure("ORD-1", 2), timeout_failure("ORD-3", 2), payment_failure("PAY-1", 2),
        {"test_case_code": "OK-1", "status": "PASSED"},
    ])

    [cluster] = failures_of(tenant, first)
    assert cluster["count"] == 3 and cluster["new"] is True and cluster["known_issue"] is None
    assert {r["test_case_code"] for r in cluster["results"]} == {"ORD-1", "ORD-2", None}
    assert cluster["error_message"].startswith("TimeoutError: GET")
    assert set(cluster) >= {"fingerprint", "error_message", "count", "results", "first_seen_at", "new",
                            "known_issue"}

    timeouts, payments = failures_of(tenant, second)  # largest first
    assert timeouts["fingerprint"] == cluster["fingerprint"]  # other port, id, paths, line: same failure
    assert timeouts["count"] == 2 and timeouts["new"] is False
    assert timeouts["first_seen_at"] == cluster["first_seen_at"]
    assert payments["count"] == 1 and payments["new"] is True
    assert payments["fingerprint"] != timeouts["fingerprint"]

    # every result shape carries the fingerprint: set on failures only
    by_code = {r["test_case_code"]: r for r in results_of(tenant, second)}
    assert by_code["ORD-1"]["fingerprint"] == cluster["fingerprint"]
    assert by_code["PAY-1"]["fingerprint"] == payments["fingerprint"]
    assert by_code["OK-1"]["fingerprint"] is None


def test_post_results_fingerprints_and_an_upsert_to_passed_clears_it(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    cases(tenant, project, "UP-1")
    run = tenant.api.post("/api/v1/runs", json={"project_id": project, "name": "manual"}).json()["data"]["id"]
    posted = tenant.api.post(f"/api/v1/runs/{run}/results", json={"results": [timeout_failure("UP-1", 5)]})
    assert posted.status_code == 201, posted.text
    [cluster] = failures_of(tenant, run)
    assert cluster["new"] is True and cluster["results"][0]["test_case_code"] == "UP-1"
    tenant.api.post(f"/api/v1/runs/{run}/results", json={"results": [{"test_case_code": "UP-1", "status": "PASSED"}]})
    assert failures_of(tenant, run) == []
    assert results_of(tenant, run)[0]["fingerprint"] is None


# --- known issues ---------------------------------------------------------------------------------------


def test_a_known_issue_links_its_bug_and_stops_counting_as_new(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    cases(tenant, project, "K-1", "K-2", "K-3")
    first = ingest(tenant, project, [timeout_failure("K-1", 1)])
    [cluster] = failures_of(tenant, first)

    created = tenant.api.post("/api/v1/known-issues", json={
        "project_id": project, "fingerprint": cluster["fingerprint"], "bug_ticket_key": "SHOP-9",
        "bug_ticket_url": "https://tracker.example/SHOP-9", "note": "orders API slow on CI"})
    assert created.status_code == 201, created.text
    issue = created.json()["data"]
    assert issue["status"] == "OPEN" and issue["pattern"] is None and {"id", "created_at", "updated_at"} <= set(issue)
    # the failures of the run it was made from get the bug
    assert results_of(tenant, first)[0]["bug_ticket_key"] == "SHOP-9"

    later = ingest(tenant, project, [
        timeout_failure("K-2", 3),
        {**timeout_failure("K-3", 3), "bug_ticket_key": "OWN-1"},  # a result naming its own bug keeps it
    ])
    [again] = failures_of(tenant, later)
    assert again["known_issue"]["id"] == issue["id"] and again["new"] is False
    keys = {r["test_case_code"]: (r["bug_ticket_key"], r["bug_ticket_url"]) for r in results_of(tenant, later)}
    assert keys == {"K-2": ("SHOP-9", "https://tracker.example/SHOP-9"), "K-3": ("OWN-1", None)}

    listed = tenant.api.get("/api/v1/known-issues", params={"project_id": project}).json()
    assert [i["id"] for i in listed["data"]] == [issue["id"]] and listed["pagination"]["total"] == 1
    patched = tenant.api.patch(f"/api/v1/known-issues/{issue['id']}", json={"status": "CLOSED"})
    assert patched.status_code == 200 and patched.json()["data"]["closed_at"]
    closed_run = ingest(tenant, project, [timeout_failure("K-2", 4)])
    assert failures_of(tenant, closed_run)[0]["known_issue"] is None
    assert tenant.api.delete(f"/api/v1/known-issues/{issue['id']}").status_code == 204
    assert_problem(tenant.api.get(f"/api/v1/known-issues/{issue['id']}"), 404)
    actions = [e["action"] for e in audit_entries(tenant.server, tenant.id, "known_issue")]
    assert actions == ["known_issue.created", "known_issue.updated", "known_issue.deleted"]


def test_a_known_issue_by_pattern_matches_message_and_stack(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    cases(tenant, project, "P-1", "P-2")
    created = tenant.api.post("/api/v1/known-issues", json={
        "project_id": project, "pattern": r"PaymentClient\.charge", "bug_ticket_key": "PAY-77"})
    assert created.status_code == 201, created.text
    run = ingest(tenant, project, [payment_failure("P-1", 1), timeout_failure("P-2", 1)])
    by_code = {r["test_case_code"]: r["bug_ticket_key"] for r in results_of(tenant, run)}
    assert by_code == {"P-1": "PAY-77", "P-2": None}
    known = {c["results"][0]["test_case_code"]: c["known_issue"] for c in failures_of(tenant, run)}
    assert known["P-1"]["bug_ticket_key"] == "PAY-77" and known["P-2"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"bug_ticket_key": "B-1"}, "fingerprint"),                                   # neither
        ({"bug_ticket_key": "B-1", "fingerprint": "not-hex"}, "fingerprint"),
        ({"bug_ticket_key": "B-1", "pattern": r"(a)\1"}, "pattern"),                  # backreference: no RE2
        ({"bug_ticket_key": "B-1", "pattern": r"(?=x)y"}, "pattern"),                 # look-ahead
        ({"bug_ticket_key": "B-1", "pattern": "x" * 501}, "pattern"),
        ({"bug_ticket_key": "B-1", "pattern": "a{1000}{1000}"}, "pattern"),           # too big an automaton
        ({"bug_ticket_key": "B-1", "pattern": ".{0,1000}.{0,1000}.{0,1000}Q"}, "pattern"),  # too big a program
        ({"pattern": "x"}, "bug_ticket_key"),
        ({"bug_ticket_key": "B-1", "pattern": "x", "severity": "high"}, None),         # unknown field
    ],
)
def test_bad_known_issues_are_400_naming_the_field(tenant: Tenant, body: dict[str, Any], field: str | None) -> None:
    project = tenant.create_project()["id"]
    problem = assert_problem(tenant.api.post("/api/v1/known-issues", json={"project_id": project, **body}), 400)
    if field:
        assert field in json.dumps(problem.get("errors")) + problem["detail"], problem


def test_a_catastrophic_pattern_cannot_stall_ingest(tenant: Tenant) -> None:
    """(a+)+$ backtracks exponentially in Python's re; on RE2 it is linear. The ingest (guarded by the
    test timeout) stores 200 failures whose text is the pattern's worst case."""
    project = tenant.create_project()["id"]
    created = tenant.api.post("/api/v1/known-issues", json={
        "project_id": project, "pattern": r"^(a+)+$", "bug_ticket_key": "EVIL-1"})
    assert created.status_code == 201, created.text
    evil = "a" * 5000 + "!"
    run = ingest(tenant, project, [{"title": f"t{i}", "status": "FAILED", "error_message": evil}
                                   for i in range(200)])
    [cluster] = failures_of(tenant, run)
    assert cluster["count"] == 200 and cluster["known_issue"] is None


def test_resolving_the_bug_closes_the_known_issue_and_queues_its_tests(server: ServerProcess,
                                                                       tenant: Tenant) -> None:
    from tests.test_integrations import create_integration, deliver, fixture

    project = tenant.create_project()["id"]
    cases(tenant, project, "R-1", "R-2")
    run = ingest(tenant, project, [timeout_failure("R-1", 1), {**timeout_failure("R-2", 1),
                                                                "bug_ticket_key": "OTHER-5"}])
    [cluster] = failures_of(tenant, run)
    issue = tenant.api.post("/api/v1/known-issues", json={
        "project_id": project, "fingerprint": cluster["fingerprint"], "bug_ticket_key": "SHOP-101"}).json()["data"]
    integration_id, secret = create_integration(tenant, "JIRA")

    response = deliver(server, integration_id, "JIRA", secret, fixture("jira_issue_updated_done.json"))

    assert response.status_code == 200, response.text
    assert tenant.api.get(f"/api/v1/known-issues/{issue['id']}").json()["data"]["status"] == "CLOSED"
    queued = tenant.api.get("/api/v1/cases", params={"needs_retest": "true", "project_id": project}).json()["data"]
    # R-2 names its own bug, yet failed with the known issue's fingerprint: it is retested too
    assert sorted(c["code"] for c in queued) == ["R-1", "R-2"]


# --- comparison -----------------------------------------------------------------------------------------


def test_compare_with_the_previous_run_of_the_same_environment(tenant: Tenant, other_tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    cases(tenant, project, "C-1", "C-2", "C-3", "C-4", "C-5")
    base = ingest(tenant, project, [
        {"test_case_code": "C-1", "status": "PASSED"}, timeout_failure("C-2", 1), timeout_failure("C-3", 1),
        {"test_case_code": "C-4", "status": "PASSED"}, {"title": "gone", "status": "PASSED"},
    ], environment="staging")
    ingest(tenant, project, [timeout_failure("C-1", 9)], environment="production")  # another environment
    run = ingest(tenant, project, [
        timeout_failure("C-1", 2), {"test_case_code": "C-2", "status": "PASSED"}, timeout_failure("C-3", 2),
        {"test_case_code": "C-5", "status": "PASSED"}, {"title": "fresh", "status": "FAILED"},
    ], environment="staging")

    response = tenant.api.get(f"/api/v1/runs/{run}/compare")
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert data["base_run_id"] == base

    def names(items: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
        return {(i["test_case_code"] or i["title"], i["status"], i["base_status"]) for i in items}

    # each test in one list: "fresh" is only in this run, so it is added (with its status), not a new failure
    assert names(data["new_failures"]) == {("C-1", "FAILED", "PASSED")}
    assert names(data["fixed"]) == {("C-2", "PASSED", "FAILED")}
    assert names(data["still_failing"]) == {("C-3", "FAILED", "FAILED")}
    assert names(data["added"]) == {("C-5", "PASSED", None), ("fresh", "FAILED", None)}
    assert names(data["missing"]) == {("C-4", None, "PASSED"), ("gone", None, "PASSED")}

    # an explicit base; the reverse direction swaps fixed and new
    back = tenant.api.get(f"/api/v1/runs/{base}/compare", params={"base": run}).json()["data"]
    assert names(back["fixed"]) == {("C-1", "PASSED", "FAILED")}
    # the first run of an environment has nothing to compare with
    assert tenant.api.get(f"/api/v1/runs/{base}/compare").json()["data"]["base_run_id"] is None

    other_project = tenant.create_project("Other")["id"]
    elsewhere = ingest(tenant, other_project, [{"title": "x", "status": "PASSED"}])
    assert_problem(tenant.api.get(f"/api/v1/runs/{run}/compare", params={"base": elsewhere}), 404)
    foreign = ingest(other_tenant, other_tenant.create_project()["id"], [{"title": "x", "status": "PASSED"}])
    assert_problem(tenant.api.get(f"/api/v1/runs/{run}/compare", params={"base": foreign}), 404)
    assert_problem(other_tenant.api.get(f"/api/v1/runs/{run}/compare"), 404)
    assert_problem(other_tenant.api.get(f"/api/v1/runs/{run}/failures"), 404)


# --- quarantine ----------------------------------------------------------------------------------------


def test_quarantine_entries_flag_unknown_tests_and_expire_by_themselves(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    cases(tenant, project, "Q-1")
    ingest(tenant, project, [{"title": "login works", "status": "PASSED"}])
    made = [tenant.api.post("/api/v1/quarantine", json={"project_id": project, **body}) for body in (
        {"test_case_code": "Q-1", "reason": "flaky on CI"},
        {"title": "login works", "reason": "vendor sandbox down", "expires_at": "2099-01-01T00:00:00Z"},
        {"test_case_code": "NOPE-1", "reason": "typo?"},
    )]
    assert [m.status_code for m in made] == [201, 201, 201], [m.text for m in made]
    q1, login, nope = (m.json()["data"] for m in made)
    assert (q1["unknown_test"], login["unknown_test"], nope["unknown_test"]) == (False, False, True)
    assert login["expires_at"] == "2099-01-01T00:00:00.000Z" and login["active"] is True

    # expiry needs no job: an entry whose end has passed stops applying at once
    with connect_db(tenant.server.db_path) as conn:
        conn.execute("UPDATE quarantine SET expires_at = '2020-01-01T00:00:00.000Z' WHERE id = ?", (login["id"],))
    listed = tenant.api.get("/api/v1/quarantine", params={"project_id": project}).json()
    assert listed["pagination"]["total"] == 3
    assert {e["id"]: e["active"] for e in listed["data"]} == {q1["id"]: True, login["id"]: False, nope["id"]: True}
    run = ingest(tenant, project, [timeout_failure("Q-1", 1), timeout_failure(None, 1, title="login works")])
    marked = {r["test_case_code"] or r["title"]: r["quarantined"] for r in failures_of(tenant, run)[0]["results"]}
    assert marked == {"Q-1": True, "login works": False}

    assert tenant.api.delete(f"/api/v1/quarantine/{q1['id']}").status_code == 204
    assert_problem(tenant.api.delete(f"/api/v1/quarantine/{q1['id']}"), 404)
    for body in ({"reason": "x"}, {"test_case_code": "Q-1", "title": "t", "reason": "x"},
                 {"test_case_code": "Q-1", "reason": "x", "expires_at": "2001-01-01T00:00:00Z"},
                 {"test_case_code": "Q-1", "reason": ""}):
        assert_problem(tenant.api.post("/api/v1/quarantine", json={"project_id": project, **body}), 400)
    actions = [e["action"] for e in audit_entries(tenant.server, tenant.id, "quarantine")]
    assert actions.count("quarantine.created") == 3 and actions.count("quarantine.deleted") == 1


# --- flaky --------------------------------------------------------------------------------------------


def test_flaky_tests_flip_rates_and_the_automation_status_moves(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    cases(tenant, project, "FL-2", "FL-3", "ST-1")
    created = tenant.api.post("/api/v1/cases", json={"project_id": project, "code": "FL-1", "title": "Case FL-1",
                                                     "bdd_content": GHERKIN, "automation_status": "AUTOMATED"})
    assert created.status_code == 201, created.text
    flips = ["PASSED", "FAILED", "PASSED", "FAILED", "PASSED", "FAILED"]
    for i, status in enumerate(flips):
        ingest(tenant, project, [
            {"test_case_code": "FL-1", "status": status, "error_message": "boom" if status == "FAILED" else None},
            # fails twice in a row then passes for good: a fix, changed once, not flaky
            {"test_case_code": "FL-2", **({"status": "FAILED", "error_message": "x"} if i in (0, 1) else
                                          {"status": "PASSED"})},
            # passes every time, once only on a retry
            {"test_case_code": "FL-3", "status": "PASSED", **({"attempts": ["FAILED"]} if i == 3 else {})},
            {"test_case_code": "ST-1", "status": "FAILED", "error_message": "always"},
            {"title": "unlinked flipper", "status": status},
        ])
    response = tenant.api.get("/api/v1/flaky", params={"project_id": project, "runs": 30})
    assert response.status_code == 200, response.text
    flaky = {t["test_case_code"] or t["title"]: t for t in response.json()["data"]}
    assert set(flaky) == {"FL-1", "FL-3", "unlinked flipper"}  # ST-1 never flips, FL-2 was fixed once
    assert flaky["FL-1"] | {"title": None} == {
        "test_case_code": "FL-1", "title": None, "flip_rate": 1.0, "passes": 3, "failures": 3, "runs": 6,
        "last_status": "FAILED", "quarantined": False, "passed_on_retry": 0}
    assert flaky["FL-3"]["passed_on_retry"] == 1
    assert response.json()["data"][0]["flip_rate"] == 1.0  # highest first
    # a window of the last 2 runs: FL-2 passed in both
    recent = tenant.api.get("/api/v1/flaky", params={"project_id": project, "runs": 2}).json()["data"]
    assert "FL-2" not in {t["test_case_code"] for t in recent}

    # FL-1 and the retried FL-3 (1/6 < 0.3) -> only FL-1 moves to FLAKY, by itself, audited and evented
    assert wait_for(lambda: case(tenant, "FL-1")["automation_status"] == "FLAKY")
    assert case(tenant, "FL-2")["automation_status"] == "MANUAL"
    assert flaky_moves(tenant, "FL-1") == ["case.flaky_detected"]
    [event] = outbox(tenant.server, tenant.id, "test_case.flaky_changed")
    assert event["data"] | {"changed_at": None} == {
        "test_case_id": case(tenant, "FL-1")["id"], "test_case_code": "FL-1", "project_id": project,
        "automation_status": "FLAKY", "previous_automation_status": "AUTOMATED", "flip_rate": 1.0, "runs": 30,
        "changed_at": None}

    # stable again: enough passing runs bring the flip rate under half the threshold
    for _ in range(30):
        ingest(tenant, project, [{"test_case_code": "FL-1", "status": "PASSED"}])
    assert wait_for(lambda: case(tenant, "FL-1")["automation_status"] == "AUTOMATED")
    assert flaky_moves(tenant, "FL-1") == ["case.flaky_detected", "case.flaky_cleared"]
    # each move is a version of the case, by the detector (the system), not by the token that ingested
    versions = tenant.api.get(f"/api/v1/cases/{case(tenant, 'FL-1')['id']}/versions").json()["data"]
    assert [(v["version"], v["automation_status"]) for v in versions] == [
        (3, "AUTOMATED"), (2, "FLAKY"), (1, "AUTOMATED")]
    assert {v["changed_by"]["type"] for v in versions[:2]} == {"system"}
    assert case(tenant, "FL-1")["version"] == 3
    # the last 30 runs hold FL-1 alone: the others' outcomes count only in the runs that hold them
    wide = {t["test_case_code"] or t["title"]: t
            for t in tenant.api.get("/api/v1/flaky", params={"project_id": project, "runs": 40}).json()["data"]}
    assert set(wide) == {"FL-1", "FL-3", "unlinked flipper"}
    # FL-1: six flips, then 30 passes: 6 / 35
    assert (wide["FL-1"]["runs"], wide["FL-1"]["passes"], wide["FL-1"]["flip_rate"]) == (36, 33, round(6 / 35, 4))
    assert wide["unlinked flipper"]["runs"] == 6

    for params in ({}, {"project_id": project, "runs": 1}, {"project_id": project, "runs": 1000}):
        assert_problem(tenant.api.get("/api/v1/flaky", params=params), 400)
    assert_problem(tenant.api.get("/api/v1/flaky", params={"project_id": "nope"}), 404)


# --- helpers -----------------------------------------------------------------------------------------------


def case(tenant: Tenant, code: str) -> dict[str, Any]:
    return tenant.api.get(f"/api/v1/cases/{code}").json()["data"]  # type: ignore[no-any-return]


def wait_for(condition: Any, seconds: float = 20) -> bool:
    """Flaky re-evaluation runs after the write's answer: poll for its outcome (not a speed check)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return bool(condition())


def flaky_moves(tenant: Tenant, code: str) -> list[str]:
    return [e["action"] for e in audit_entries(tenant.server, tenant.id, "case", code)
            if e["action"].startswith("case.flaky")]


def audit_entries(server: ServerProcess, tenant_id: str, entity_type: str, code: str | None = None
                  ) -> list[dict[str, Any]]:
    with connect_db(server.db_path) as conn:
        conn.row_factory = sqlite3.Row
        of_case = "" if code is None else (
            " AND entity_id = (SELECT id FROM test_cases WHERE tenant_id = ? AND code = ?)")
        rows = conn.execute(
            f"SELECT action, entity_id, changes FROM audit_log WHERE tenant_id = ? AND entity_type = ?{of_case} "
            "ORDER BY rowid", (tenant_id, entity_type) + (() if code is None else (tenant_id, code))).fetchall()
    return [dict(row) for row in rows]


def outbox(server: ServerProcess, tenant_id: str, event: str) -> list[dict[str, Any]]:
    with connect_db(server.db_path) as conn:
        rows = conn.execute("SELECT body FROM events WHERE tenant_id = ? AND event = ? ORDER BY rowid",
                            (tenant_id, event)).fetchall()
    return [json.loads(body) for (body,) in rows]


def test_patching_a_result_status_sets_or_clears_its_fingerprint(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    cases(tenant, project, "PT-1")
    first = ingest(tenant, project, [timeout_failure("PT-1", 1)])
    [cluster] = failures_of(tenant, first)
    run = ingest(tenant, project, [{**timeout_failure("PT-1", 2), "status": "PASSED"}])
    [result] = results_of(tenant, run)
    assert result["fingerprint"] is None
    failed = tenant.api.patch(f"/api/v1/results/{result['id']}", json={"status": "FAILED"})
    assert failed.status_code == 200, failed.text
    assert failed.json()["data"]["fingerprint"] == cluster["fingerprint"]
    # set by hand, the result is manual now: clusters are about automated results
    assert failed.json()["data"]["source"] == "manual" and failures_of(tenant, run) == []
    passed = tenant.api.patch(f"/api/v1/results/{result['id']}", json={"status": "PASSED"})
    assert passed.json()["data"]["fingerprint"] is None and failures_of(tenant, run) == []


def test_a_stopping_server_evaluates_what_was_asked_without_waiting_out_the_delay(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Shutdown (``FlakyWatcher.idle``) runs each evaluation asked for at once: it used to sleep out the
    rest of the delay (2 s) first. Asks made before that still fold into one evaluation per project."""
    import asyncio

    from tms.failures.flaky import service as flaky_service

    evaluated: list[tuple[str, str]] = []

    async def evaluate(db: Any, tenant_id: str, project_id: str, threshold: float, runs: int) -> dict[str, int]:
        evaluated.append((tenant_id, project_id))
        return {}

    monkeypatch.setattr(flaky_service, "evaluate", evaluate)

    async def scenario() -> None:
        watcher = flaky_service.FlakyWatcher(db=None, threshold=0.3, runs=10, delay=3600)  # type: ignore[arg-type]
        for _ in range(3):
            watcher.touch("tenant", "project")
        watcher.touch("tenant", "other project")
        await asyncio.wait_for(watcher.idle(), 30)  # an hour's delay: only a flush gets through
        assert sorted(evaluated) == [("tenant", "other project"), ("tenant", "project")]  # three asks, one run

    asyncio.run(scenario())
