"""Webhooks on real servers: a receiver that hangs for the whole test, kill -9 and a graceful shutdown
(deliveries survive the restart). The API, deliveries and retries run in-process (tests/test_webhooks_api.py),
which imports this file's helpers."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

from tests.conftest import ServerProcess, make_tenant_on, run_admin
from tests.webhook_receiver import Receiver

FAST_RETRIES = {
    "TMS_WEBHOOKS_BACKOFF_SECONDS": "0.2",
    "TMS_WEBHOOKS_BACKOFF_FACTOR": "2",
    "TMS_WEBHOOKS_TIMEOUT_SECONDS": "0.5",
    "TMS_WEBHOOKS_ALLOW_PRIVATE_TARGETS": "true",
}
STANDARD_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"



def subscribe(web: httpx.Client, url: str, events: list[str] | None = None, **fields: Any) -> dict[str, Any]:
    response = web.post("/api/webhooks", json={"url": url, "events": events or ["test_run.completed"], **fields})
    assert response.status_code == 201, response.text
    return response.json()["data"]  # type: ignore[no-any-return]


def deliveries(web: httpx.Client, subscription_id: str) -> list[dict[str, Any]]:
    response = web.get(f"/api/webhooks/{subscription_id}/deliveries")
    assert response.status_code == 200, response.text
    return response.json()["data"]  # type: ignore[no-any-return]


def wait_delivery(
    web: httpx.Client, subscription_id: str, done: Callable[[dict[str, Any]], bool], timeout: float = 30
) -> dict[str, Any]:
    """Polls the delivery log until one delivery satisfies ``done`` (a condition, not a timing)."""
    deadline = time.monotonic() + timeout
    seen: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        seen = deliveries(web, subscription_id)
        for item in seen:
            if done(item):
                return item
        time.sleep(0.05)
    raise AssertionError(f"no delivery reached the expected state: {seen}")


def finished(item: dict[str, Any]) -> bool:
    return item["status"] in ("delivered", "failed")


def emit(server: ServerProcess, tenant_id: str, event: str, data: dict[str, Any], count: int = 1) -> None:
    """Writes events into the outbox from another process, as a service would in its transaction."""
    from tms.notifications import events

    async def action(db: Any) -> None:
        async with db.transaction() as tx:
            await events.emit_many(tx, db, tenant_id, event, [data] * count)

    run_admin(server.db_path, action)


def test_hanging_receiver_does_not_delay_a_healthy_one(
    start_server: Callable[..., ServerProcess], receivers: Callable[..., Receiver]
) -> None:
    # the timeout is far longer than the test: the hanging receiver holds its slots all along
    server = start_server(env={"TMS_WEBHOOKS_TIMEOUT_SECONDS": "60"})
    tenant = make_tenant_on(server)
    web = tenant.web()
    stuck, healthy = receivers(default="hang"), receivers()
    slow_sub = subscribe(web, stuck.url)
    good_sub = subscribe(web, healthy.url)
    for _ in range(20):
        assert web.post(f"/api/webhooks/{slow_sub['id']}/ping").status_code == 202
    for _ in range(20):
        assert web.post(f"/api/webhooks/{good_sub['id']}/ping").status_code == 202
    assert len(healthy.wait_for(20)) == 20
    # all healthy deliveries arrived while the stuck receiver still holds its first requests
    assert 1 <= len(stuck.requests) < 20
    assert all(d["status"] == "pending" and d["attempts"] == 0 for d in deliveries(web, slow_sub["id"]))
    wait_delivery(web, good_sub["id"], lambda d: d["status"] == "delivered")


def test_pending_retry_survives_kill_9_and_restart(
    start_server: Callable[..., ServerProcess], receivers: Callable[..., Receiver]
) -> None:
    env = {"TMS_WEBHOOKS_BACKOFF_SECONDS": "1", "TMS_WEBHOOKS_TIMEOUT_SECONDS": "2"}
    server = start_server(env=env)
    tenant = make_tenant_on(server)
    receiver = receivers(script=[500])
    web = tenant.web()
    sub = subscribe(web, receiver.url)
    queued = web.post(f"/api/webhooks/{sub['id']}/ping").json()["data"]
    first = wait_delivery(web, sub["id"], lambda d: d["attempts"] == 1)
    assert first["status"] == "pending" and first["next_attempt_at"] and first["last_status_code"] == 500

    server.kill()  # kill -9 while the retry waits for its time
    assert len(receiver.requests) == 1
    restarted = start_server(env=env, data_dir=server.data_dir)
    requests = receiver.wait_for(2)
    assert [r.header("x-service-delivery") for r in requests] == [queued["id"]] * 2
    tenant.server = restarted
    done = wait_delivery(tenant.web(), sub["id"], finished)
    assert done["status"] == "delivered" and done["attempts"] == 2
    assert [a["status_code"] for a in done["attempt_log"]] == [500, 200]


def test_shutdown_is_graceful_and_an_interrupted_delivery_is_sent_after_restart(
    start_server: Callable[..., ServerProcess], receivers: Callable[..., Receiver]
) -> None:
    server = start_server(env={"TMS_WEBHOOKS_TIMEOUT_SECONDS": "60"})
    tenant = make_tenant_on(server)
    receiver = receivers(script=["hang"])
    web = tenant.web()
    sub = subscribe(web, receiver.url)
    queued = web.post(f"/api/webhooks/{sub['id']}/ping").json()["data"]
    receiver.wait_for(1)  # in flight, and the receiver will not answer it

    server.stop()  # SIGTERM: the dispatcher gives in-flight attempts a short grace, then stops
    assert server.process is not None and server.process.returncode is not None
    assert not any(word in server.log() for word in ("Traceback", "ERROR"))

    restarted = start_server(env={"TMS_WEBHOOKS_TIMEOUT_SECONDS": "60"}, data_dir=server.data_dir)
    requests = receiver.wait_for(2)
    assert [r.header("x-service-delivery") for r in requests] == [queued["id"]] * 2
    tenant.server = restarted
    done = wait_delivery(tenant.web(), sub["id"], finished)
    assert done["status"] == "delivered" and done["id"] == queued["id"]
