"""The bug loop against the in-process app (tests/inprocess.py): tracker webhooks in, retest queue, events out.

Tracker payloads are the recorded fixtures in tests/fixtures/trackers/, written from each tracker's
webhook documentation, signed here exactly as the tracker signs them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess, Tenant, assert_problem, connect_db, run_admin
from tests.webhook_receiver import POLL

FIXTURES = Path(__file__).parent / "fixtures" / "trackers"
GHERKIN = "Feature: Checkout\n  Scenario: Pay\n    Given a cart\n    When I pay\n    Then I get a receipt\n"

IN_PROCESS = True


@pytest.fixture
def server(app_server: ServerProcess) -> ServerProcess:
    """The app the tenants live on (in-process here), for the tests that call it or read its database."""
    return app_server


# --- helpers -------------------------------------------------------------------------------------


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def edited(name: str, **changes: Any) -> bytes:
    """A fixture with top-level or dotted-path fields replaced (e.g. ``issue__number=7``)."""
    payload = json.loads(fixture(name))
    for path, value in changes.items():
        target = payload
        *parents, last = path.split("__")
        for step in parents:
            target = target[step]
        target[last] = value
    return json.dumps(payload).encode()


def create_integration(tenant: Tenant, kind: str, repository: str | None = None) -> tuple[str, str]:
    from tms.integrations import service as integrations

    created = run_admin(
        tenant.server.db_path,
        lambda db: integrations.create_integration(db, tenant.id, kind, f"{kind.title()} tracker", repository),
    )
    return created.integration["id"], created.secret


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def tracker_headers(kind: str, secret: str | None, body: bytes, *, event: str | None = None,
                    delivery: str | None = None) -> dict[str, str]:
    """The headers each tracker really sends; ``secret=None`` leaves the authentication out."""
    headers = {"Content-Type": "application/json"}
    if kind == "GITHUB":
        headers.update({"X-GitHub-Event": event or "issues", "X-GitHub-Delivery": delivery or f"gh-{time.time_ns()}",
                        "User-Agent": "GitHub-Hookshot/044aadd"})
        if secret is not None:
            headers["X-Hub-Signature-256"] = sign(secret, body)
    elif kind == "GITLAB":
        headers.update({"X-Gitlab-Event": event or "Issue Hook",
                        "X-Gitlab-Event-UUID": delivery or f"gl-{time.time_ns()}", "User-Agent": "GitLab/16.8.0"})
        if secret is not None:
            headers["X-Gitlab-Token"] = secret
    else:
        headers["User-Agent"] = "Atlassian Webhook HTTP Client"
        if secret is not None:
            headers["X-Hub-Signature"] = sign(secret, body)
    return headers


def deliver(server: ServerProcess, integration_id: str, kind: str, secret: str | None, body: bytes,
            **options: Any) -> httpx.Response:
    params = options.pop("params", None)
    headers = {**tracker_headers(kind, secret, body, **options)}
    return server.http_client().post(f"/api/integrations/{integration_id}", content=body, headers=headers,
                      params=params, timeout=30)


def outbox(server: ServerProcess, tenant_id: str, event: str | None = None) -> list[dict[str, Any]]:
    """Envelopes written to the events outbox for the tenant, oldest first."""
    with connect_db(server.db_path) as conn:
        only = "" if event is None else " AND event = ?"
        rows = conn.execute(
            f"SELECT body FROM events WHERE tenant_id = ?{only} ORDER BY rowid",
            (tenant_id,) if event is None else (tenant_id, event),
        ).fetchall()
    return [json.loads(body) for (body,) in rows]


def deliveries_recorded(server: ServerProcess, integration_id: str) -> int:
    with connect_db(server.db_path) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM integration_deliveries WHERE integration_id = ?",
                                (integration_id,)).fetchone()[0])


def create_case(tenant: Tenant, project_id: str | None = None, tickets: list[dict[str, str]] | None = None,
                **fields: Any) -> dict[str, Any]:
    body = {"title": fields.pop("title", "Pay with a card"), "bdd_content": GHERKIN, "tickets": tickets or [],
            **fields}
    if project_id:
        body["project_id"] = project_id
    response = tenant.api.post("/api/v1/cases", json=body)
    assert response.status_code == 201, response.text
    return response.json()["data"]


def record_result(tenant: Tenant, project_id: str, case: dict[str, Any], status: str = "FAILED",
                  **fields: Any) -> None:
    run = tenant.api.post("/api/v1/runs", json={"name": "nightly", "project_id": project_id})
    assert run.status_code == 201, run.text
    response = tenant.api.post(
        f"/api/v1/runs/{run.json()['data']['id']}/results",
        json={"results": [{"test_case_code": case["code"], "status": status, **fields}]},
    )
    assert response.status_code == 201, response.text


def get_case(tenant: Tenant, case: dict[str, Any]) -> dict[str, Any]:
    response = tenant.api.get(f"/api/v1/cases/{case['id']}")
    assert response.status_code == 200, response.text
    return response.json()["data"]


def flagged_codes(server: ServerProcess, tenant_id: str) -> list[str]:
    with connect_db(server.db_path) as conn:
        rows = conn.execute(
            "SELECT code FROM test_cases WHERE tenant_id = ? AND needs_retest = 1 ORDER BY code", (tenant_id,)
        ).fetchall()
    return [code for (code,) in rows]


# --- authentication of tracker calls -------------------------------------------------------------

DONE_FIXTURES = {
    "GITHUB": "github_issue_closed_completed.json",
    "GITLAB": "gitlab_issue_close.json",
    "JIRA": "jira_issue_updated_done.json",
}
BUG_KEYS = {"GITHUB": "acme/shop#12", "GITLAB": "acme/mobile-app#7", "JIRA": "SHOP-101"}


@pytest.mark.parametrize("kind", ["GITHUB", "GITLAB", "JIRA"])
def test_unsigned_or_wrongly_signed_calls_are_401_and_change_nothing(server: ServerProcess, tenant: Tenant,
                                                                     kind: str) -> None:
    project = tenant.create_project()
    case = create_case(tenant, project["id"], tickets=[{"key": BUG_KEYS[kind], "source": kind}])
    integration_id, secret = create_integration(tenant, kind)
    body = fixture(DONE_FIXTURES[kind])

    refused = [
        deliver(server, integration_id, kind, None, body),                    # no signature at all
        deliver(server, integration_id, kind, "not-the-secret", body),        # signed with another secret
        deliver(server, "cunknownintegration00000", kind, secret, body),      # no such integration
    ]
    if kind != "GITLAB":  # GitLab sends a token, not a signature of the body
        refused.append(server.http_client().post(f"/api/integrations/{integration_id}", content=body + b" ",
                                  headers=tracker_headers(kind, secret, body), timeout=30))
    for response in refused:
        assert_problem(response, 401)
    assert deliveries_recorded(server, integration_id) == 0
    assert outbox(server, tenant.id) == []
    assert get_case(tenant, case)["needs_retest"] is False

    accepted = deliver(server, integration_id, kind, secret, body)
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["data"]["outcome"] == "resolved"
    assert get_case(tenant, case)["needs_retest"] is True


def test_jira_without_signing_may_put_the_secret_in_the_url(server: ServerProcess, tenant: Tenant) -> None:
    integration_id, secret = create_integration(tenant, "JIRA")
    body = fixture("jira_issue_updated_in_progress.json")
    assert_problem(deliver(server, integration_id, "JIRA", None, body, params={"secret": "wrong"}), 401)
    # a signature that is present must be right, whatever the URL says
    wrong_signature = server.http_client().post(
        f"/api/integrations/{integration_id}", params={"secret": secret}, content=body,
        headers={"Content-Type": "application/json", "X-Hub-Signature": sign("other", body)}, timeout=30,
    )
    assert_problem(wrong_signature, 401)
    assert deliveries_recorded(server, integration_id) == 0
    accepted = deliver(server, integration_id, "JIRA", None, body, params={"secret": secret})
    assert accepted.status_code == 202, accepted.text


def test_github_ping_answers_200_and_shows_as_connected(server: ServerProcess, tenant: Tenant) -> None:
    integration_id, secret = create_integration(tenant, "GITHUB", "acme/shop")
    response = deliver(server, integration_id, "GITHUB", secret, fixture("github_ping.json"), event="ping")
    assert response.status_code == 200
    assert response.json()["data"]["outcome"] == "ping"
    page = tenant.web().get(f"/settings/integrations/{integration_id}")
    assert page.status_code == 200 and "ping" in page.text


# --- done and not-done transitions ---------------------------------------------------------------


@pytest.mark.parametrize("kind", ["GITHUB", "GITLAB", "JIRA"])
def test_done_transition_fires_bug_resolved_and_retest_required(server: ServerProcess, tenant: Tenant,
                                                                 kind: str) -> None:
    project = tenant.create_project()
    case = create_case(tenant, project["id"], tickets=[{"key": BUG_KEYS[kind], "source": kind}])
    bystander = create_case(tenant, project["id"], tickets=[{"key": "OTHER-1", "source": "JIRA"}])
    integration_id, secret = create_integration(tenant, kind)

    response = deliver(server, integration_id, kind, secret, fixture(DONE_FIXTURES[kind]))

    assert response.status_code == 200, response.text
    assert response.json()["data"] | {"detail": None} == {
        "outcome": "resolved", "bug_key": BUG_KEYS[kind], "cases": 1, "newly_flagged": 1, "detail": None,
    }
    [resolved] = outbox(server, tenant.id, "bug.resolved")
    assert resolved["tenant_id"] == tenant.id
    assert resolved["data"] == {
        "bug_ticket_key": BUG_KEYS[kind], "test_case_code": case["code"], "test_case_id": case["id"],
        "resolved_at": "2024-02-01T10:00:00.000Z",
    }
    [retest] = outbox(server, tenant.id, "retest.required")
    flagged_at = retest["data"]["flagged_at"]
    assert retest["data"] == {
        "test_case_id": case["id"], "test_case_code": case["code"], "project_id": project["id"],
        "reason": f"bug {BUG_KEYS[kind]} resolved", "bug_ticket_key": BUG_KEYS[kind], "flagged_at": flagged_at,
    }
    after = get_case(tenant, case)
    assert after["needs_retest"] is True
    assert after["retest_reason"] == f"bug {BUG_KEYS[kind]} resolved"
    assert after["retest_flagged_at"] == flagged_at
    assert get_case(tenant, bystander)["needs_retest"] is False


@pytest.mark.parametrize(
    ("kind", "name", "options"),
    [
        ("GITHUB", "github_issue_closed_not_planned.json", {}),
        ("GITHUB", "github_issue_reopened.json", {}),
        ("GITHUB", "github_issue_closed_completed.json", {"event": "issue_comment"}),
        ("GITLAB", "gitlab_issue_update.json", {}),
        ("JIRA", "jira_issue_updated_in_progress.json", {}),
        ("JIRA", "jira_issue_updated_done_no_status_change.json", {}),
        ("JIRA", "jira_comment_created.json", {}),
    ],
)
def test_not_done_transitions_are_accepted_and_ignored(server: ServerProcess, tenant: Tenant, kind: str,
                                                       name: str, options: dict[str, str]) -> None:
    project = tenant.create_project()
    # every key these payloads could name, so that only the transition decides
    create_case(tenant, project["id"], tickets=[{"key": key, "source": "OTHER"} for key in
                                                ("acme/shop#12", "acme/shop#13", "acme/mobile-app#7", "SHOP-101")])
    integration_id, secret = create_integration(tenant, kind)
    response = deliver(server, integration_id, kind, secret, fixture(name), **options)
    assert response.status_code == 202, response.text
    assert response.json()["data"]["outcome"] == "ignored"
    assert outbox(server, tenant.id) == []
    assert flagged_codes(server, tenant.id) == []


@pytest.mark.parametrize(
    ("kind", "body", "content_type"),
    [
        ("GITHUB", b"not json at all", "application/json"),
        ("GITHUB", b"[1, 2, 3]", "application/json"),
        ("GITHUB", b'{"action": "closed", "issue": "twelve"}', "application/json"),
        ("GITLAB", b'{"object_kind": "issue", "object_attributes": null}', "application/json"),
        ("GITLAB", b'{"object_kind": "push", "ref": "refs/heads/main"}', "application/json"),
        ("JIRA", b'{"webhookEvent": "jira:issue_updated", "issue": {"fields": {}}}', "application/json"),
        ("JIRA", b'{"webhookEvent": "jira:issue_updated", "issue": {"key": "SHOP-1", "fields": 5}}', "text/plain"),
        ("JIRA", b"\xff\xfe\x00garbage", "application/octet-stream"),
    ],
)
def test_unknown_shapes_are_202_never_500(server: ServerProcess, tenant: Tenant, kind: str, body: bytes,
                                          content_type: str) -> None:
    integration_id, secret = create_integration(tenant, kind)
    headers = tracker_headers(kind, secret, body) | {"Content-Type": content_type}
    response = server.http_client().post(f"/api/integrations/{integration_id}", content=body, headers=headers,
                          timeout=30)
    assert response.status_code == 202, response.text
    assert outbox(server, tenant.id) == []


def test_github_form_encoded_payloads_are_read(server: ServerProcess, tenant: Tenant) -> None:
    from urllib.parse import urlencode

    project = tenant.create_project()
    create_case(tenant, project["id"], tickets=[{"key": "acme/shop#12", "source": "GITHUB"}])
    integration_id, secret = create_integration(tenant, "GITHUB")
    body = urlencode({"payload": fixture("github_issue_closed_completed.json").decode()}).encode()
    headers = tracker_headers("GITHUB", secret, body) | {"Content-Type": "application/x-www-form-urlencoded"}
    response = server.http_client().post(f"/api/integrations/{integration_id}", content=body, headers=headers,
                          timeout=30)
    assert response.status_code == 200, response.text
    assert response.json()["data"]["cases"] == 1


# --- idempotency ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["GITHUB", "GITLAB", "JIRA"])
def test_the_same_delivery_twice_changes_nothing_the_second_time(server: ServerProcess, tenant: Tenant,
                                                                 kind: str) -> None:
    project = tenant.create_project()
    case = create_case(tenant, project["id"], tickets=[{"key": BUG_KEYS[kind], "source": kind}])
    integration_id, secret = create_integration(tenant, kind)
    body = fixture(DONE_FIXTURES[kind])
    first = deliver(server, integration_id, kind, secret, body, delivery="delivery-1")
    assert first.json()["data"]["outcome"] == "resolved"
    # the case is retested in between: a redelivery must not put it back in the queue
    with connect_db(server.db_path) as conn:
        conn.execute("UPDATE test_cases SET needs_retest = 0 WHERE id = ?", (case["id"],))
    again = deliver(server, integration_id, kind, secret, body, delivery="delivery-1")
    assert again.status_code == 200
    assert again.json()["data"]["outcome"] == "duplicate"
    assert len(outbox(server, tenant.id, "bug.resolved")) == 1
    assert len(outbox(server, tenant.id, "retest.required")) == 1
    assert deliveries_recorded(server, integration_id) == 1
    assert get_case(tenant, case)["needs_retest"] is False


def test_a_new_resolution_after_a_reopen_is_not_a_duplicate(server: ServerProcess, tenant: Tenant) -> None:
    project = tenant.create_project()
    create_case(tenant, project["id"], tickets=[{"key": "acme/shop#12", "source": "GITHUB"}])
    integration_id, secret = create_integration(tenant, "GITHUB")
    deliver(server, integration_id, "GITHUB", secret, fixture("github_issue_closed_completed.json"))
    deliver(server, integration_id, "GITHUB", secret, fixture("github_issue_reopened.json"))
    closed_again = edited("github_issue_closed_completed.json", issue__closed_at="2024-02-05T09:00:00Z")
    response = deliver(server, integration_id, "GITHUB", secret, closed_again)
    assert response.json()["data"]["outcome"] == "resolved"
    assert [e["data"]["resolved_at"] for e in outbox(server, tenant.id, "bug.resolved")] == [
        "2024-02-01T10:00:00.000Z", "2024-02-05T09:00:00.000Z"]
    # still waiting from the first resolution: flagged once, one retest.required
    assert len(outbox(server, tenant.id, "retest.required")) == 1


# --- linking -------------------------------------------------------------------------------------


def test_a_bug_linked_to_three_cases_in_two_projects(server: ServerProcess, tenant: Tenant) -> None:
    web_shop, mobile = tenant.create_project("Web shop"), tenant.create_project("Mobile")
    by_ticket = create_case(tenant, web_shop["id"], tickets=[{"key": "SHOP-101", "source": "JIRA"}])
    by_both = create_case(tenant, mobile["id"], tickets=[{"key": "SHOP-101", "source": "JIRA"},
                                                         {"key": "SHOP-7", "source": "JIRA"}])
    by_result = create_case(tenant, mobile["id"])
    unrelated = create_case(tenant, web_shop["id"])
    record_result(tenant, mobile["id"], by_result, "FAILED", bug_ticket_key="SHOP-101")
    record_result(tenant, mobile["id"], by_both, "FAILED", bug_ticket_key="SHOP-101")
    record_result(tenant, web_shop["id"], unrelated, "FAILED", bug_ticket_key="SHOP-102")
    integration_id, secret = create_integration(tenant, "JIRA")

    response = deliver(server, integration_id, "JIRA", secret, fixture("jira_issue_updated_done.json"))

    assert response.json()["data"]["cases"] == 3
    linked = {by_ticket["id"]: web_shop["id"], by_both["id"]: mobile["id"], by_result["id"]: mobile["id"]}
    resolved = outbox(server, tenant.id, "bug.resolved")
    assert sorted(e["data"]["test_case_id"] for e in resolved) == sorted(linked)
    retest = outbox(server, tenant.id, "retest.required")
    assert {e["data"]["test_case_id"]: e["data"]["project_id"] for e in retest} == linked
    assert {e["data"]["bug_ticket_key"] for e in resolved + retest} == {"SHOP-101"}
    assert flagged_codes(server, tenant.id) == sorted([by_ticket["code"], by_both["code"], by_result["code"]])


def test_a_key_known_only_in_another_tenant_changes_nothing(server: ServerProcess, tenant: Tenant,
                                                            other_tenant: Tenant) -> None:
    theirs = other_tenant.create_project()
    their_case = create_case(other_tenant, theirs["id"], tickets=[{"key": "SHOP-101", "source": "JIRA"}])
    record_result(other_tenant, theirs["id"], their_case, "FAILED", bug_ticket_key="SHOP-101")
    tenant.create_project()
    integration_id, secret = create_integration(tenant, "JIRA")

    response = deliver(server, integration_id, "JIRA", secret, fixture("jira_issue_updated_done.json"))

    assert response.status_code == 200
    assert response.json()["data"]["cases"] == 0
    for event in ("bug.resolved", "retest.required"):
        assert outbox(server, tenant.id, event) == [] and outbox(server, other_tenant.id, event) == []
    assert get_case(other_tenant, their_case)["needs_retest"] is False


def test_short_keys_match_within_the_configured_repository(server: ServerProcess, tenant: Tenant) -> None:
    project = tenant.create_project()
    short_ticket = create_case(tenant, project["id"], tickets=[{"key": "#12", "source": "GITHUB"}])
    short_result = create_case(tenant, project["id"])
    record_result(tenant, project["id"], short_result, "FAILED", bug_ticket_key="#12")
    gitlab_short = create_case(tenant, project["id"], tickets=[{"key": "#12", "source": "GITLAB"}])
    other_number = create_case(tenant, project["id"], tickets=[{"key": "#13", "source": "GITHUB"}])
    case_insensitive = create_case(tenant, project["id"], tickets=[{"key": "Acme/Shop#12", "source": "GITHUB"}])

    unconfigured_id, unconfigured_secret = create_integration(tenant, "GITHUB")
    body = fixture("github_issue_closed_completed.json")
    response = deliver(server, unconfigured_id, "GITHUB", unconfigured_secret, body)
    # without a repository, '#12' could be any repository's issue: only the full key matches (any case)
    assert response.json()["data"]["cases"] == 1
    assert flagged_codes(server, tenant.id) == [case_insensitive["code"]]

    configured_id, configured_secret = create_integration(tenant, "GITHUB", "Acme/Shop")
    response = deliver(server, configured_id, "GITHUB", configured_secret, body)
    assert response.json()["data"]["cases"] == 3
    assert flagged_codes(server, tenant.id) == sorted(
        [short_ticket["code"], short_result["code"], case_insensitive["code"]])
    assert gitlab_short["code"] not in flagged_codes(server, tenant.id)
    assert other_number["code"] not in flagged_codes(server, tenant.id)


# --- the retest queue through the API ------------------------------------------------------------


def test_the_flag_clears_when_a_new_result_is_recorded(server: ServerProcess, tenant: Tenant) -> None:
    project = tenant.create_project()
    case = create_case(tenant, project["id"])
    record_result(tenant, project["id"], case, "FAILED", bug_ticket_key="acme/mobile-app#7")
    integration_id, secret = create_integration(tenant, "GITLAB", "acme/mobile-app")
    deliver(server, integration_id, "GITLAB", secret, fixture("gitlab_issue_close.json"))
    assert get_case(tenant, case)["needs_retest"] is True

    # a late upload of a report executed before the fix is not the retest
    record_result(tenant, project["id"], case, "PASSED", executed_at="2024-01-01T00:00:00Z")
    assert get_case(tenant, case)["needs_retest"] is True

    record_result(tenant, project["id"], case, "PASSED")
    after = get_case(tenant, case)
    assert after["needs_retest"] is False
    assert after["retest_reason"] is None and after["retest_flagged_at"] is None


def test_the_flag_clears_through_ingest(server: ServerProcess, tenant: Tenant) -> None:
    project = tenant.create_project()
    case = create_case(tenant, project["id"], tickets=[{"key": "SHOP-101", "source": "JIRA"}])
    integration_id, secret = create_integration(tenant, "JIRA")
    deliver(server, integration_id, "JIRA", secret, fixture("jira_issue_updated_done.json"))
    assert get_case(tenant, case)["needs_retest"] is True
    response = tenant.api.post("/api/v1/ingest", json={
        "project_id": project["id"], "results": [{"test_case_code": case["code"], "status": "PASSED"}]})
    assert response.status_code == 201, response.text
    assert get_case(tenant, case)["needs_retest"] is False


def test_needs_retest_filter_lists_the_queue(server: ServerProcess, tenant: Tenant) -> None:
    project = tenant.create_project()
    waiting = create_case(tenant, project["id"], tickets=[{"key": "SHOP-101", "source": "JIRA"}])
    create_case(tenant, project["id"])
    integration_id, secret = create_integration(tenant, "JIRA")
    deliver(server, integration_id, "JIRA", secret, fixture("jira_issue_updated_done.json"))

    queue = tenant.client("read").get("/api/v1/cases", params={"needs_retest": "true"}).json()
    assert [c["code"] for c in queue["data"]] == [waiting["code"]]
    assert queue["pagination"]["total"] == 1
    in_project = tenant.api.get("/api/v1/cases", params={"needs_retest": "true", "project_id": project["id"]})
    assert [c["code"] for c in in_project.json()["data"]] == [waiting["code"]]
    not_waiting = tenant.api.get("/api/v1/cases", params={"needs_retest": "false"}).json()
    assert waiting["code"] not in [c["code"] for c in not_waiting["data"]]
    assert tenant.api.get("/api/v1/cases").json()["pagination"]["total"] == 2


def test_manual_flag_via_patch_fires_retest_required(server: ServerProcess, tenant: Tenant) -> None:
    project = tenant.create_project()
    case = create_case(tenant, project["id"])
    response = tenant.api.patch(f"/api/v1/cases/{case['code']}", json={"needs_retest": True})
    assert response.status_code == 200, response.text
    body = response.json()["data"]
    assert body["needs_retest"] is True and body["retest_reason"] == "flagged by hand"
    [event] = outbox(server, tenant.id, "retest.required")
    assert event["data"] == {"test_case_id": case["id"], "test_case_code": case["code"],
                             "project_id": project["id"], "reason": "flagged by hand", "bug_ticket_key": None,
                             "flagged_at": body["retest_flagged_at"]}
    # flagging a case that is already waiting fires nothing more
    assert tenant.api.patch(f"/api/v1/cases/{case['id']}", json={"needs_retest": True}).status_code == 200
    assert len(outbox(server, tenant.id, "retest.required")) == 1
    cleared = tenant.api.patch(f"/api/v1/cases/{case['id']}", json={"needs_retest": False}).json()["data"]
    assert cleared["needs_retest"] is False and cleared["retest_flagged_at"] is None
    assert len(outbox(server, tenant.id, "retest.required")) == 1
    assert_problem(tenant.api.patch(f"/api/v1/cases/{case['id']}", json={"needs_retest": "yes"}), 400)


# --- web: settings and the flag button -----------------------------------------------------------


def test_settings_create_shows_the_secret_once_then_delete(server: ServerProcess, tenant: Tenant,
                                                           other_tenant: Tenant) -> None:
    web = tenant.web()
    assert web.get("/settings/integrations").status_code == 200
    bad = web.post("/settings/integrations", data={"kind": "GITHUB", "name": "gh", "repository": "not a repo"})
    assert bad.status_code == 400 and "owner/repo" in bad.text
    created = web.post("/settings/integrations", data={"kind": "GITHUB", "name": "Shop issues",
                                                      "repository": "https://github.com/acme/shop"})
    assert created.status_code == 303
    detail_url = created.headers["location"]
    integration_id = detail_url.rsplit("/", 1)[1]
    page = web.get(detail_url)
    assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
    assert f"{server.url}/api/integrations/{integration_id}" in page.text or \
        f"/api/integrations/{integration_id}" in page.text
    secret = page.text.split('id="integration-secret" class="secret">')[1].split("<")[0]
    assert len(secret) >= 32
    assert secret not in web.get(detail_url).text  # shown once
    assert "acme/shop" in web.get("/settings/integrations").text

    body = fixture("github_ping.json")
    assert deliver(server, integration_id, "GITHUB", secret, body, event="ping").status_code == 200
    assert other_tenant.web().get(detail_url).status_code == 404
    assert tenant.api.get(detail_url, follow_redirects=False).status_code in (302, 303, 401)

    assert web.post(f"{detail_url}/delete").status_code == 303
    assert web.get(detail_url).status_code == 404
    assert_problem(deliver(server, integration_id, "GITHUB", secret, body, event="ping"), 401)


def test_a_new_secret_replaces_the_old_one(server: ServerProcess, tenant: Tenant) -> None:
    integration_id, old_secret = create_integration(tenant, "GITLAB")
    web = tenant.web()
    assert web.post(f"/settings/integrations/{integration_id}/secret").status_code == 303
    page = web.get(f"/settings/integrations/{integration_id}")
    new_secret = page.text.split('id="integration-secret" class="secret">')[1].split("<")[0]
    body = fixture("gitlab_issue_update.json")
    assert_problem(deliver(server, integration_id, "GITLAB", old_secret, body), 401)
    assert deliver(server, integration_id, "GITLAB", new_secret, body).status_code == 202


def test_flag_for_retest_button(server: ServerProcess, tenant: Tenant, other_tenant: Tenant) -> None:
    project = tenant.create_project()
    case = create_case(tenant, project["id"])
    web = tenant.web()
    response = web.post(f"/cases/{case['code']}/retest", data={"needs_retest": "true", "reason": "flaky login"})
    assert response.status_code == 303
    flagged = get_case(tenant, case)
    assert flagged["needs_retest"] is True and flagged["retest_reason"] == "flaky login"
    assert [e["data"]["reason"] for e in outbox(server, tenant.id, "retest.required")] == ["flaky login"]
    assert other_tenant.web().post(f"/cases/{case['code']}/retest", data={"needs_retest": "true"}).status_code \
        == 404
    assert web.post(f"/cases/{case['code']}/retest", data={"needs_retest": "false"}).status_code == 303
    assert get_case(tenant, case)["needs_retest"] is False
    # the form needs the CSRF token like every other form
    no_csrf = server.http_client(cookies=web.cookies, timeout=30)
    assert no_csrf.post(f"/cases/{case['code']}/retest", data={"needs_retest": "true"}).status_code == 403


def test_retest_queue_for_the_dashboard(server: ServerProcess, tenant: Tenant) -> None:
    from tms.failures.retest import service as retest

    web_shop, mobile = tenant.create_project("Web shop"), tenant.create_project("Mobile")
    first = create_case(tenant, web_shop["id"])
    second = create_case(tenant, mobile["id"])
    for case in (first, second):
        tenant.api.patch(f"/api/v1/cases/{case['id']}", json={"needs_retest": True})
    everything = run_admin(server.db_path, lambda db: retest.list_retest_queue(db, tenant.id))
    assert [row["code"] for row in everything] == [first["code"], second["code"]]
    only_mobile = run_admin(server.db_path, lambda db: retest.list_retest_queue(db, tenant.id, mobile["id"]))
    assert [row["code"] for row in only_mobile] == [second["code"]]


# --- outbound: the events reach a subscriber -----------------------------------------------------


class _Receiver(BaseHTTPRequestHandler):
    received: list[dict[str, Any]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.received.append({"headers": dict(self.headers), "body": body})  # type: ignore[attr-defined]
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    httpd.received = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, kwargs=POLL, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_bug_resolved_and_retest_required_are_delivered(server: ServerProcess, tenant: Tenant,
                                                         receiver: ThreadingHTTPServer) -> None:
    """The issue's "done when": a GitHub issue referenced by a failing result is closed; the case is
    in the retest queue and both events reach the subscriber, signed."""
    project = tenant.create_project()
    case = create_case(tenant, project["id"])
    record_result(tenant, project["id"], case, "FAILED", bug_ticket_key="#12")
    web = tenant.web()
    subscription = web.post("/api/webhooks", json={
        "url": f"http://127.0.0.1:{receiver.server_port}/hook", "events": ["bug.resolved", "retest.required"],
        "secret": "subscriber-secret"})
    assert subscription.status_code == 201, subscription.text
    created = web.post("/settings/integrations", data={"kind": "GITHUB", "name": "Shop", "repository": "acme/shop"})
    integration_id = created.headers["location"].rsplit("/", 1)[1]
    secret = web.get(created.headers["location"]).text.split(
        'id="integration-secret" class="secret">')[1].split("<")[0]

    response = deliver(server, integration_id, "GITHUB", secret, fixture("github_issue_closed_completed.json"))
    assert response.json()["data"]["newly_flagged"] == 1

    deadline = time.monotonic() + 20
    while len(receiver.received) < 2 and time.monotonic() < deadline:  # type: ignore[attr-defined]
        time.sleep(0.05)
    received = receiver.received  # type: ignore[attr-defined]
    assert sorted(r["headers"]["X-Service-Event"] for r in received) == ["bug.resolved", "retest.required"]
    for delivery in received:
        assert delivery["headers"]["X-Service-Signature"] == sign("subscriber-secret", delivery["body"])
        envelope = json.loads(delivery["body"])
        assert envelope["tenant_id"] == tenant.id
        assert envelope["data"]["test_case_code"] == case["code"]
        assert envelope["data"]["bug_ticket_key"] == "acme/shop#12"
    queue = tenant.api.get("/api/v1/cases", params={"needs_retest": "true"}).json()["data"]
    assert [c["code"] for c in queue] == [case["code"]]


def test_oversized_tracker_calls_are_refused(server: ServerProcess, tenant: Tenant) -> None:
    integration_id, secret = create_integration(tenant, "GITLAB")
    body = b'{"object_kind": "issue", "padding": "' + b"x" * (3 * 1024 * 1024) + b'"}'
    response = deliver(server, integration_id, "GITLAB", secret, body)
    assert_problem(response, 413)
    assert deliveries_recorded(server, integration_id) == 0
