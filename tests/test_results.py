"""POST/GET /api/v1/runs/{id}/results: per-item checks (201/207), upsert, failed events, bad bodies."""

from __future__ import annotations

import gzip
import json
import time
from typing import Any

import pytest

from tests.conftest import Tenant, assert_problem
from tests.test_cases import new_case
from tests.test_runs import events_of, new_run

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)

ALL_FIELDS = {
    "status": "FAILED", "comment": "flaky on CI", "bug_ticket_key": "BUG-1",
    "bug_ticket_url": "https://tracker.example/BUG-1", "duration_ms": 1234, "framework": "pytest",
    "error_message": "AssertionError", "error_stack": "Traceback ...", "executed_at": "2026-01-02T03:04:05.678Z",
}


@pytest.fixture
def setup(tenant: Tenant) -> tuple[Tenant, dict[str, Any], list[dict[str, Any]]]:
    project = tenant.create_project()
    cases = [new_case(tenant, title=f"Case {i}") for i in range(3)]
    return tenant, new_run(tenant, project), cases


def post(tenant: Tenant, run: dict[str, Any], results: Any) -> Any:
    return tenant.api.post(f"/api/v1/runs/{run['id']}/results", json={"results": results})


def listed(tenant: Tenant, run: dict[str, Any]) -> list[dict[str, Any]]:
    response = tenant.client("read").get(f"/api/v1/runs/{run['id']}/results")
    assert response.status_code == 200, response.text
    return response.json()["data"]  # type: ignore[no-any-return]


def test_all_accepted_is_201_with_every_field_stored(setup) -> None:
    tenant, run, cases = setup
    response = post(tenant, run, [{"test_case_code": cases[0]["code"], **ALL_FIELDS},
                                  {"test_case_id": cases[1]["id"], "status": "PASSED"}])
    assert response.status_code == 201
    assert response.json() == {"accepted": 2, "rejected": 0, "errors": []}
    rows = listed(tenant, run)
    assert set(rows[0]) == {"id", "test_case_id", "test_case_code", "title", "status", "comment", "bug_ticket_key",
                            "bug_ticket_url", "duration_ms", "framework", "error_message", "error_stack",
                            "executed_at", "created_at", "updated_at", "attachments", "case_version", "assignee_id",
                            "step_results", "fingerprint", "source", "custom_fields", "file", "line"}
    assert {k: rows[0][k] for k in ALL_FIELDS} == ALL_FIELDS
    assert [row["source"] for row in rows] == ["automated", "automated"]
    assert (rows[0]["test_case_id"], rows[0]["test_case_code"], rows[0]["title"]) == (
        cases[0]["id"], cases[0]["code"], "Case 0")
    assert rows[0]["attachments"] == []
    assert (rows[1]["test_case_code"], rows[1]["status"], rows[1]["comment"]) == (cases[1]["code"], "PASSED", None)
    run_now = tenant.api.get(f"/api/v1/runs/{run['id']}").json()["data"]
    assert run_now["status"] == "IN_PROGRESS"
    assert run_now["counts"] == {"total": 2, "passed": 1, "failed": 1, "broken": 0, "skipped": 0, "unknown": 0}


def test_executed_at_without_offset_is_utc(setup) -> None:
    tenant, run, cases = setup
    post(tenant, run, [{"test_case_code": cases[0]["code"], "status": "PASSED", "executed_at": "2026-01-02T03:04:05"},
                       {"test_case_code": cases[1]["code"], "status": "PASSED",
                        "executed_at": "2026-01-02T05:04:05+02:00"}])
    assert [r["executed_at"] for r in listed(tenant, run)] == ["2026-01-02T03:04:05.000Z"] * 2


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"test_case_code": "C", "status": "passed"}, "status"),
        ({"test_case_code": "C", "status": "PASS"}, "status"),
        ({"test_case_code": "C", "status": "Failed"}, "status"),
        ({"test_case_code": "C", "status": "OK"}, "status"),
        ({"test_case_code": "C", "status": ""}, "status"),
        ({"test_case_code": "C", "status": None}, "status"),
        ({"test_case_code": "C", "status": 1}, "status"),
        ({"test_case_code": "C"}, "status"),
        ({"test_case_code": "NOPE-1", "status": "PASSED"}, "NOPE-1"),
        ({"test_case_id": "cnothere", "status": "PASSED"}, "cnothere"),
        ({"status": "PASSED"}, "test_case_code or test_case_id"),
        ({"status": "PASSED", "title": "only a title"}, "test_case_code or test_case_id"),
        ({"test_case_code": "C", "test_case_id": "OTHER", "status": "PASSED"}, "different"),
        ({"test_case_code": "C", "status": "PASSED", "duration_ms": "5"}, "duration_ms"),
        ({"test_case_code": "C", "status": "PASSED", "duration_ms": -1}, "duration_ms"),
        ({"test_case_code": "C", "status": "PASSED", "executed_at": "yesterday"}, "executed_at"),
        ({"test_case_code": "C", "status": "PASSED", "surprise": 1}, "surprise"),
        ({"test_case_code": 7, "status": "PASSED"}, "test_case_code"),
        ("PASSED", "object"),
        (None, "object"),
        ([], "object"),
    ],
)
def test_a_bad_item_is_rejected_alone_with_207(setup, item: Any, message: str) -> None:
    tenant, run, cases = setup
    code, other = cases[0]["code"], cases[1]["id"]

    def fill(value: Any) -> Any:
        return {"C": code, "OTHER": other}.get(value, value) if isinstance(value, str) else value

    bad = {k: fill(v) for k, v in item.items()} if isinstance(item, dict) else item
    response = post(tenant, run, [{"test_case_code": cases[2]["code"], "status": "SKIPPED"}, bad])
    assert response.status_code == 207, response.text
    body = response.json()
    assert (body["accepted"], body["rejected"]) == (1, 1)
    assert body["errors"][0]["index"] == 1 and message in body["errors"][0]["error"]
    assert [r["test_case_code"] for r in listed(tenant, run)] == [cases[2]["code"]]


def test_all_rejected_is_207_and_writes_nothing(setup) -> None:
    tenant, run, _ = setup
    response = post(tenant, run, [{"test_case_code": "NOPE-1", "status": "PASSED"}, {"status": "passed"}])
    assert response.status_code == 207
    assert response.json()["accepted"] == 0 and [e["index"] for e in response.json()["errors"]] == [0, 1]
    assert listed(tenant, run) == []
    assert tenant.api.get(f"/api/v1/runs/{run['id']}").json()["data"] == run  # still PENDING, untouched


def test_upsert_last_write_wins_and_updated_at_moves(setup) -> None:
    tenant, run, cases = setup
    code = cases[0]["code"]
    assert post(tenant, run, [{"test_case_code": code, **ALL_FIELDS}]).status_code == 201
    first = listed(tenant, run)[0]
    time.sleep(0.01)
    assert post(tenant, run, [{"test_case_id": cases[0]["id"], "status": "PASSED", "comment": "fixed"}]).status_code \
        == 201
    rows = listed(tenant, run)
    assert len(rows) == 1
    second = rows[0]
    assert second["id"] == first["id"] and second["created_at"] == first["created_at"]
    assert second["updated_at"] > first["updated_at"]
    assert (second["status"], second["comment"], second["error_message"]) == ("PASSED", "fixed", None)
    # two items for one case in one batch: the later one wins
    post(tenant, run, [{"test_case_code": code, "status": "BROKEN"}, {"test_case_code": code, "status": "SKIPPED"}])
    assert [r["status"] for r in listed(tenant, run)] == ["SKIPPED"]
    counts = tenant.api.get(f"/api/v1/runs/{run['id']}").json()["data"]["counts"]
    assert counts == {"total": 1, "passed": 0, "failed": 0, "broken": 0, "skipped": 1, "unknown": 0}


def test_failed_event_fires_when_a_result_becomes_failed(setup) -> None:
    tenant, run, cases = setup
    a, b = cases[0], cases[1]
    post(tenant, run, [{"test_case_code": a["code"], "status": "FAILED", "error_message": "boom",
                        "bug_ticket_key": "BUG-9"}, {"test_case_code": b["code"], "status": "PASSED"}])
    fired = events_of(tenant, "test_run_result.failed")
    assert len(fired) == 1
    result_id = listed(tenant, run)[0]["id"]
    assert fired[0]["data"] == {"run_id": run["id"], "run_name": run["name"], "project_id": run["project_id"],
                                "result_id": result_id, "test_case_id": a["id"], "test_case_code": a["code"],
                                "title": a["title"], "error_message": "boom", "bug_ticket_key": "BUG-9",
                                "custom_fields": {}, "file": None, "line": None}
    post(tenant, run, [{"test_case_code": a["code"], "status": "FAILED"}])  # stays FAILED: no new event
    assert len(events_of(tenant, "test_run_result.failed")) == 1
    post(tenant, run, [{"test_case_code": b["code"], "status": "FAILED"}])  # PASSED -> FAILED: event
    post(tenant, run, [{"test_case_code": a["code"], "status": "PASSED"}, {"test_case_code": a["code"],
                                                                           "status": "FAILED"}])
    assert [e["data"]["test_case_code"] for e in events_of(tenant, "test_run_result.failed")] == [
        a["code"], b["code"], a["code"]]


def test_prepopulated_results_are_upserted(tenant: Tenant) -> None:
    case = new_case(tenant)
    run = new_run(tenant, tenant.create_project(), test_case_ids=[case["code"]])
    placeholder = listed(tenant, run)[0]
    post(tenant, run, [{"test_case_code": case["code"], "status": "PASSED"}])
    rows = listed(tenant, run)
    assert [(r["id"], r["status"]) for r in rows] == [(placeholder["id"], "PASSED")]
    data = tenant.api.get(f"/api/v1/runs/{run['id']}").json()["data"]
    assert data["status"] == "IN_PROGRESS" and data["counts"]["total"] == 1 and data["counts"]["passed"] == 1


def test_results_of_a_deleted_case_survive(setup) -> None:
    tenant, run, cases = setup
    post(tenant, run, [{"test_case_code": cases[0]["code"], "status": "FAILED"}])
    assert tenant.api.delete(f"/api/v1/cases/{cases[0]['id']}").status_code == 204
    rows = listed(tenant, run)
    assert [(r["test_case_code"], r["status"]) for r in rows] == [(cases[0]["code"], "FAILED")]
    response = post(tenant, run, [{"test_case_code": cases[0]["code"], "status": "PASSED"}])
    assert response.status_code == 207 and "does not exist" in response.json()["errors"][0]["error"]


def test_cases_of_another_tenant_are_rejected_per_item(setup, other_tenant: Tenant) -> None:
    tenant, run, _ = setup
    foreign = new_case(other_tenant, code="OTHER-1")
    response = post(tenant, run, [{"test_case_code": "OTHER-1", "status": "PASSED"},
                                  {"test_case_id": foreign["id"], "status": "PASSED"}])
    assert response.status_code == 207 and response.json()["rejected"] == 2


@pytest.mark.parametrize(
    "content",
    [b"{", b"not json", b"", b"[]", b"null", b'{"results": {}}', b'{"results": "x"}', b'{"results": null}',
     b'{"results": [], "extra": 1}', b'{"result": []}', b'{}', b'{"results": []}', b'{"results": [{"status": "P"}],}'],
)
def test_whole_body_problems_are_400(setup, content: bytes) -> None:
    tenant, run, _ = setup
    response = tenant.api.post(f"/api/v1/runs/{run['id']}/results", content=content,
                               headers={"Content-Type": "application/json"})
    assert_problem(response, 400)
    assert listed(tenant, run) == []


def test_gzip_body_and_bad_encodings(setup) -> None:
    tenant, run, cases = setup
    body = json.dumps({"results": [{"test_case_code": cases[0]["code"], "status": "PASSED"}]}).encode()
    url = f"/api/v1/runs/{run['id']}/results"
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    assert tenant.api.post(url, content=gzip.compress(body), headers=headers).status_code == 201
    assert_problem(tenant.api.post(url, content=gzip.compress(body)[:-10], headers=headers), 400)
    assert_problem(tenant.api.post(url, content=b"plain", headers=headers), 400)
    assert_problem(tenant.api.post(url, content=body, headers={**headers, "Content-Encoding": "br"}), 415)


def test_read_scope_cannot_post(setup) -> None:
    tenant, run, cases = setup
    response = tenant.client("read").post(f"/api/v1/runs/{run['id']}/results",
                                          json={"results": [{"test_case_code": cases[0]["code"], "status": "PASSED"}]})
    assert_problem(response, 403)


def test_a_big_batch_is_decoded_off_the_event_loop_just_the_same(setup) -> None:
    """Bodies over 1 MB take the worker-thread path; the outcome must not differ."""
    tenant, run, cases = setup
    items = [{"test_case_code": cases[i % 3]["code"], "status": "FAILED", "error_stack": "x" * 150_000}
             for i in range(8)] + [{"test_case_code": cases[0]["code"], "status": "nope"}]
    response = post(tenant, run, items)
    assert response.status_code == 207, response.text[:300]
    assert (response.json()["accepted"], response.json()["rejected"]) == (8, 1)
    assert sorted(r["test_case_code"] for r in listed(tenant, run)) == sorted(c["code"] for c in cases)


def test_results_list_is_paginated_linked_first_then_unlinked(tenant: Tenant) -> None:
    project = tenant.create_project()
    cases = [new_case(tenant, title=f"Paged {i}") for i in range(3)]
    items = [{"test_case_code": case["code"], "status": "PASSED"} for case in cases]
    items += [{"title": f"unlinked {i}", "status": "FAILED"} for i in range(4)]
    run_id = tenant.api.post("/api/v1/ingest", json={"project_id": project["id"], "results": items}).json()["run_id"]
    url = f"/api/v1/runs/{run_id}/results"
    reader = tenant.client("read")
    whole = reader.get(url).json()
    assert whole["pagination"] == {"total": 7, "limit": 7, "offset": 0}  # without limit: every result
    assert [r["title"] for r in whole["data"]] == [c["title"] for c in cases] + [f"unlinked {i}" for i in range(4)]
    pages = [reader.get(url, params={"limit": 2, "offset": offset}).json() for offset in (0, 2, 4, 6)]
    assert [p["pagination"] for p in pages] == [{"total": 7, "limit": 2, "offset": o} for o in (0, 2, 4, 6)]
    assert [r for p in pages for r in p["data"]] == whole["data"]  # every field, the same rows, in order
    assert set(whole["data"][0]) >= {  # every field of the unpaginated list is kept
        "id", "test_case_id", "test_case_code", "title", "status", "comment", "bug_ticket_key", "bug_ticket_url",
        "duration_ms", "framework", "error_message", "error_stack", "executed_at", "created_at", "updated_at",
        "attachments", "case_version", "assignee_id", "step_results", "fingerprint"}
    beyond = reader.get(url, params={"offset": 7}).json()
    assert beyond["data"] == [] and beyond["pagination"]["total"] == 7
    assert reader.get(url, params={"limit": 100_000}).json()["pagination"]["limit"] == 5000
    assert_problem(reader.get(url, params={"limit": 0}), 400)
    assert_problem(reader.get(url, params={"offset": -1}), 400)
