"""Web interface: Settings → Developer → Webhooks (create, edit, pause, delete, ping, log, redeliver)."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.conftest import Tenant
from tests.web_helpers import HTML, every_post_form_has_csrf, field_error, follow
from tests.webhook_receiver import POLL


class Receiver:
    """A local endpoint that answers with ``status`` and records what it got."""

    def __init__(self) -> None:
        self.status = 200
        self.received: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                receiver.received.append({"headers": dict(self.headers), "body": body})
                self.send_response(receiver.status)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, kwargs=POLL, daemon=True).start()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()


def _create(web, url: str, events=("test_run.completed",), secret: str = "") -> str:
    response = web.post("/settings/webhooks", data={"url": url, "events": list(events), "secret": secret,
                                                    "active": "on"})
    assert response.status_code == 303, response.text
    return response.headers["location"].rsplit("/", 1)[1]


def _wait_for(web, path: str, text: str, timeout: float = 15) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page = web.get(path, headers=HTML).text
        if text in page:
            return page
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never appeared on {path}")


def test_create_ping_and_see_delivery(tenant: Tenant, receiver: Receiver) -> None:
    web = tenant.web()
    page = web.get("/settings/webhooks", headers=HTML)
    assert page.status_code == 200 and every_post_form_has_csrf(page.text)
    sub_id = _create(web, receiver.url, secret="s3cret")
    detail = web.get(f"/settings/webhooks/{sub_id}", headers=HTML)
    assert receiver.url in detail.text and "one is set" in detail.text and "s3cret" not in detail.text
    pinged = follow(web, web.post(f"/settings/webhooks/{sub_id}/ping"))
    assert "Test ping queued" in pinged.text
    page = _wait_for(web, f"/settings/webhooks/{sub_id}", "st-delivered")
    assert "ping" in page and "HTTP 200" in page
    assert receiver.received and receiver.received[0]["headers"]["X-Service-Signature"].startswith("sha256=")
    api = web.get("/api/webhooks").json()["data"]
    assert [s["url"] for s in api] == [receiver.url]


def test_failed_delivery_shows_attempts_and_redeliver(tenant: Tenant, receiver: Receiver) -> None:
    receiver.status = 500
    web = tenant.web()
    sub_id = _create(web, receiver.url)
    follow(web, web.post(f"/settings/webhooks/{sub_id}/ping"))
    page = _wait_for(web, f"/settings/webhooks/{sub_id}", "st-failed", timeout=30)
    assert "HTTP 500" in page and page.count("<tr><td>") == 4  # one attempt plus three retries, each logged
    delivery_id = re.search(rf"/settings/webhooks/{sub_id}/deliveries/([^/]+)/redeliver", page).group(1)
    receiver.status = 200
    again = follow(web, web.post(f"/settings/webhooks/{sub_id}/deliveries/{delivery_id}/redeliver"))
    assert "queued again" in again.text
    _wait_for(web, f"/settings/webhooks/{sub_id}", "st-delivered", timeout=15)


def test_validation_keeps_input(tenant: Tenant) -> None:
    web = tenant.web()
    no_events = web.post("/settings/webhooks", data={"url": "https://example.com/hook"})
    assert no_events.status_code == 400 and field_error(no_events.text, "events")
    assert 'value="https://example.com/hook"' in no_events.text
    bad_url = web.post("/settings/webhooks", data={"url": "not a url", "events": "bug.resolved"})
    assert bad_url.status_code == 400 and field_error(bad_url.text, "url")
    assert re.search(r'value="bug.resolved"\s+checked', bad_url.text)
    empty = web.post("/settings/webhooks", data={"url": "", "events": "bug.resolved"})
    assert empty.status_code == 400 and field_error(empty.text, "url")
    assert web.get("/api/webhooks").json()["data"] == []


def test_edit_pause_resume_delete(tenant: Tenant, receiver: Receiver) -> None:
    web = tenant.web()
    sub_id = _create(web, receiver.url, secret="x")
    follow(web, web.post(f"/settings/webhooks/{sub_id}", data={
        "url": receiver.url + "2", "events": ["bug.resolved", "retest.required"], "remove_secret": "on",
        "active": "on"}))
    sub = web.get("/api/webhooks").json()["data"][0]
    assert (sub["url"], sub["events"], sub["has_secret"]) == (receiver.url + "2", ["bug.resolved", "retest.required"],
                                                              False)
    assert "Webhook paused" in follow(web, web.post(f"/settings/webhooks/{sub_id}/pause")).text
    assert web.get("/api/webhooks").json()["data"][0]["active"] is False
    refused = follow(web, web.post(f"/settings/webhooks/{sub_id}/ping"))
    assert "inactive" in refused.text
    follow(web, web.post(f"/settings/webhooks/{sub_id}/resume"))
    assert web.get("/api/webhooks").json()["data"][0]["active"] is True
    bad = web.post(f"/settings/webhooks/{sub_id}", data={"url": receiver.url, "events": []})
    assert bad.status_code == 400 and field_error(bad.text, "events")
    assert "Webhook deleted" in follow(web, web.post(f"/settings/webhooks/{sub_id}/delete")).text
    assert web.get("/api/webhooks").json()["data"] == []


def test_other_tenants_webhook_is_404(tenant: Tenant, other_tenant: Tenant, receiver: Receiver) -> None:
    sub_id = _create(other_tenant.web(), receiver.url)
    web = tenant.web()
    assert web.get(f"/settings/webhooks/{sub_id}", headers=HTML).status_code == 404
    for action in ("ping", "pause", "delete", "deliveries/x/redeliver"):
        assert web.post(f"/settings/webhooks/{sub_id}/{action}").status_code == 404, action
    assert web.post(f"/settings/webhooks/{sub_id}", data={"url": receiver.url, "events": "bug.resolved"}
                    ).status_code == 404
    assert len(other_tenant.web().get("/api/webhooks").json()["data"]) == 1
