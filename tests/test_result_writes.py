"""One writer of results (issue 23): every entry point x every side effect, each exactly once.

Entry points: ingest (a new run), a shard ingest (``run_id``), ``POST /runs/{id}/results``,
``PATCH /results/{id}`` and the web execution view's save. Each writes one FAILED result of a case
whose failure matches a known issue's pattern, into a run; the table then checks, for that write:
the run's counts, PENDING -> IN_PROGRESS, one ``test_run_result.failed`` event, the fingerprint and its
``failure_fingerprints`` row, the known issue's bug stamped, the retest flag cleared, one audit entry,
the case version and the result's ``source`` (and the run's ``kind``), the result field's value and
the source location (issues 26, 24) in the result and its event.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import Tenant, connect_db
from tests.test_cases import new_case
from tests.test_runs import events_of, new_run

MESSAGE = "TimeoutError: checkout took 31 s"
BUG = "SHOP-77"


def _setup(tenant: Tenant) -> dict[str, Any]:
    project = tenant.create_project()
    case = new_case(tenant, title="Pay", project_id=project["id"])
    issue = tenant.api.post("/api/v1/known-issues", json={
        "project_id": project["id"], "pattern": "TimeoutError", "bug_ticket_key": BUG,
        "bug_ticket_url": f"https://tracker.example/{BUG}"})
    assert issue.status_code == 201, issue.text
    with connect_db(tenant.server.db_path) as conn:
        conn.execute("UPDATE test_cases SET needs_retest = 1 WHERE id = ?", (case["id"],))
        conn.commit()
    # a result field (issue 26): every entry point stores its value and the failed event carries it
    field = tenant.api.post("/api/v1/custom-fields", json={"project_id": project["id"], "key": "browser",
                                                           "name": "Browser", "type": "text", "entity": "result"})
    assert field.status_code == 201, field.text
    return {"project": project, "case": case}


VALUES = {"browser": "Firefox"}
LOCATION = {"file": "tests/test_pay.py", "line": 42}  # reported results only (issue 24)


def _failed_item(case: dict[str, Any]) -> dict[str, Any]:
    return {"test_case_code": case["code"], "status": "FAILED", "error_message": MESSAGE, "custom_fields": VALUES,
            **LOCATION}


# each entry point: (setup) -> (run id, result id), writing one FAILED result of the case
def _ingest(tenant: Tenant, s: dict[str, Any]) -> tuple[str, str]:
    answer = tenant.api.post("/api/v1/ingest", json={"project_id": s["project"]["id"],
                                                      "results": [_failed_item(s["case"])]})
    assert answer.status_code == 201, answer.text
    return answer.json()["run_id"], answer.json()["result_ids"][0]


def _shard(tenant: Tenant, s: dict[str, Any]) -> tuple[str, str]:
    run = new_run(tenant, s["project"])
    answer = tenant.api.post("/api/v1/ingest", json={"project_id": s["project"]["id"], "run_id": run["id"],
                                                      "results": [_failed_item(s["case"])]})
    assert answer.status_code == 201, answer.text
    return run["id"], answer.json()["result_ids"][0]


def _post_results(tenant: Tenant, s: dict[str, Any]) -> tuple[str, str]:
    run = new_run(tenant, s["project"])
    answer = tenant.api.post(f"/api/v1/runs/{run['id']}/results", json={"results": [_failed_item(s["case"])]})
    assert answer.status_code == 201, answer.text
    [result] = tenant.api.get(f"/api/v1/runs/{run['id']}/results").json()["data"]
    return run["id"], result["id"]


def _placeholder(tenant: Tenant, s: dict[str, Any]) -> tuple[str, str]:
    """A run pre-populated with the case (an UNKNOWN result), its error text set as CI would have."""
    run = new_run(tenant, s["project"], test_case_ids=[s["case"]["id"]])
    [result] = tenant.api.get(f"/api/v1/runs/{run['id']}/results").json()["data"]
    with connect_db(tenant.server.db_path) as conn:
        conn.execute("UPDATE test_results SET error_message = ? WHERE id = ?", (MESSAGE, result["id"]))
        conn.commit()
    return run["id"], result["id"]


def _patch(tenant: Tenant, s: dict[str, Any]) -> tuple[str, str]:
    run_id, result_id = _placeholder(tenant, s)
    answer = tenant.api.patch(f"/api/v1/results/{result_id}", json={"status": "FAILED", "custom_fields": VALUES})
    assert answer.status_code == 200, answer.text
    return run_id, result_id


def _web_save(tenant: Tenant, s: dict[str, Any]) -> tuple[str, str]:
    run_id, result_id = _placeholder(tenant, s)
    web = tenant.web()
    answer = web.post(f"/results/{result_id}/execute", data={"status": "FAILED", "cf.browser": VALUES["browser"]})
    assert answer.status_code == 303, answer.text
    return run_id, result_id


ENTRY_POINTS: dict[str, tuple[Callable[[Tenant, dict[str, Any]], tuple[str, str]], str, str]] = {
    # name: (write, the result's source, the audit action of the write)
    "ingest": (_ingest, "automated", "run.ingested"),
    "shard": (_shard, "automated", "run.ingested"),
    "post_results": (_post_results, "automated", "run.results_posted"),
    "patch": (_patch, "manual", "result.updated"),
    "web_save": (_web_save, "manual", "result.updated"),
}


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_every_side_effect_exactly_once(tenant: Tenant, entry: str) -> None:
    write, source, action = ENTRY_POINTS[entry]
    s = _setup(tenant)
    with connect_db(tenant.server.db_path) as conn:
        audit_before = conn.execute("SELECT COUNT(*) FROM audit_log WHERE tenant_id = ? AND action = ?",
                                    (tenant.id, action)).fetchone()[0]
    run_id, result_id = write(tenant, s)

    run = tenant.api.get(f"/api/v1/runs/{run_id}").json()["data"]
    # run counts: one FAILED result, once
    assert run["counts"] == {"total": 1, "passed": 0, "failed": 1, "broken": 0, "skipped": 0, "unknown": 0}
    # PENDING -> IN_PROGRESS (an ingest's new run is COMPLETED at once)
    assert run["status"] == ("COMPLETED" if entry == "ingest" else "IN_PROGRESS")
    assert run["kind"] == source
    result = tenant.api.get(f"/api/v1/results/{result_id}").json()["data"]
    assert result["source"] == source
    assert result["status"] == "FAILED"
    # the known issue's bug stamped; the fingerprint set
    assert result["bug_ticket_key"] == BUG
    assert result["fingerprint"]
    # the case's version at the write
    assert result["case_version"] == s["case"]["version"]
    # the result field's value, and the source location of a reported result
    assert result["custom_fields"] == VALUES
    located = LOCATION if source == "automated" else {"file": None, "line": None}
    assert {"file": result["file"], "line": result["line"]} == located
    # one test_run_result.failed event, naming this result, with its values and location
    failed = [e for e in events_of(tenant, "test_run_result.failed") if e["data"]["run_id"] == run_id]
    assert [e["data"]["result_id"] for e in failed] == [result_id]
    assert failed[0]["data"]["custom_fields"] == VALUES
    assert {"file": failed[0]["data"]["file"], "line": failed[0]["data"]["line"]} == located
    with connect_db(tenant.server.db_path) as conn:
        # failure_fingerprints: first seen in this run, counted once
        seen = conn.execute("SELECT first_run_id, last_run_id FROM failure_fingerprints WHERE tenant_id = ? "
                            "AND fingerprint = ?", (tenant.id, result["fingerprint"])).fetchall()
        # the retest flag cleared by the new result
        flagged = conn.execute("SELECT needs_retest FROM test_cases WHERE id = ?", (s["case"]["id"],)).fetchone()[0]
        audits = conn.execute("SELECT COUNT(*) FROM audit_log WHERE tenant_id = ? AND action = ?",
                              (tenant.id, action)).fetchone()[0]
    # first seen in this run for an automated failure; a tester's failure stays out of the first-seen
    # table (``new`` and the top clusters are about automated results, issue 24)
    assert [tuple(row) for row in seen] == ([(run_id, run_id)] if source == "automated" else [])
    assert not flagged
    assert audits - audit_before == 1
    # the run page and the result's page show the badges
    web = tenant.web()
    assert 'id="run-kind"' in (page := web.get(f"/runs/{run_id}").text)
    assert f'>{source.capitalize()}</span>' in page.split('id="run-kind"', 1)[1][:200]
    assert ('class="badge source-manual"' in page) == (source == "manual")
    execute = web.get(f"/results/{result_id}/execute").text
    assert f'>{source.capitalize()}</span>' in execute.split('id="result-source"', 1)[1][:200]


def test_a_manual_save_over_an_automated_result_makes_the_run_mixed(tenant: Tenant) -> None:
    s = _setup(tenant)
    other = new_case(tenant, title="Refund", project_id=s["project"]["id"])
    run = new_run(tenant, s["project"])
    posted = tenant.api.post(f"/api/v1/runs/{run['id']}/results", json={"results": [
        {"test_case_code": s["case"]["code"], "status": "PASSED"},
        {"test_case_code": other["code"], "status": "PASSED"}]})
    assert posted.status_code == 201, posted.text
    first, second = tenant.api.get(f"/api/v1/runs/{run['id']}/results").json()["data"]
    assert tenant.api.get(f"/api/v1/runs/{run['id']}").json()["data"]["kind"] == "automated"
    # a comment alone leaves the outcome (and its source) as CI wrote it
    tenant.api.patch(f"/api/v1/results/{first['id']}", json={"comment": "looked at it"})
    assert tenant.api.get(f"/api/v1/results/{first['id']}").json()["data"]["source"] == "automated"
    tenant.api.patch(f"/api/v1/results/{first['id']}", json={"status": "FAILED"})
    assert tenant.api.get(f"/api/v1/results/{first['id']}").json()["data"]["source"] == "manual"
    assert tenant.api.get(f"/api/v1/runs/{run['id']}").json()["data"]["kind"] == "mixed"
    tenant.api.patch(f"/api/v1/results/{second['id']}", json={"status": "PASSED", "step_results": []})
    assert tenant.api.get(f"/api/v1/runs/{run['id']}").json()["data"]["kind"] == "manual"
    # CI writing again makes it automated again
    tenant.api.post(f"/api/v1/runs/{run['id']}/results", json={"results": [
        {"test_case_code": s["case"]["code"], "status": "PASSED"},
        {"test_case_code": other["code"], "status": "PASSED"}]})
    data = tenant.api.get(f"/api/v1/runs/{run['id']}").json()["data"]
    assert data["kind"] == "automated"
    assert data["counts"] == {"total": 2, "passed": 2, "failed": 0, "broken": 0, "skipped": 0, "unknown": 0}
