"""POST /api/v1/ingest: one request creates a COMPLETED run with linked and unlinked results."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
from typing import Any

import pytest

from tests.conftest import Tenant, assert_problem, connect_db
from tests.test_cases import new_case
from tests.test_runs import events_of

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)


def ingest(tenant: Tenant, body: Any, headers: dict[str, str] | None = None, gz: bool = False) -> Any:
    content = json.dumps(body).encode()
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    if gz:
        content = gzip.compress(content)
        all_headers["Content-Encoding"] = "gzip"
    return tenant.api.post("/api/v1/ingest", content=content, headers=all_headers)


def results_of(tenant: Tenant, run_id: str) -> list[dict[str, Any]]:
    """Every result of the run, following the pages as a client must."""
    rows: list[dict[str, Any]] = []
    while True:
        response = tenant.api.get(f"/api/v1/runs/{run_id}/results", params={"limit": 5000, "offset": len(rows)})
        assert response.status_code == 200, response.text
        page = response.json()
        rows += page["data"]
        if not page["data"] or len(rows) >= page["pagination"]["total"]:
            return rows


def row_counts(tenant: Tenant) -> tuple[int, int, int]:
    with connect_db(tenant.server.db_path) as conn:
        return tuple(  # type: ignore[return-value]
            conn.execute(f"SELECT COUNT(*) FROM {table} WHERE tenant_id = ?", (tenant.id,)).fetchone()[0]
            for table in ("test_runs", "test_results", "unlinked_test_results")
        )


def test_ingest_creates_a_completed_run_with_linked_and_unlinked_results(tenant: Tenant) -> None:
    project = tenant.create_project()
    login, pay = new_case(tenant, code="LOGIN-1"), new_case(tenant, title="Pay")
    body = {
        "project_id": project["id"], "run_name": "CI #42", "environment": "staging", "framework": "pytest",
        "results": [
            {"test_case_code": "LOGIN-1", "status": "PASSED", "duration_ms": 12},
            {"test_case_id": pay["id"], "status": "FAILED", "error_message": "boom", "framework": "playwright"},
            {"title": "test_unlinked", "status": "SKIPPED", "comment": "no case"},
            {"title": "test_other", "status": "FAILED", "error_stack": "trace"},
        ],
    }
    response = ingest(tenant, body)
    assert response.status_code == 201, response.text
    answer = response.json()
    assert answer == {"run_id": answer["run_id"], "accepted": 4, "rejected": 0, "errors": [],
                      "result_ids": answer["result_ids"]}
    run = tenant.api.get(f"/api/v1/runs/{answer['run_id']}").json()["data"]
    assert (run["name"], run["environment"], run["status"], run["project_id"]) == (
        "CI #42", "staging", "COMPLETED", project["id"])
    assert run["counts"] == {"total": 4, "passed": 1, "failed": 2, "broken": 0, "skipped": 1, "unknown": 0}
    rows = results_of(tenant, answer["run_id"])
    assert answer["result_ids"] == [r["id"] for r in rows]  # per item, in order: where each one landed
    assert [(r["test_case_code"], r["test_case_id"], r["title"], r["status"], r["framework"]) for r in rows] == [
        ("LOGIN-1", login["id"], login["title"], "PASSED", "pytest"),
        (pay["code"], pay["id"], "Pay", "FAILED", "playwright"),
        (None, None, "test_unlinked", "SKIPPED", "pytest"),
        (None, None, "test_other", "FAILED", "pytest"),
    ]
    assert rows[0]["duration_ms"] == 12 and rows[2]["comment"] == "no case" and rows[3]["error_stack"] == "trace"
    completed = events_of(tenant, "test_run.completed")
    assert [e["data"] for e in completed] == [{
        "run_id": answer["run_id"], "run_name": "CI #42", "project_id": project["id"], "environment": "staging",
        "total": 4, "passed": 1, "failed": 2, "broken": 0, "skipped": 1}]
    failed = events_of(tenant, "test_run_result.failed")
    assert [(e["data"]["test_case_code"], e["data"]["title"], e["data"]["result_id"]) for e in failed] == [
        (pay["code"], "Pay", rows[1]["id"]), (None, "test_other", rows[3]["id"])]


def test_run_name_defaults_to_a_timestamp(tenant: Tenant) -> None:
    project = tenant.create_project()
    answer = ingest(tenant, {"project_id": project["id"], "results": [{"title": "t", "status": "PASSED"}]}).json()
    run = tenant.api.get(f"/api/v1/runs/{answer['run_id']}").json()["data"]
    assert run["name"] == run["created_at"] and run["name"].endswith("Z")
    assert run["environment"] is None


def test_some_rejected_is_207_with_index_and_reason(tenant: Tenant, other_tenant: Tenant) -> None:
    project = tenant.create_project()
    case = new_case(tenant)
    foreign = new_case(other_tenant, code="THEIRS-1")
    items = [
        {"test_case_code": case["code"], "status": "PASSED"},
        {"test_case_code": "NOPE-1", "status": "PASSED"},
        {"test_case_code": case["code"], "status": "passed"},
        {"title": "x", "status": "PASS"},
        {"title": "x", "status": "FAILED"},
        {"test_case_code": "THEIRS-1", "status": "PASSED"},
        {"test_case_id": foreign["id"], "status": "PASSED"},
        {"title": "x", "status": "PASSED", "unknown_field": 1},
        17,
    ]
    response = ingest(tenant, {"project_id": project["id"], "results": items})
    assert response.status_code == 207
    answer = response.json()
    assert (answer["accepted"], answer["rejected"]) == (2, 7)
    errors = {e["index"]: e["error"] for e in answer["errors"]}
    assert sorted(errors) == [1, 2, 3, 5, 6, 7, 8]
    assert "NOPE-1" in errors[1] and "status" in errors[2] and "status" in errors[3] and "THEIRS-1" in errors[5]
    assert "unknown_field" in errors[7]
    stored = results_of(tenant, answer["run_id"])
    assert len(stored) == 2
    # rejected items have no result: null in their place
    assert [i for i, rid in enumerate(answer["result_ids"]) if rid is None] == [1, 2, 3, 5, 6, 7, 8]
    assert {rid for rid in answer["result_ids"] if rid} == {r["id"] for r in stored}


def test_a_body_without_one_valid_item_is_400_and_creates_nothing(tenant: Tenant) -> None:
    project = tenant.create_project()
    before = row_counts(tenant)
    items = [{"test_case_code": "NOPE-1", "status": "PASSED"}, {"title": "x", "status": "passed"}, 17]
    problem = assert_problem(ingest(tenant, {"project_id": project["id"], "results": items}), 400)
    assert "Nothing was created" in problem["detail"]
    assert [e["field"] for e in problem["errors"]] == ["results[0]", "results[1]", "results[2]"]
    assert "NOPE-1" in problem["errors"][0]["message"] and "status" in problem["errors"][1]["message"]
    assert row_counts(tenant) == before
    assert events_of(tenant, "test_run.completed") == []
    assert tenant.api.get("/api/v1/runs").json()["pagination"]["total"] == 0


def test_a_nothing_stored_problem_lists_the_first_hundred_items(tenant: Tenant) -> None:
    project = tenant.create_project()
    items = [{"test_case_code": f"NOPE-{i}", "status": "PASSED"} for i in range(250)]
    problem = assert_problem(ingest(tenant, {"project_id": project["id"], "results": items}), 400)
    assert "all 250 items" in problem["detail"] and "first 100" in problem["detail"]
    assert len(problem["errors"]) == 100 and problem["errors"][-1]["field"] == "results[99]"


def test_duplicate_cases_in_one_report_upsert(tenant: Tenant) -> None:
    project = tenant.create_project()
    case = new_case(tenant)
    response = ingest(tenant, {"project_id": project["id"], "results": [
        {"test_case_code": case["code"], "status": "FAILED"}, {"test_case_id": case["id"], "status": "PASSED"}]})
    assert response.status_code == 201 and response.json()["accepted"] == 2
    rows = results_of(tenant, response.json()["run_id"])
    assert [r["status"] for r in rows] == ["PASSED"]
    assert response.json()["result_ids"] == [rows[0]["id"], rows[0]["id"]]  # both items landed in one result
    run = tenant.api.get(f"/api/v1/runs/{response.json()['run_id']}").json()["data"]
    assert run["counts"]["total"] == 1 and run["counts"]["passed"] == 1


def test_gzip_ingest_and_broken_gzip(tenant: Tenant) -> None:
    project = tenant.create_project()
    body = {"project_id": project["id"], "results": [{"title": f"t{i}", "status": "PASSED"} for i in range(500)]}
    response = ingest(tenant, body, gz=True)
    assert response.status_code == 201 and response.json()["accepted"] == 500
    before = row_counts(tenant)
    packed = gzip.compress(json.dumps(body).encode())
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    for broken in (packed[: len(packed) // 2], packed[:-4], b"\x1f\x8b\x08\x00garbage", b"not gzip at all"):
        assert_problem(tenant.api.post("/api/v1/ingest", content=broken, headers=headers), 400)
    assert_problem(tenant.api.post("/api/v1/ingest", content=packed,
                                   headers={**headers, "Content-Encoding": "deflate"}), 415)
    assert row_counts(tenant) == before


def test_idempotency_key_replays_the_first_answer(tenant: Tenant) -> None:
    project = tenant.create_project()
    body = {"project_id": project["id"], "results": [{"title": "t", "status": "PASSED"}, {"title": "x",
                                                                                         "status": "nope"}]}
    first = ingest(tenant, body, {"Idempotency-Key": "build-77"})
    assert first.status_code == 207
    again = ingest(tenant, body, {"Idempotency-Key": "build-77"}, gz=True)  # same bytes once inflated
    assert again.status_code == 207 and again.content == first.content
    assert row_counts(tenant)[0] == 1 and len(events_of(tenant, "test_run.completed")) == 1
    changed = {**body, "run_name": "other"}
    problem = assert_problem(ingest(tenant, changed, {"Idempotency-Key": "build-77"}), 409)
    assert "Idempotency-Key" in problem["detail"]
    second = ingest(tenant, body, {"Idempotency-Key": "build-78"})
    assert second.status_code == 207 and second.json()["run_id"] != first.json()["run_id"]
    assert ingest(tenant, body).json()["run_id"] not in (first.json()["run_id"], second.json()["run_id"])
    assert row_counts(tenant)[0] == 3


def test_idempotency_keys_are_per_tenant(tenant: Tenant, other_tenant: Tenant) -> None:
    for who in (tenant, other_tenant):
        project = who.create_project()
        body = {"project_id": project["id"], "results": [{"title": "t", "status": "PASSED"}]}
        assert ingest(who, body, {"Idempotency-Key": "same"}).status_code == 201


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"results": [{"title": "t", "status": "PASSED"}]}, 400),
        ({"project_id": "P"}, 400),
        ({"project_id": "P", "results": []}, 400),
        ({"project_id": "P", "results": {}}, 400),
        ({"project_id": "P", "results": "x"}, 400),
        ({"project_id": "P", "results": [{"title": "t", "status": "PASSED"}], "extra": 1}, 400),
        ({"project_id": "P", "results": [{"title": "t", "status": "PASSED"}], "run_name": 5}, 400),
        ({"project_id": "P", "results": [{"title": "t", "status": "PASSED"}], "framework": ["x"]}, 400),
        ({"project_id": 5, "results": [{"title": "t", "status": "PASSED"}]}, 400),
        ({"project_id": "cunknown", "results": [{"title": "t", "status": "PASSED"}]}, 404),
        ({"project_id": "FOREIGN", "results": [{"title": "t", "status": "PASSED"}]}, 404),
        ([], 400),
        (None, 400),
    ],
)
def test_whole_body_problems_write_nothing(tenant: Tenant, other_tenant: Tenant, body: Any, status: int) -> None:
    project = tenant.create_project()
    foreign = other_tenant.create_project()
    if isinstance(body, dict) and body.get("project_id") in ("P", "FOREIGN"):
        body = {**body, "project_id": {"P": project["id"], "FOREIGN": foreign["id"]}[body["project_id"]]}
    assert_problem(ingest(tenant, body, {"Idempotency-Key": "k"}), status)
    assert row_counts(tenant) == (0, 0, 0)
    assert events_of(tenant, "test_run.completed") == []


@pytest.mark.parametrize("content", [b"{", b"", b"not json", b'{"project_id": "x", "results": [1,]}'])
def test_malformed_json_is_400(tenant: Tenant, content: bytes) -> None:
    response = tenant.api.post("/api/v1/ingest", content=content, headers={"Content-Type": "application/json"})
    assert_problem(response, 400)


def test_bad_idempotency_key_is_400_and_read_scope_is_403(tenant: Tenant) -> None:
    project = tenant.create_project()
    body = {"project_id": project["id"], "results": [{"title": "t", "status": "PASSED"}]}
    assert_problem(ingest(tenant, body, {"Idempotency-Key": "x" * 300}), 400)
    response = tenant.client("read").post("/api/v1/ingest", json=body)
    assert_problem(response, 403)
    assert row_counts(tenant) == (0, 0, 0)


def test_a_large_report_in_one_request(tenant: Tenant) -> None:
    """Thousands of linked and unlinked rows in one go (the speed itself is measured in bench/)."""
    project = tenant.create_project()
    cases = [new_case(tenant, code=f"BULK-{i}") for i in range(20)]
    items = [{"test_case_code": c["code"], "status": "PASSED"} for c in cases]
    items += [{"title": f"unlinked {i}", "status": "FAILED" if i % 100 == 0 else "PASSED"} for i in range(5000)]
    response = ingest(tenant, {"project_id": project["id"], "results": items}, gz=True)
    assert response.status_code == 201 and response.json()["accepted"] == 5020
    assert row_counts(tenant) == (1, 20, 5000)
    assert len(events_of(tenant, "test_run_result.failed")) == 50


def test_a_body_above_the_default_10_mb_limit_is_accepted_on_ingest(tenant: Tenant) -> None:
    """Ingest raises the app-wide 10 MB body limit: a big report must not be a 413."""
    project = tenant.create_project()
    items = [{"title": f"t{i}", "status": "FAILED", "error_stack": "x" * 190_000} for i in range(60)]
    response = ingest(tenant, {"project_id": project["id"], "results": items})
    assert response.status_code == 201, response.text[:300]
    assert response.json()["accepted"] == 60


def test_gunzip_caps_the_inflated_size_and_accepts_several_members() -> None:
    """The 413 for a gzip bomb, checked in-process (a 200 MB bomb over HTTP would only cost time)."""
    from tms.errors import InvalidInput, TooLarge
    from tms.http.bodies import gunzip

    bomb = gzip.compress(b"0" * 10_000)
    with pytest.raises(TooLarge):
        gunzip(bomb, limit=9_999)
    assert gunzip(bomb, limit=10_000) == b"0" * 10_000
    assert gunzip(gzip.compress(b"ab") + gzip.compress(b"cd"), limit=100) == b"abcd"
    with pytest.raises(InvalidInput, match="truncated"):
        gunzip(bomb[:-8], limit=100_000)


def test_gunzip_bounds_members_and_reads_any_slicing() -> None:
    from tms.errors import InvalidInput
    from tms.http.bodies import MAX_GZIP_MEMBERS, gunzip

    empty = gzip.compress(b"", mtime=0)
    assert gunzip(gzip.compress(b"a") + empty * (MAX_GZIP_MEMBERS - 1), limit=10) == b"a"
    with pytest.raises(InvalidInput, match="members"):
        gunzip(gzip.compress(b"a") + empty * MAX_GZIP_MEMBERS, limit=10)
    # a member far larger than one input slice, members of every size, and zero padding at the end
    big = os.urandom(3 * 1024 * 1024)
    parts = [big[:1], big[:1023], big[:1024], big[:1025], big, b"end"]
    packed = b"".join(gzip.compress(part, mtime=0) for part in parts) + b"\0" * 600
    assert gunzip(packed, limit=10 * 1024 * 1024) == b"".join(parts)
    with pytest.raises(InvalidInput):
        gunzip(gzip.compress(b"ab") + b"\0\0junk", limit=100)


def test_many_gzip_members_are_a_400_not_a_stall(tenant: Tenant) -> None:
    """100,000 empty members after a valid one (2 MB): inflating them took ~12 s on the event loop."""
    project = tenant.create_project()
    first = gzip.compress(json.dumps({"project_id": project["id"],
                                      "results": [{"title": "t", "status": "PASSED"}]}).encode())
    body = first + gzip.compress(b"", mtime=0) * 100_000
    response = tenant.api.post("/api/v1/ingest", content=body,
                               headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})
    problem = assert_problem(response, 400)
    assert "members" in problem["detail"] and problem["errors"][0]["field"] == "body"
    assert tenant.api.get("/api/v1/runs", params={"project_id": project["id"]}).json()["data"] == []


def test_gzip_bodies_wait_for_an_inflation_slot() -> None:
    """At most ``inflation_slots`` gzip bodies are inflated and held at once; the next one waits."""
    from types import SimpleNamespace

    from tms.http.bodies import request_body

    async def scenario() -> list[str]:
        slots = asyncio.Semaphore(2)
        app = SimpleNamespace(state=SimpleNamespace(inflation_slots=slots))
        packed = gzip.compress(b"{}")
        order: list[str] = []
        release = asyncio.Event()

        async def hold(name: str) -> None:
            async def body() -> bytes:
                return packed
            request = SimpleNamespace(body=body, headers={"content-encoding": "gzip"}, app=app)
            async with request_body(request) as raw:  # type: ignore[arg-type]
                assert raw == b"{}"
                order.append(f"{name} in")
                await release.wait()
            order.append(f"{name} out")

        tasks = [asyncio.create_task(hold(name)) for name in ("a", "b", "c")]
        for _ in range(20):  # let every task run as far as it can
            await asyncio.sleep(0)
        assert order == ["a in", "b in"]  # c waits for a slot
        release.set()
        await asyncio.gather(*tasks)
        return order

    order = asyncio.run(scenario())
    assert order.index("c in") > order.index("a out")


def test_concurrent_retries_with_one_key_create_one_run(tenant: Tenant) -> None:
    """Two copies of a request racing (a CI retry after a timeout) end as one run and one answer."""
    from concurrent.futures import ThreadPoolExecutor

    project = tenant.create_project()
    body = {"project_id": project["id"], "results": [{"title": f"t{i}", "status": "PASSED"} for i in range(3000)]}
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: ingest(tenant, body, {"Idempotency-Key": "race"}), range(4)))
    assert {a.status_code for a in answers} == {201}
    assert len({a.json()["run_id"] for a in answers}) == 1
    assert row_counts(tenant) == (1, 0, 3000)
