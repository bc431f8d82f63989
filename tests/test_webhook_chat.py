"""Chat notifications end to end: subscriptions in the slack / teams / google_chat formats get the chat
service's incoming-webhook body from a real server, signed like any delivery; filters narrow what is sent."""

from __future__ import annotations

import concurrent.futures
import hashlib
import hmac
import json
import re
from collections.abc import Callable
from typing import Any

import httpx

from tests.browser_support import browser, page  # noqa: F401 (fixtures)
from tests.conftest import ServerProcess, Tenant, assert_problem, make_tenant_on
from tests.test_cases import new_case
from tests.web_helpers import HTML, field_error, follow, input_value, text_of
from tests.webhook_receiver import Receiver

# tests/inprocess.py: the tenants live in-process; the browser test takes the session server itself
IN_PROCESS = True



def subscribe(web: httpx.Client, url: str, events: list[str], **fields: Any) -> dict[str, Any]:
    response = web.post("/api/webhooks", json={"url": url, "events": events, **fields})
    assert response.status_code == 201, response.text
    return response.json()["data"]  # type: ignore[no-any-return]


def ingest(tenant: Tenant, project_id: str, name: str, results: list[dict[str, Any]], **fields: Any) -> str:
    response = tenant.api.post("/api/v1/ingest", json={"project_id": project_id, "run_name": name,
                                                       "results": results, **fields})
    assert response.status_code == 201, response.text
    return response.json()["run_id"]  # type: ignore[no-any-return]


def deliveries(web: httpx.Client, subscription_id: str) -> list[dict[str, Any]]:
    response = web.get(f"/api/webhooks/{subscription_id}/deliveries")
    assert response.status_code == 200, response.text
    return response.json()["data"]  # type: ignore[no-any-return]


def failing_run(tenant: Tenant) -> tuple[dict[str, Any], dict[str, Any], str]:
    project = tenant.create_project("Web shop")
    login = new_case(tenant, title="Login <works> & stays")
    checkout = new_case(tenant, title="Checkout")
    run_id = ingest(tenant, project["id"], "Nightly #7", [
        {"test_case_code": login["code"], "status": "FAILED", "error_message": "500 on submit"},
        {"test_case_id": checkout["id"], "status": "PASSED"},
        {"title": "test_export[ü-unicode]", "status": "FAILED"},
        {"title": "flaky setup", "status": "BROKEN"},
        {"title": "skipped one", "status": "SKIPPED"},
    ], environment="staging")
    return project, login, run_id


def test_slack_message_names_run_counts_failed_tests_with_links_and_is_signed(
    tenant: Tenant, receivers: Callable[[], Receiver]
) -> None:
    receiver = receivers()
    web = tenant.web()
    sub = subscribe(web, receiver.url, ["test_run.completed"], format="slack", secret="chat-secret")
    assert sub["format"] == "slack"
    _, login, run_id = failing_run(tenant)

    (request,) = receiver.wait_for(1)
    body = json.loads(request.body)
    assert set(body) == {"text", "blocks"}
    assert "Nightly #7" in body["text"] and "2 failed, 1 blocked of 5 tests" in body["text"]
    # the signature headers work as for any delivery: an HMAC of the exact bytes posted
    expected = hmac.new(b"chat-secret", request.body, hashlib.sha256).hexdigest()
    assert request.header("x-service-signature") == f"sha256={expected}"
    assert request.header("x-service-event") == "test_run.completed"
    text = json.dumps(body["blocks"], ensure_ascii=False)
    base = tenant.server.url
    assert f"<{base}/runs/{run_id}|" in text
    # the failed tests by code and title, the linked one linking to its case page; Slack escapes applied
    assert f"<{base}/cases/{login['id']}|{login['code']}> Login &lt;works&gt; &amp; stays" in text
    assert "test_export[ü-unicode]" in text and "flaky setup" in text
    fields = next(block["fields"] for block in body["blocks"] if "fields" in block)
    assert {"type": "mrkdwn", "text": "*Failed*\n2"} in fields
    assert {"type": "mrkdwn", "text": "*Project*\nWeb shop"} in fields
    assert {"type": "mrkdwn", "text": "*Environment*\nstaging"} in fields


def test_teams_and_google_chat_get_their_own_bodies(tenant: Tenant, receivers: Callable[[], Receiver]) -> None:
    teams_rx, gchat_rx = receivers(), receivers()
    web = tenant.web()
    subscribe(web, teams_rx.url, ["test_run.completed"], format="teams")
    subscribe(web, gchat_rx.url, ["test_run.completed"], format="google_chat")
    _, login, run_id = failing_run(tenant)
    base = tenant.server.url

    teams = json.loads(teams_rx.wait_for(1)[0].body)
    assert teams["type"] == "message"
    (attachment,) = teams["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    card = attachment["content"]
    assert card["type"] == "AdaptiveCard" and card["actions"][0]["url"] == f"{base}/runs/{run_id}"
    facts = next(block["facts"] for block in card["body"] if block["type"] == "FactSet")
    assert {"title": "Failed", "value": "2"} in facts and {"title": "Blocked", "value": "1"} in facts
    texts = [block.get("text", "") for block in card["body"]]
    assert any(f"[{login['code']}]({base}/cases/{login['id']})" in t for t in texts)

    gchat = json.loads(gchat_rx.wait_for(1)[0].body)
    assert set(gchat) == {"text"}
    assert "Nightly #7" in gchat["text"]
    assert f"<{base}/cases/{login['id']}|{login['code']}> Login <works> & stays" in gchat["text"]
    assert f"<{base}/runs/{run_id}|Open run>" in gchat["text"]


def test_filters_choose_which_events_are_sent(tenant: Tenant, receivers: Callable[[], Receiver]) -> None:
    everything, failed_runs, production, failures = receivers(), receivers(), receivers(), receivers()
    web = tenant.web()
    both = ["test_run.completed", "test_run_result.failed"]
    subscribe(web, everything.url, both)
    subscribe(web, failed_runs.url, ["test_run.completed"], filters={"only_failed_runs": True})
    subscribe(web, production.url, both, filters={"environments": ["production"]}, format="slack")
    subscribe(web, failures.url, [*both, "retest.required"], filters={"only_failures": True})
    project = tenant.create_project()
    fail = [{"title": "breaks", "status": "FAILED"}]
    green = [{"title": "works", "status": "PASSED"}]
    run1 = ingest(tenant, project["id"], "staging red", fail, environment="staging")
    run2 = ingest(tenant, project["id"], "production green", green, environment="production")
    run3 = ingest(tenant, project["id"], "production red", fail, environment="production")
    run4 = ingest(tenant, project["id"], "no environment red", fail)

    def seen(rx: Receiver, count: int) -> list[tuple[str, str]]:
        out = []
        for request in rx.wait_for(count):
            body = json.loads(request.body)
            run = body["data"]["run_id"] if "data" in body else next(
                r for r in (run1, run2, run3, run4) if r in json.dumps(body))
            out.append((request.header("x-service-event") or "", run))
        return sorted(out)

    done, fail_event = "test_run.completed", "test_run_result.failed"
    # all four runs fanned out to every subscription once the unfiltered one has everything
    assert seen(everything, 7) == sorted([(done, run1), (done, run2), (done, run3), (done, run4),
                                          (fail_event, run1), (fail_event, run3), (fail_event, run4)])
    assert seen(failed_runs, 3) == sorted([(done, run1), (done, run3), (done, run4)])
    assert seen(production, 3) == sorted([(done, run2), (done, run3), (fail_event, run3)])
    assert seen(failures, 6) == sorted([(done, run1), (done, run3), (done, run4),
                                        (fail_event, run1), (fail_event, run3), (fail_event, run4)])
    # and nothing more was even queued for them
    subs = {s["url"]: s["id"] for s in web.get("/api/webhooks").json()["data"]}
    assert len(deliveries(web, subs[failed_runs.url])) == 3
    assert len(deliveries(web, subs[production.url])) == 3
    assert len(deliveries(web, subs[failures.url])) == 6


def test_format_and_filters_are_validated_shown_and_patched(tenant: Tenant, receivers: Callable[[], Receiver]) -> None:
    web = tenant.web()
    url = receivers().url
    plain = subscribe(web, url, ["test_run.completed"])
    assert plain["format"] == "standard"
    assert plain["filters"] == {"only_failures": False, "only_failed_runs": False, "environments": []}

    bad_format = assert_problem(web.post("/api/webhooks", json={"url": url, "events": ["bug.resolved"],
                                                                "format": "irc"}), 400)
    assert "format" in json.dumps(bad_format)
    bad_filter = assert_problem(web.post("/api/webhooks", json={
        "url": url, "events": ["bug.resolved"], "filters": {"only_failure": True}}), 400)
    assert "only_failure" in json.dumps(bad_filter)
    blank = assert_problem(web.post("/api/webhooks", json={
        "url": url, "events": ["bug.resolved"], "filters": {"environments": [" "]}}), 400)
    assert blank["errors"][0]["field"] == "filters.environments"

    patched = web.patch(f"/api/webhooks/{plain['id']}", json={
        "format": "teams", "filters": {"environments": ["prod", "prod", "qa"], "only_failed_runs": True}})
    assert patched.status_code == 200, patched.text
    data = patched.json()["data"]
    assert data["format"] == "teams"
    assert data["filters"] == {"only_failures": False, "only_failed_runs": True, "environments": ["prod", "qa"]}
    assert web.get("/api/webhooks").json()["data"] == [data]
    # a PATCH naming filters replaces them whole
    reset = web.patch(f"/api/webhooks/{plain['id']}", json={"filters": {}}).json()["data"]
    assert reset["filters"] == {"only_failures": False, "only_failed_runs": False, "environments": []}


def test_ping_of_a_chat_subscription_is_a_chat_message(tenant: Tenant, receivers: Callable[[], Receiver]) -> None:
    receiver = receivers()
    web = tenant.web()
    sub = subscribe(web, receiver.url, ["bug.resolved"], format="google_chat")
    assert web.post(f"/api/webhooks/{sub['id']}/ping").status_code == 202
    body = json.loads(receiver.wait_for(1)[0].body)
    assert set(body) == {"text"} and "reachable" in body["text"]
    assert receiver.requests[0].header("x-service-event") == "ping"


def test_preview_shows_a_sample_then_the_latest_completed_run(tenant: Tenant) -> None:
    web = tenant.web()
    sample = web.get("/api/webhooks/preview", params={"format": "slack"})
    assert sample.status_code == 200, sample.text
    data = sample.json()["data"]
    assert data["sample"] is True and data["format"] == "slack" and "blocks" in json.loads(data["body"])
    assert_problem(web.get("/api/webhooks/preview", params={"format": "irc"}), 400)

    _, login, _ = failing_run(tenant)
    real = web.get("/api/webhooks/preview", params={"format": "teams"}).json()["data"]
    assert real["sample"] is False
    assert "Nightly #7" in real["body"] and login["code"] in real["body"]
    standard = json.loads(web.get("/api/webhooks/preview").json()["data"]["body"])
    assert standard["event"] == "test_run.completed" and standard["data"]["run_name"] == "Nightly #7"
    # a bearer token is no session: the internal API refuses it
    assert tenant.api.get("/api/webhooks/preview").status_code == 401


def preview_blocks(html: str) -> dict[str, tuple[bool, str]]:
    """format -> (hidden, text) of each preview block of a webhook form."""
    found = re.findall(r'<div data-preview-format="(\w+)"( hidden)?>(.*?)</div>', html, flags=re.S)
    return {name: (bool(hidden), text_of(body)) for name, hidden, body in found}


def test_web_form_sets_format_and_filters_and_shows_the_preview(
    tenant: Tenant, receivers: Callable[[], Receiver]
) -> None:
    web = tenant.web()
    url = receivers().url
    blocks = preview_blocks(web.get("/settings/webhooks", headers=HTML).text)
    assert set(blocks) == {"standard", "slack", "teams", "google_chat"}
    assert blocks["standard"][0] is False and blocks["slack"][0] is True
    assert "sample run" in blocks["slack"][1] and '"blocks"' in blocks["slack"][1]

    token = web.cookies.get("csrftoken") or ""
    form = {"_csrf_token": token, "url": url, "events": "test_run.completed", "active": "on",
            "format": "slack", "only_failed_runs": "on", "environments": "staging, production"}
    bad = web.post("/settings/webhooks", data={**form, "format": "irc"}, headers=HTML)
    assert bad.status_code == 400
    assert field_error(bad.text, "format")
    assert input_value(bad.text, "environments") == "staging, production"
    blank_env = web.post("/settings/webhooks", data={**form, "environments": "a, " + "x" * 101}, headers=HTML)
    assert blank_env.status_code == 400 and field_error(blank_env.text, "environments")

    created = web.post("/settings/webhooks", data=form)
    assert created.status_code == 303, created.text
    (sub,) = web.get("/api/webhooks").json()["data"]
    assert sub["format"] == "slack"
    assert sub["filters"] == {"only_failures": False, "only_failed_runs": True,
                              "environments": ["staging", "production"]}
    detail = follow(web, created).text
    assert re.search(r'<option value="slack" selected>', detail)
    shown = [name for name, (hidden, _) in preview_blocks(detail).items() if not hidden]
    assert shown == ["slack"]
    assert input_value(detail, "environments") == "staging, production"


def test_plain_subscription_still_posts_the_envelope(tenant: Tenant, receivers: Callable[[], Receiver]) -> None:
    """A standard subscription without filters keeps posting the event's own envelope, byte for byte."""
    receiver = receivers()
    web = tenant.web()
    subscribe(web, receiver.url, ["test_run.completed"], secret="s")
    project = tenant.create_project()
    run_id = ingest(tenant, project["id"], "plain", [{"title": "t", "status": "PASSED"}])
    body = json.loads(receiver.wait_for(1)[0].body)
    assert set(body) == {"event", "timestamp", "tenant_id", "data"} and body["data"]["run_id"] == run_id


def test_browser_preview_follows_the_chosen_format(server: ServerProcess, page: Any) -> None:  # noqa: F811
    # Playwright's sync API runs an event loop in this thread: create the tenant in another one
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        tenant = pool.submit(make_tenant_on, server).result()
    page.goto(f"{tenant.server.url}/login")
    page.get_by_label("Email", exact=True).fill(tenant.email)
    page.get_by_label("Password").fill(tenant.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{tenant.server.url}/")
    page.goto(f"{tenant.server.url}/settings/webhooks")
    standard = page.locator('[data-preview-format="standard"]')
    slack = page.locator('[data-preview-format="slack"]')
    teams = page.locator('[data-preview-format="teams"]')
    assert standard.is_visible() and not slack.is_visible()
    page.get_by_label("Message format").select_option("slack")
    assert slack.is_visible() and not standard.is_visible()
    assert '"blocks"' in slack.inner_text()
    page.get_by_label("Message format").select_option("teams")
    assert teams.is_visible() and not slack.is_visible()
    assert "AdaptiveCard" in teams.inner_text()
