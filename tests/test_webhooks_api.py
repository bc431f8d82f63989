"""Webhooks over the API, in-process (tests/inprocess.py): the /api/webhooks API, signed deliveries to a
real receiver, retries, fan-out and the events of runs and results, isolation of tenants. Restarts, kill -9
and a receiver that hangs for the whole test stay on real servers (tests/test_webhooks.py)."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from standardwebhooks import Webhook

from tests.conftest import ServerProcess, Tenant, assert_problem, make_tenant_on
from tests.inprocess import InProcessServer
from tests.test_webhooks import FAST_RETRIES, STANDARD_SECRET, deliveries, emit, finished, subscribe, wait_delivery
from tests.webhook_receiver import Receiver

IN_PROCESS = True


@pytest.fixture(scope="module")
def wh_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessServer]:
    server = InProcessServer(tmp_path_factory.mktemp("webhooks-data"), FAST_RETRIES).start()
    yield server
    server.stop()


@pytest.fixture
def wh_tenant(wh_server: InProcessServer) -> Tenant:
    return make_tenant_on(wh_server)




# --- management API ------------------------------------------------------------------------------


def test_create_list_update_delete_and_secret_is_write_only(wh_tenant: Tenant, receiver: Receiver) -> None:
    web = wh_tenant.web()
    created = subscribe(web, receiver.url, ["test_run.completed", "test_run_result.failed"], secret="s3cret")
    assert set(created) == {"id", "url", "events", "active", "has_secret", "format", "filters", "created_at",
                            "updated_at"}
    assert created["url"] == receiver.url
    assert created["events"] == ["test_run.completed", "test_run_result.failed"]
    assert created["active"] is True and created["has_secret"] is True
    assert "s3cret" not in web.get("/api/webhooks").text
    assert web.get("/api/webhooks").json() == {"data": [created]}

    patched = web.patch(f"/api/webhooks/{created['id']}", json={"events": ["bug.resolved"], "active": False})
    assert patched.status_code == 200, patched.text
    body = patched.json()["data"]
    assert body["events"] == ["bug.resolved"] and body["active"] is False and body["has_secret"] is True
    assert body["url"] == receiver.url

    cleared = web.patch(f"/api/webhooks/{created['id']}", json={"secret": None}).json()["data"]
    assert cleared["has_secret"] is False

    assert web.delete(f"/api/webhooks/{created['id']}").status_code == 204
    assert web.get("/api/webhooks").json() == {"data": []}
    assert_problem(web.delete(f"/api/webhooks/{created['id']}"), 404)
    assert_problem(web.get(f"/api/webhooks/{created['id']}/deliveries"), 404)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "ftp://example.com/hook", "events": ["test_run.completed"]}, "url"),
        ({"url": "example.com/hook", "events": ["test_run.completed"]}, "url"),
        ({"url": "javascript:alert(1)", "events": ["test_run.completed"]}, "url"),
        ({"url": "http://", "events": ["test_run.completed"]}, "url"),
        ({"events": ["test_run.completed"]}, "url"),
        ({"url": "https://example.com/hook", "events": []}, "events"),
        ({"url": "https://example.com/hook"}, "events"),
        ({"url": "https://example.com/hook", "events": ["test_run.started"]}, "events"),
        ({"url": "https://example.com/hook", "events": ["ping"]}, "events"),
        ({"url": "https://example.com/hook", "events": "test_run.completed"}, "events"),
        ({"url": "https://example.com/hook", "events": ["test_run.completed"], "secret": ""}, "secret"),
        ({"url": "https://example.com/hook", "events": ["test_run.completed"], "secret": "whsec_!!"}, "secret"),
        ({"url": "https://example.com/hook", "events": ["test_run.completed"], "id": "x"}, "id"),
        ({"url": "https://example.com/hook", "events": ["test_run.completed"], "tenant_id": "x"}, "tenant_id"),
    ],
)
def test_invalid_subscriptions_are_400(tenant: Tenant, body: dict[str, Any], field: str) -> None:
    web = tenant.web()
    problem = assert_problem(web.post("/api/webhooks", json=body), 400)
    assert field in problem["detail"] or any(field in e["field"] for e in problem.get("errors", []))
    assert web.get("/api/webhooks").json() == {"data": []}


@pytest.mark.parametrize(
    "body",
    [{"url": "gopher://x"}, {"events": []}, {"events": ["nope"]}, {"secret": ""}, {"active": "yes"}, {"x": 1}],
)
def test_invalid_updates_are_400(tenant: Tenant, body: dict[str, Any]) -> None:
    web = tenant.web()
    created = subscribe(web, "https://example.com/hook")
    assert_problem(web.patch(f"/api/webhooks/{created['id']}", json=body), 400)
    assert web.get("/api/webhooks").json() == {"data": [created]}


def test_bearer_token_gets_401_and_missing_csrf_gets_403(tenant: Tenant) -> None:
    assert_problem(tenant.api.get("/api/webhooks"), 401)
    body = {"url": "https://example.com/hook", "events": ["test_run.completed"]}
    assert_problem(tenant.api.post("/api/webhooks", json=body), 401)
    assert_problem(tenant.server.http_client().get("/api/webhooks"), 401)
    web = tenant.web()
    del web.headers["x-csrftoken"]
    assert_problem(web.post("/api/webhooks", json=body), 403)
    web.headers["x-csrftoken"] = "forged"
    assert_problem(web.post("/api/webhooks", json=body), 403)
    assert web.get("/api/webhooks").json() == {"data": []}


def test_other_tenants_subscriptions_and_deliveries_are_404(
    wh_server: ServerProcess, receiver: Receiver
) -> None:
    owner, stranger = make_tenant_on(wh_server), make_tenant_on(wh_server)
    web = owner.web()
    sub = subscribe(web, receiver.url)
    delivery = web.post(f"/api/webhooks/{sub['id']}/ping").json()["data"]
    wait_delivery(web, sub["id"], finished)

    other = stranger.web()
    assert other.get("/api/webhooks").json() == {"data": []}
    base = f"/api/webhooks/{sub['id']}"
    assert_problem(other.get(f"{base}/deliveries"), 404)
    assert_problem(other.patch(base, json={"active": False}), 404)
    assert_problem(other.delete(base), 404)
    assert_problem(other.post(f"{base}/ping"), 404)
    assert_problem(other.post(f"{base}/deliveries/{delivery['id']}/redeliver"), 404)
    # a delivery id only under its own subscription
    own = subscribe(other, receiver.url)
    assert_problem(other.post(f"/api/webhooks/{own['id']}/deliveries/{delivery['id']}/redeliver"), 404)
    assert deliveries(other, own["id"]) == []
    assert web.get(base + "/deliveries").json()["data"][0]["id"] == delivery["id"]
    assert receiver.wait_for(1) and len(receiver.requests) == 1


# --- deliveries ----------------------------------------------------------------------------------


def test_ping_is_delivered_signed_and_verifiable(wh_tenant: Tenant, receiver: Receiver) -> None:
    web = wh_tenant.web()
    sub = subscribe(web, receiver.url, secret=STANDARD_SECRET)
    response = web.post(f"/api/webhooks/{sub['id']}/ping")
    assert response.status_code == 202, response.text
    queued = response.json()["data"]
    assert queued["event"] == "ping" and queued["status"] == "pending" and queued["attempt_log"] == []

    (request,) = receiver.wait_for(1)
    envelope = json.loads(request.body)
    assert envelope["event"] == "ping" and envelope["tenant_id"] == wh_tenant.id
    assert envelope["data"]["subscription_id"] == sub["id"] and envelope["timestamp"].endswith("Z")
    assert request.header("content-type") == "application/json"
    assert request.header("x-service-event") == "ping"
    assert request.header("x-service-delivery") == queued["id"] == request.header("webhook-id")
    expected = "sha256=" + hmac.new(STANDARD_SECRET.encode(), request.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(request.header("x-service-signature") or "", expected)
    # the Standard Webhooks library, as a receiver would use it, accepts the delivery as is
    assert Webhook(STANDARD_SECRET).verify(request.body, request.headers) == envelope
    with pytest.raises(Exception, match="signature"):
        Webhook(STANDARD_SECRET).verify(request.body + b" ", request.headers)

    done = wait_delivery(web, sub["id"], finished)
    assert done["status"] == "delivered" and done["attempts"] == 1 and done["last_status_code"] == 200
    assert done["delivered_at"] and done["next_attempt_at"] is None and done["last_error"] is None
    (attempt,) = done["attempt_log"]
    assert attempt["attempt"] == 1 and attempt["status_code"] == 200 and attempt["error"] is None
    assert attempt["duration_ms"] >= 0 and attempt["started_at"].endswith("Z")


def test_raw_secret_signs_with_its_bytes_and_no_secret_means_no_signature(
    wh_tenant: Tenant, receivers: Callable[..., Receiver]
) -> None:
    web = wh_tenant.web()
    signed, unsigned = receivers(), receivers()
    sub = subscribe(web, signed.url, secret="plain text secret")
    bare = subscribe(web, unsigned.url)
    web.post(f"/api/webhooks/{sub['id']}/ping")
    web.post(f"/api/webhooks/{bare['id']}/ping")
    (request,) = signed.wait_for(1)
    expected = "sha256=" + hmac.new(b"plain text secret", request.body, hashlib.sha256).hexdigest()
    assert request.header("x-service-signature") == expected
    # documented: a secret without the whsec_ prefix is the raw key, which the library takes as bytes
    assert Webhook(b"plain text secret").verify(request.body, request.headers)["event"] == "ping"
    (plain,) = unsigned.wait_for(1)
    assert plain.header("x-service-signature") is None and plain.header("webhook-signature") is None
    assert plain.header("webhook-id") == plain.header("x-service-delivery")


def test_event_is_fanned_out_to_matching_active_subscriptions_only(
    wh_server: ServerProcess, wh_tenant: Tenant, receivers: Callable[..., Receiver]
) -> None:
    web = wh_tenant.web()
    first, second, other_event, inactive = receivers(), receivers(), receivers(), receivers()
    a = subscribe(web, first.url, ["test_run.completed"], secret="k")
    b = subscribe(web, second.url, ["test_run_result.failed", "test_run.completed"])
    subscribe(web, other_event.url, ["bug.resolved"])
    subscribe(web, inactive.url, ["test_run.completed"], active=False)
    data = {"run_id": "r1", "run_name": "Nightly", "project_id": "p1", "environment": "ci",
            "total": 1, "passed": 1, "failed": 0, "broken": 0, "skipped": 0}
    emit(wh_server, wh_tenant.id, "test_run.completed", data)

    (one,) = first.wait_for(1)
    (two,) = second.wait_for(1)
    assert one.body == two.body  # the exact outbox bytes, the same for every subscriber
    assert json.loads(one.body)["data"] == data
    assert one.header("x-service-delivery") != two.header("x-service-delivery")
    assert one.header("x-service-signature") and two.header("x-service-signature") is None
    wait_delivery(web, a["id"], finished)
    wait_delivery(web, b["id"], finished)
    assert other_event.requests == [] and inactive.requests == []


def retry_gaps(requests: list[Any]) -> list[float]:
    return [later.at - earlier.at for earlier, later in itertools.pairwise(requests)]


@pytest.mark.parametrize(
    ("action", "code", "error"),
    [(500, 500, "HTTP 500"), ("hang", None, "timed out"), ("redirect", 302, "redirect")],
)
def test_failures_are_retried_with_growing_gaps_then_failed(
    wh_tenant: Tenant, receivers: Callable[..., Receiver], action: Any, code: int | None, error: str
) -> None:
    receiver = receivers(default=action)
    web = wh_tenant.web()
    sub = subscribe(web, receiver.url)
    queued = web.post(f"/api/webhooks/{sub['id']}/ping").json()["data"]

    done = wait_delivery(web, sub["id"], finished)
    assert done["id"] == queued["id"] and done["status"] == "failed"
    assert done["attempts"] == 4 and done["next_attempt_at"] is None and done["delivered_at"] is None
    assert done["last_status_code"] == code and error in done["last_error"]
    assert [a["attempt"] for a in done["attempt_log"]] == [1, 2, 3, 4]
    assert all(a["status_code"] == code and error in a["error"] for a in done["attempt_log"])

    requests = receiver.wait_for(4)
    assert len(requests) == 4  # one try plus three retries, then nothing more
    assert {r.header("x-service-delivery") for r in requests} == {queued["id"]}
    gaps = retry_gaps(requests)
    assert gaps[0] < gaps[1] < gaps[2]
    assert [r.body for r in requests] == [requests[0].body] * 4


def test_success_after_failures_and_redeliver_reuses_the_delivery(
    wh_tenant: Tenant, receivers: Callable[..., Receiver]
) -> None:
    receiver = receivers(script=[500, 503])
    web = wh_tenant.web()
    sub = subscribe(web, receiver.url)
    queued = web.post(f"/api/webhooks/{sub['id']}/ping").json()["data"]
    done = wait_delivery(web, sub["id"], finished)
    assert done["status"] == "delivered" and done["attempts"] == 3 and done["last_status_code"] == 200
    assert [a["status_code"] for a in done["attempt_log"]] == [500, 503, 200]

    response = web.post(f"/api/webhooks/{sub['id']}/deliveries/{queued['id']}/redeliver")
    assert response.status_code == 202, response.text
    assert response.json()["data"]["status"] == "pending"
    again = wait_delivery(web, sub["id"], lambda d: finished(d) and d["attempts"] == 4)
    assert again["id"] == queued["id"] and again["status"] == "delivered"
    requests = receiver.wait_for(4)
    assert {r.header("x-service-delivery") for r in requests} == {queued["id"]}
    assert_problem(web.post(f"/api/webhooks/{sub['id']}/deliveries/cnope/redeliver"), 404)


def test_inactive_subscription_cannot_be_pinged(wh_tenant: Tenant) -> None:
    web = wh_tenant.web()
    sub = subscribe(web, "https://example.com/hook", active=False)
    assert_problem(web.post(f"/api/webhooks/{sub['id']}/ping"), 409)


# --- the events of runs and results, delivered ---------------------------------------------------


def by_event(requests: list[Any]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for request in requests:
        envelope = json.loads(request.body)
        assert set(envelope) == {"event", "timestamp", "tenant_id", "data"}
        assert request.header("x-service-event") == envelope["event"]
        grouped.setdefault(envelope["event"], []).append(envelope)
    return grouped


def test_ingest_delivers_completed_with_counts_and_one_failed_per_failed_result(
    wh_tenant: Tenant, receiver: Receiver
) -> None:
    from tests.test_cases import new_case

    web = wh_tenant.web()
    subscribe(web, receiver.url, ["test_run.completed", "test_run_result.failed"], secret=STANDARD_SECRET)
    project = wh_tenant.create_project("Shop")
    login, checkout = new_case(wh_tenant), new_case(wh_tenant, title="Checkout")
    response = wh_tenant.api.post("/api/v1/ingest", json={
        "project_id": project["id"],
        "run_name": "CI #42",
        "environment": "staging",
        "results": [
            {"test_case_code": login["code"], "status": "FAILED", "error_message": "500 on submit",
             "bug_ticket_key": "BUG-1"},
            {"test_case_id": checkout["id"], "status": "PASSED"},
            {"title": "unlinked failing", "status": "FAILED", "error_message": "boom"},
            {"title": "unlinked broken", "status": "BROKEN"},
            {"title": "unlinked skipped", "status": "SKIPPED"},
            {"title": "unlinked passing", "status": "PASSED"},
            {"title": "rejected", "status": "passed"},
        ],
    })
    assert response.status_code == 207, response.text
    run_id = response.json()["run_id"]

    requests = receiver.wait_for(3)
    for request in requests:
        Webhook(STANDARD_SECRET).verify(request.body, request.headers)
    events = by_event(requests)
    (completed,) = events["test_run.completed"]
    assert completed["tenant_id"] == wh_tenant.id and completed["timestamp"].endswith("Z")
    assert completed["data"] == {
        "run_id": run_id, "run_name": "CI #42", "project_id": project["id"], "environment": "staging",
        "total": 6, "passed": 2, "failed": 2, "broken": 1, "skipped": 1,
    }
    failed = sorted(events["test_run_result.failed"], key=lambda e: e["data"]["title"])
    assert len(failed) == 2
    linked, unlinked = failed[0]["data"], failed[1]["data"]
    assert set(linked) == {"run_id", "run_name", "project_id", "result_id", "test_case_id", "test_case_code",
                           "title", "error_message", "bug_ticket_key", "custom_fields", "file", "line"}
    assert (linked["test_case_code"], linked["test_case_id"], linked["error_message"], linked["bug_ticket_key"]) == (
        login["code"], login["id"], "500 on submit", "BUG-1")
    assert (unlinked["test_case_code"], unlinked["title"], unlinked["error_message"]) == (
        None, "unlinked failing", "boom")
    assert {e["data"]["run_id"] for e in failed} == {run_id}
    assert linked["result_id"] != unlinked["result_id"]


def test_results_and_patch_to_completed_are_delivered_once(wh_tenant: Tenant, receiver: Receiver) -> None:
    from tests.test_cases import new_case

    web = wh_tenant.web()
    sub = subscribe(web, receiver.url, ["test_run.completed", "test_run_result.failed"])
    project = wh_tenant.create_project()
    first, second = new_case(wh_tenant), new_case(wh_tenant, title="Second")
    run = wh_tenant.api.post("/api/v1/runs", json={"name": "Manual pass", "project_id": project["id"]}).json()["data"]
    results = f"/api/v1/runs/{run['id']}/results"
    posted = wh_tenant.api.post(results, json={"results": [
        {"test_case_code": first["code"], "status": "FAILED"}, {"test_case_code": second["code"], "status": "FAILED"},
    ]})
    assert posted.status_code == 201, posted.text
    # the same result FAILED again is no new failure; PASSED -> FAILED is
    wh_tenant.api.post(results, json={"results": [{"test_case_code": first["code"], "status": "FAILED"}]})
    wh_tenant.api.post(results, json={"results": [{"test_case_code": second["code"], "status": "PASSED"}]})
    wh_tenant.api.post(results, json={"results": [{"test_case_code": second["code"], "status": "FAILED"}]})
    for _ in range(2):
        patched = wh_tenant.api.patch(f"/api/v1/runs/{run['id']}", json={"status": "COMPLETED"})
        assert patched.status_code == 200, patched.text

    events = by_event(receiver.wait_for(4))
    # deliveries run concurrently, so their arrival order is not the events' order
    failed_codes = sorted(e["data"]["test_case_code"] for e in events["test_run_result.failed"])
    assert failed_codes == sorted([first["code"], second["code"], second["code"]])
    (completed,) = events["test_run.completed"]
    assert completed["data"]["run_id"] == run["id"] and completed["data"]["run_name"] == "Manual pass"
    assert (completed["data"]["total"], completed["data"]["failed"], completed["data"]["passed"]) == (2, 2, 0)
    # the second PATCH fired nothing: once a later ping has arrived, the log holds one completed delivery
    ping = web.post(f"/api/webhooks/{sub['id']}/ping").json()["data"]
    wait_delivery(web, sub["id"], lambda d: d["id"] == ping["id"] and d["status"] == "delivered")
    logged = [d["event"] for d in deliveries(web, sub["id"])]
    assert logged.count("test_run.completed") == 1 and logged.count("test_run_result.failed") == 3
