"""The notifications inbox (issue 26): assignments (and, in test_comments.py, mentions) create a
notification for the user concerned; ``GET /api/v1/notifications`` shows the caller's own with read
flags (a session only), one or all are marked read; with SMTP set a notification is mailed (read off a
real aiosmtpd server on loopback) unless the user turned "Mail me my notifications" off."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess, Tenant, assert_problem, make_tenant_on
from tests.inprocess import InProcessServer
from tests.team_helpers import Member, add_member, web_as
from tests.test_password_reset import Inbox, _mail_env, inbox  # noqa: F401  (the aiosmtpd fixture)

IN_PROCESS = True  # tests/inprocess.py; the mail settings get a module app of their own


def _run_with_results(tenant: Tenant, count: int = 2) -> tuple[str, str, list[str]]:
    """A run named after the test with ``count`` linked results; (project id, run id, result ids)."""
    project = tenant.create_project("Inbox project")["id"]
    codes = []
    for number in range(count):
        case = tenant.api.post("/api/v1/cases", json={"project_id": project, "title": f"Case {number}",
                                                       "bdd_content": "Feature: F\n  Scenario: S\n    Given x\n"})
        assert case.status_code == 201, case.text
        codes.append(case.json()["data"]["code"])
    ingest = tenant.api.post("/api/v1/ingest", json={
        "project_id": project, "run_name": "Nightly inbox run",
        "results": [{"test_case_code": code, "status": "FAILED"} for code in codes]})
    assert ingest.status_code == 201, ingest.text
    run = ingest.json()["run_id"]
    results = tenant.api.get(f"/api/v1/runs/{run}/results").json()["data"]
    return project, run, [r["id"] for r in results]


def _assign(tenant: Tenant, run: str, result_ids: list[str], member: Member) -> None:
    response = tenant.api.post(f"/api/v1/runs/{run}/assign", json={"result_ids": result_ids,
                                                                    "assignee_id": member.id})
    assert response.status_code == 200, response.text


def _inbox(client: httpx.Client, **params: Any) -> dict[str, Any]:
    response = client.get("/api/v1/notifications", params=params)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_an_assignment_lands_in_the_assignees_inbox_and_is_marked_read(tenant: Tenant) -> None:
    tester = add_member(tenant, "tester")
    other = add_member(tenant, "tester")
    _, run, results = _run_with_results(tenant)
    _assign(tenant, run, results, tester)

    client = web_as(tenant, tester.email, tester.password)
    answer = _inbox(client)
    assert answer["unread"] == 1
    assert answer["pagination"] == {"total": 1, "limit": 50, "offset": 0}
    [note] = answer["data"]
    assert note["kind"] == "assignment" and note["read"] is False
    assert "2 results" in note["title"] and "Nightly inbox run" in note["title"]
    assert note["link"] == f"/runs/{run}?assignee=me"
    # nobody else was told
    assert _inbox(web_as(tenant, other.email, other.password))["data"] == []
    assert _inbox(tenant.web())["data"] == []

    marked = client.patch(f"/api/v1/notifications/{note['id']}", json={"read": True})
    assert marked.status_code == 200, marked.text
    assert marked.json()["data"]["read"] is True
    assert _inbox(client)["unread"] == 0
    assert _inbox(client, unread="true")["data"] == []
    again = client.patch(f"/api/v1/notifications/{note['id']}", json={"read": False})
    assert again.json()["data"]["read"] is False and _inbox(client)["unread"] == 1


def test_one_assignment_per_result_changed_by_hand_and_read_all(tenant: Tenant) -> None:
    tester = add_member(tenant, "tester")
    _, _, results = _run_with_results(tenant, 3)
    for result in results:
        response = tenant.api.patch(f"/api/v1/results/{result}", json={"assignee_id": tester.id})
        assert response.status_code == 200, response.text
    # the same assignee again changes nothing and tells nobody
    assert tenant.api.patch(f"/api/v1/results/{results[0]}", json={"assignee_id": tester.id}).status_code == 200
    client = web_as(tenant, tester.email, tester.password)
    answer = _inbox(client, limit=2)
    assert answer["unread"] == 3 and answer["pagination"]["total"] == 3 and len(answer["data"]) == 2
    assert all(n["link"].endswith("/execute") for n in answer["data"])
    assert _inbox(client, limit=2, offset=2)["data"][0]["id"] not in {n["id"] for n in answer["data"]}

    marked = client.post("/api/v1/notifications/read-all")
    assert marked.status_code == 200 and marked.json()["data"]["marked"] == 3
    assert _inbox(client)["unread"] == 0
    assert client.post("/api/v1/notifications/read-all").json()["data"]["marked"] == 0


def test_the_inbox_takes_sessions_only_and_is_the_callers_own(tenant: Tenant, other_tenant: Tenant) -> None:
    tester = add_member(tenant, "tester")
    colleague = add_member(tenant, "tester")
    _, run, results = _run_with_results(tenant)
    _assign(tenant, run, results, tester)
    note = _inbox(web_as(tenant, tester.email, tester.password))["data"][0]["id"]

    assert_problem(tenant.api.get("/api/v1/notifications"), 401)
    assert_problem(tenant.server.http_client().get("/api/v1/notifications"), 401)
    # a colleague's or another tenant's user's notification is not found, and stays unread
    for client in (web_as(tenant, colleague.email, colleague.password), other_tenant.web()):
        assert_problem(client.patch(f"/api/v1/notifications/{note}", json={"read": True}), 404)
        assert client.post("/api/v1/notifications/read-all").json()["data"]["marked"] == 0
    assert _inbox(web_as(tenant, tester.email, tester.password))["unread"] == 1


def test_bad_input_is_a_clear_error(tenant: Tenant) -> None:
    client = tenant.web()
    problem = assert_problem(client.patch("/api/v1/notifications/cxxxxxxxxxxxxxxxxxxxxxxxx", json={"read": "yes"}),
                             400)
    assert "read" in str(problem)
    assert_problem(client.patch("/api/v1/notifications/cxxxxxxxxxxxxxxxxxxxxxxxx", json={"read": True, "x": 1}),
                   400)
    assert_problem(client.get("/api/v1/notifications", params={"limit": 0}), 400)
    no_csrf = tenant.server.http_client(cookies=client.cookies)
    assert_problem(no_csrf.post("/api/v1/notifications/read-all"), 403)


def test_a_viewer_reads_and_marks_their_own_inbox(tenant: Tenant) -> None:
    viewer = add_member(tenant, "viewer")
    client = web_as(tenant, viewer.email, viewer.password)
    assert _inbox(client)["data"] == []
    assert client.post("/api/v1/notifications/read-all").status_code == 200


@pytest.fixture(scope="module")
def mail_server(inbox: tuple[Inbox, int], tmp_path_factory: pytest.TempPathFactory  # noqa: F811
                ) -> Iterator[ServerProcess]:
    server = InProcessServer(tmp_path_factory.mktemp("inbox-mail"), _mail_env(inbox[1])).start()
    yield server
    server.stop()


def test_a_notification_is_mailed_unless_the_user_switched_it_off(
        mail_server: ServerProcess, inbox: tuple[Inbox, int]) -> None:  # noqa: F811
    mails, _ = inbox
    tenant = make_tenant_on(mail_server)
    keen, quiet = add_member(tenant, "tester"), add_member(tenant, "tester")
    switched = web_as(tenant, quiet.email, quiet.password).post("/account/notifications", data={"notify_mail": ""})
    assert switched.status_code == 303, switched.text
    _, run, results = _run_with_results(tenant)
    _assign(tenant, run, results[:1], quiet)
    _assign(tenant, run, results[1:], keen)

    message = mails.wait_for(keen.email)
    assert "Nightly inbox run" in message["Subject"] and "1 result" in message["Subject"]
    body = message.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert f"{mail_server.url}/runs/{run}?assignee=me" in body
    assert _inbox(web_as(tenant, quiet.email, quiet.password))["unread"] == 1

    # switched on again, the next one is mailed: the first mail quiet ever gets is this one
    quiet_web = web_as(tenant, quiet.email, quiet.password)
    assert quiet_web.post("/account/notifications", data={"notify_mail": "1"}).status_code == 303
    assert tenant.api.patch(f"/api/v1/results/{results[1]}", json={"assignee_id": quiet.id}).status_code == 200
    first = mails.wait_for(quiet.email)
    assert "Case" in first["Subject"] and "1 result" not in first["Subject"], first["Subject"]

    # a mention is mailed the same way, with the link to the comment
    comment = tenant.api.post(f"/api/v1/results/{results[0]}/comments", json={"body": f"@{keen.email} look"})
    assert comment.status_code == 201, comment.text
    mention = mails.wait_for(keen.email, 2)
    assert "mentioned you" in mention["Subject"]
    assert f"#comment-{comment.json()['data']['id']}" in mention.get_body(("plain",)).get_content()  # type: ignore[union-attr]


def test_the_bell_the_inbox_page_and_the_account_switch(tenant: Tenant) -> None:
    tester = add_member(tenant, "tester")
    _, _, results = _run_with_results(tenant, 3)
    for result in results:
        assert tenant.api.patch(f"/api/v1/results/{result}", json={"assignee_id": tester.id}).status_code == 200
    web = web_as(tenant, tester.email, tester.password)
    token = web.cookies.get("csrftoken")
    assert 'class="bell-count">3<' in web.get("/runs").text
    page = web.get("/notifications")
    assert page.status_code == 200 and page.text.count('class="inbox-item unread"') == 3
    assert "Mark all read (3)" in page.text
    first = _inbox(web)["data"][0]

    # opening one marks it read and goes to its link
    opened = web.post(f"/notifications/{first['id']}/read", data={"_csrf_token": token, "open": "1"})
    assert opened.status_code == 303 and opened.headers["location"] == first["link"]
    assert 'class="bell-count">2<' in web.get("/").text
    assert web.get("/notifications?unread=true").text.count('class="inbox-item unread"') == 2
    assert web.post("/notifications/read-all", data={"_csrf_token": token}).status_code == 303
    assert "bell-count" not in web.get("/").text
    assert _inbox(web)["unread"] == 0

    # the switch on the account page shows and keeps its state
    assert 'name="notify_mail" value="1" checked' in web.get("/account").text
    assert web.post("/account/notifications", data={"_csrf_token": token}).status_code == 303
    assert 'name="notify_mail" value="1">' in web.get("/account").text
    audit = tenant.api.get("/api/v1/audit", params={"entity_type": "user", "entity_id": tester.id}).json()["data"]
    assert any(e["action"] == "user.notify_mail" for e in audit)
