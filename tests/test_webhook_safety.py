"""SSRF defences and signing of webhook deliveries: address rules, the pinned resolver, no redirects,
HTTPS-only in production, and the refusal as a user sees it in the delivery log."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook

from tests.conftest import ServerProcess, assert_problem, make_tenant_on, storage_env
from tests.webhook_receiver import Receiver
from tms.config import load_config
from tms.notifications import delivery, safety, signing


@pytest.mark.parametrize(
    ("address", "label"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("fd00::1", "private"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("240.0.0.1", "reserved"),
        ("100.64.0.1", "not a public"),
        ("8.8.8.8", None),
        ("2606:4700:4700::1111", None),
        # IPv6 transition forms carrying a refused IPv4 address are refused for it, like ::ffff:
        ("2002:7f00:1::1", "loopback"),  # 6to4 of 127.0.0.1 (was let through)
        ("2002:a9fe:a9fe::", "link-local"),  # 6to4 of the cloud metadata address
        ("2002:c0a8:101::1", "private"),  # 6to4 of 192.168.1.1
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"),  # Teredo, client 127.0.0.1
        ("64:ff9b::a9fe:a9fe", "link-local"),  # NAT64 of 169.254.169.254
        ("64:ff9b::7f00:1", "loopback"),
        ("64:ff9b:1::a00:1", "NAT64"),  # local-use NAT64: the site's own translator
        ("::7f00:1", "loopback"),  # IPv4-compatible ::127.0.0.1
        ("::a00:1", "private"),
        ("2002:808:808::1", None),  # 6to4 of a public address stays a public address
    ],
)
def test_address_rules(address: str, label: str | None) -> None:
    problem = safety.address_problem(ipaddress.ip_address(address))
    if label is None:
        assert problem is None
    else:
        assert problem is not None and label in problem


@pytest.mark.parametrize(
    ("url", "https_only", "ok"),
    [
        ("https://hooks.example.com/x", True, True),
        ("http://hooks.example.com/x", False, True),
        ("http://hooks.example.com/x", True, False),
        ("ftp://hooks.example.com/x", False, False),
        ("file:///etc/passwd", False, False),
        ("https:///nohost", False, False),
        ("https://hooks.example.com:99999/x", False, False),
        ("hooks.example.com", False, False),
        ("https://hooks example.com/x", False, False),
        ("https://hooks.example.com/a b", False, False),
        ("https://hooks.example.com/\nx", False, False),
        ("http://[::1/x", False, False),
    ],
)
def test_url_rules(url: str, https_only: bool, ok: bool) -> None:
    assert (safety.url_problem(url, https_only=https_only) is None) is ok


def _post(client: httpx.AsyncClient, url: str, **kwargs: Any) -> httpx.Response:
    async def run() -> httpx.Response:
        async with client:
            return await client.post(url, content=b"{}", **kwargs)

    return asyncio.run(run())


def test_connects_to_the_address_it_checked(monkeypatch: pytest.MonkeyPatch, receiver: Receiver) -> None:
    looked_up: list[str] = []

    async def fake_resolve(host: str, port: int) -> list[str]:
        looked_up.append(host)
        return ["127.0.0.1"]

    monkeypatch.setattr(safety, "resolve", fake_resolve)
    response = _post(safety.make_client(allow_private=True), f"http://hooks.example.test:{receiver.port}/hook")
    assert response.status_code == 200
    assert looked_up == ["hooks.example.test"]  # one lookup: the connection goes to that answer
    (request,) = receiver.wait_for(1)
    assert request.header("host") == f"hooks.example.test:{receiver.port}"


def test_one_private_answer_refuses_the_host(monkeypatch: pytest.MonkeyPatch, receiver: Receiver) -> None:
    async def fake_resolve(host: str, port: int) -> list[str]:
        return ["93.184.216.34", "127.0.0.1"]  # a rebinding-style mixed answer

    monkeypatch.setattr(safety, "resolve", fake_resolve)
    with pytest.raises(safety.TargetRefused, match="loopback"):
        _post(safety.make_client(allow_private=False), f"http://rebind.example.test:{receiver.port}/hook")
    assert receiver.requests == []


def test_loopback_is_refused_at_send_time(receiver: Receiver) -> None:
    target = delivery.Target("d1", "ping", f"http://localhost:{receiver.port}/hook", None, b"{}")

    async def run() -> delivery.Outcome:
        async with safety.make_transport(allow_private=False) as transport:
            return await delivery.attempt(transport, target, timeout=5, https_only=False)

    outcome = asyncio.run(run())
    assert not outcome.ok and outcome.status_code is None
    assert outcome.error and "target refused" in outcome.error and "loopback" in outcome.error
    assert receiver.requests == []


def test_redirects_are_not_followed_and_fail() -> None:
    rec = Receiver(default="redirect")
    try:
        target = delivery.Target("d1", "ping", rec.url, None, b"{}")

        async def run() -> delivery.Outcome:
            async with safety.make_transport(allow_private=True) as transport:
                return await delivery.attempt(transport, target, timeout=5, https_only=False)

        outcome = asyncio.run(run())
        assert not outcome.ok and outcome.status_code == 302
        assert outcome.error and "redirect" in outcome.error and "not followed" in outcome.error
        assert len(rec.requests) == 1
    finally:
        rec.stop()


def test_production_sends_only_to_https(receiver: Receiver) -> None:
    target = delivery.Target("d1", "ping", receiver.url, None, b"{}")

    async def run() -> delivery.Outcome:
        async with safety.make_transport(allow_private=True) as transport:
            return await delivery.attempt(transport, target, timeout=5, https_only=True)

    outcome = asyncio.run(run())
    assert not outcome.ok and outcome.error and "https" in outcome.error
    assert receiver.requests == []


def test_production_accepts_only_https_subscriptions(tmp_path: Path) -> None:
    from tms.db import database_for
    from tms.errors import InvalidInput
    from tms.notifications import service
    from tms.notifications.models import SubscriptionCreate, SubscriptionUpdate
    from tms.team import accounts

    config = load_config(
        None, {"TMS_SERVER_BASE_URL": "https://tms.example.com", **storage_env(tmp_path)}
    )
    assert config.production

    async def run() -> None:
        db = database_for(config, readers=1)
        await db.open()
        try:
            tenant_id = await accounts.create_tenant(db, "Prod")
            events = ["test_run.completed"]
            with pytest.raises(InvalidInput, match="https"):
                await service.create_subscription(
                    db, config, tenant_id, SubscriptionCreate(url="http://hooks.example.com/x", events=events)
                )
            sub = await service.create_subscription(
                db, config, tenant_id, SubscriptionCreate(url="https://hooks.example.com/x", events=events)
            )
            with pytest.raises(InvalidInput, match="https"):
                await service.update_subscription(
                    db, config, tenant_id, sub.id, SubscriptionUpdate(url="http://hooks.example.com/x")
                )
        finally:
            await db.close()

    asyncio.run(run())


@pytest.mark.parametrize("secret", ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "a raw secret", "whsec"])
def test_standard_signature_verifies_with_the_library(secret: str) -> None:
    body = json.dumps({"event": "ping", "data": {"x": "ü"}}).encode()
    now = int(time.time())
    headers = delivery.build_headers(delivery.Target("msg_1", "ping", "https://x", secret, body), now)
    assert headers["webhook-signature"] == signing.standard_signature(secret, "msg_1", now, body)
    key: str | bytes = secret if secret.startswith("whsec_") else secret.encode()
    assert Webhook(key).verify(body, headers)["event"] == "ping"


# --- as a user meets it ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def guarded_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server refusing private targets for the module: each test has a tenant of its own on it."""
    server = ServerProcess(
        tmp_path_factory.mktemp("guarded"),
        {
            "TMS_WEBHOOKS_ALLOW_PRIVATE_TARGETS": "false",
            "TMS_WEBHOOKS_BACKOFF_SECONDS": "0.1",
            "TMS_WEBHOOKS_BACKOFF_FACTOR": "1",
        },
    ).start()
    yield server
    server.stop()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://[::1]/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.5/hook",
        "http://0.0.0.0/hook",
    ],
)
def test_literal_private_urls_are_refused_on_save(guarded_server: ServerProcess, url: str) -> None:
    web = make_tenant_on(guarded_server).web()
    problem = assert_problem(web.post("/api/webhooks", json={"url": url, "events": ["test_run.completed"]}), 400)
    assert "allow_private_targets" in problem["detail"]


def test_name_resolving_to_loopback_is_refused_when_sent_and_logged(
    guarded_server: ServerProcess, receiver: Receiver
) -> None:
    web = make_tenant_on(guarded_server).web()
    url = f"http://localhost:{receiver.port}/hook"
    created = web.post("/api/webhooks", json={"url": url, "events": ["test_run.completed"]})
    assert created.status_code == 201, created.text  # a name is resolved at send time, not on save
    sub = created.json()["data"]
    assert web.post(f"/api/webhooks/{sub['id']}/ping").status_code == 202
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        (item,) = web.get(f"/api/webhooks/{sub['id']}/deliveries").json()["data"]
        if item["status"] == "failed":
            break
        time.sleep(0.05)
    assert item["status"] == "failed" and item["attempts"] == 4 and item["last_status_code"] is None
    assert "target refused" in item["last_error"] and "loopback" in item["last_error"]
    assert all("target refused" in a["error"] for a in item["attempt_log"])
    assert receiver.requests == []


def test_request_gauge_counts_http_requests_and_lingers() -> None:
    from tms.notifications.gauge import LINGER_SECONDS, RequestGauge

    gauge = RequestGauge()
    seen: list[int] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(gauge.active)

    wrapped = gauge.middleware(app)

    async def run() -> None:
        assert not gauge.busy()
        await wrapped({"type": "lifespan"}, None, None)
        assert not gauge.busy()  # only HTTP requests count
        await wrapped({"type": "http"}, None, None)
        assert gauge.active == 0 and gauge.busy()  # still busy just after a request
        await asyncio.sleep(LINGER_SECONDS * 1.5)
        assert not gauge.busy()

    asyncio.run(run())
    assert seen == [0, 1]
