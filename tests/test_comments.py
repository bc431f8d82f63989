"""Comments on cases and results (issue 26): Markdown rendered and sanitised, @email mentions of the
tenant's users notified through the inbox (and mailed, see test_notifications_inbox.py), edits and
deletions by their author alone, each in the audit log; bad input is a 400 naming ``body`` with nothing
written. The web forms: the case page and the execution view show the thread and take new comments."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tests.conftest import Tenant, assert_problem
from tests.team_helpers import add_member, web_as

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)

GHERKIN = "Feature: F\n  Scenario: S\n    Given x\n"


def _case(tenant: Tenant) -> dict[str, Any]:
    project = tenant.create_project("Comments")["id"]
    response = tenant.api.post("/api/v1/cases", json={"project_id": project, "title": "Log in", "bdd_content": GHERKIN})
    assert response.status_code == 201, response.text
    return response.json()["data"]  # type: ignore[no-any-return]


def _result(tenant: Tenant, case: dict[str, Any]) -> str:
    ingest = tenant.api.post("/api/v1/ingest", json={"project_id": case["project_id"], "run_name": "Night",
                                                     "results": [{"test_case_code": case["code"], "status": "FAILED"}]})
    assert ingest.status_code == 201, ingest.text
    return ingest.json()["result_ids"][0]  # type: ignore[no-any-return]


def _second_token(tenant: Tenant) -> httpx.Client:
    from tms.team.tokens import service as tokens

    async def create(db: Any) -> str:
        return (await tokens.create_token(db, tenant.id, "other", "read,write")).token

    secret = tenant.server.run_admin(create)
    return tenant.server.http_client(headers={"Authorization": f"Bearer {secret}"}, timeout=30)


def _comments(client: httpx.Client, path: str) -> list[dict[str, Any]]:
    response = client.get(path)
    assert response.status_code == 200, response.text
    return response.json()["data"]  # type: ignore[no-any-return]


def _inbox(client: httpx.Client) -> list[dict[str, Any]]:
    return client.get("/api/v1/notifications").json()["data"]  # type: ignore[no-any-return]


def test_a_comment_on_a_case_is_rendered_sanitised_and_notifies_who_it_mentions(tenant: Tenant) -> None:
    case = _case(tenant)
    tester, bystander = add_member(tenant, "tester"), add_member(tenant, "tester")
    body = (f"Fails on **Safari**, @{tester.email.upper()} can you look? <b>raw</b> "
            "[log](https://ci.example.com/1) `<script>x</script>`")
    created = tenant.api.post(f"/api/v1/cases/{case['code']}/comments", json={"body": body})
    assert created.status_code == 201, created.text
    comment = created.json()["data"]
    assert comment["body"] == body and comment["target_kind"] == "case" and comment["target_id"] == case["id"]
    assert comment["author"]["kind"] == "token" and comment["author"]["name"] == "ci"
    assert comment["mentions"] == [tester.id] and comment["edited"] is False
    html = comment["body_html"]
    assert "<strong>Safari</strong>" in html and "&lt;b&gt;raw&lt;/b&gt;" in html and "<b>" not in html
    assert '<a href="https://ci.example.com/1" rel="nofollow noopener noreferrer">log</a>' in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    # listed by code or id, oldest first
    assert [c["id"] for c in _comments(tenant.api, f"/api/v1/cases/{case['id']}/comments")] == [comment["id"]]
    listed = tenant.client("read").get(f"/api/v1/cases/{case['code']}/comments").json()
    assert listed["pagination"] == {"total": 1, "limit": 100, "offset": 0}

    [note] = _inbox(web_as(tenant, tester.email, tester.password))
    assert note["kind"] == "mention" and case["code"] in note["title"] and note["actor_id"]
    assert note["link"] == f"/cases/{case['code']}#comment-{comment['id']}"
    assert _inbox(web_as(tenant, bystander.email, bystander.password)) == []


def test_a_comment_on_a_result_linked_or_unlinked(tenant: Tenant) -> None:
    case = _case(tenant)
    result = _result(tenant, case)
    created = tenant.api.post(f"/api/v1/results/{result}/comments", json={"body": "Flaky network, _retrying_"})
    assert created.status_code == 201, created.text
    assert created.json()["data"]["target_kind"] == "result"
    assert "<em>retrying</em>" in created.json()["data"]["body_html"]
    assert len(_comments(tenant.api, f"/api/v1/results/{result}/comments")) == 1
    assert _comments(tenant.api, f"/api/v1/cases/{case['id']}/comments") == []


@pytest.mark.parametrize("body", [
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt&colon;alert(1))",
    "<script>alert(1)</script>",
    '<img src="x" onerror="alert(1)">',
    '<a href="javascript:alert(1)">x</a>',
    "[x](data:text/html;base64,PHNjcmlwdD4=)",
    "   ",
    "x" * 10_001,
])
def test_bad_markdown_is_a_400_naming_body_and_nothing_is_written(tenant: Tenant, body: str) -> None:
    case = _case(tenant)
    problem = assert_problem(tenant.api.post(f"/api/v1/cases/{case['id']}/comments", json={"body": body}), 400)
    assert "body" in str(problem)
    assert _comments(tenant.api, f"/api/v1/cases/{case['id']}/comments") == []


def test_mentions_must_be_active_members_of_the_tenant(tenant: Tenant, other_tenant: Tenant) -> None:
    case = _case(tenant)
    gone = add_member(tenant, "tester")
    tenant.web().post(f"/settings/team/{gone.id}/active", data={"active": "0"})
    for address, words in ((other_tenant.email, "not a member"), ("nobody@example.com", "not a member"),
                           (gone.email, "deactivated")):
        problem = assert_problem(tenant.api.post(f"/api/v1/cases/{case['id']}/comments",
                                                 json={"body": f"hey @{address}"}), 400)
        assert problem["errors"][0]["field"] == "body" and words in problem["detail"], problem
    assert _comments(tenant.api, f"/api/v1/cases/{case['id']}/comments") == []
    assert _inbox(other_tenant.web()) == []
    # a plain address (no @ in front) is no mention; too many mentions is refused
    assert tenant.api.post(f"/api/v1/cases/{case['id']}/comments",
                           json={"body": f"mail {other_tenant.email}"}).status_code == 201
    many = " ".join(f"@m{n}@example.com" for n in range(21))
    problem = assert_problem(tenant.api.post(f"/api/v1/cases/{case['id']}/comments", json={"body": many}), 400)
    assert "at most 20" in problem["detail"]


def test_body_type_errors_name_the_field(tenant: Tenant) -> None:
    case = _case(tenant)
    path = f"/api/v1/cases/{case['id']}/comments"
    for payload in ({"body": 5}, {}, {"body": "x", "extra": 1}, {"body": "a\u0000b"}):
        response = tenant.api.post(path, json=payload)
        assert response.status_code == 400, (payload, response.text)
    assert "body" in tenant.api.post(path, json={"body": 5}).text
    assert _comments(tenant.api, path) == []


def test_only_the_author_edits_or_deletes_and_each_is_audited(tenant: Tenant) -> None:
    case = _case(tenant)
    tester = add_member(tenant, "tester")
    comment = tenant.api.post(f"/api/v1/cases/{case['id']}/comments", json={"body": "first"}).json()["data"]

    # another token of the same tenant is not the author
    stranger = _second_token(tenant)
    assert_problem(stranger.patch(f"/api/v1/comments/{comment['id']}", json={"body": "hijacked"}), 403)
    assert_problem(stranger.delete(f"/api/v1/comments/{comment['id']}"), 403)
    assert _comments(tenant.api, f"/api/v1/cases/{case['id']}/comments")[0]["body"] == "first"

    edited = tenant.api.patch(f"/api/v1/comments/{comment['id']}", json={"body": f"second, cc @{tester.email}"})
    assert edited.status_code == 200, edited.text
    assert edited.json()["data"]["body"].startswith("second") and edited.json()["data"]["edited"] is True
    assert len(_inbox(web_as(tenant, tester.email, tester.password))) == 1
    # the same mention again tells nobody twice
    tenant.api.patch(f"/api/v1/comments/{comment['id']}", json={"body": f"third, cc @{tester.email}"})
    assert len(_inbox(web_as(tenant, tester.email, tester.password))) == 1
    assert tenant.api.delete(f"/api/v1/comments/{comment['id']}").status_code == 204
    assert_problem(tenant.api.delete(f"/api/v1/comments/{comment['id']}"), 404)

    actions = [e["action"] for e in tenant.api.get("/api/v1/audit", params={"entity_type": "comment"}).json()["data"]]
    assert actions.count("comment.created") == 1 and actions.count("comment.updated") == 2
    assert actions.count("comment.deleted") == 1


def test_a_deleted_case_takes_its_comments(tenant: Tenant) -> None:
    kept, gone = _case(tenant), _case(tenant)
    for case in (kept, gone):
        assert tenant.api.post(f"/api/v1/cases/{case['id']}/comments", json={"body": "x"}).status_code == 201
    assert tenant.api.delete(f"/api/v1/cases/{gone['id']}").status_code == 204
    from tests.conftest import connect_db

    conn = connect_db(tenant.server.db_path)
    try:
        left = conn.execute("SELECT target_id FROM comments WHERE tenant_id = ?", (tenant.id,)).fetchall()
    finally:
        conn.close()
    assert [row[0] for row in left] == [kept["id"]]


def test_the_case_page_shows_the_thread_and_takes_a_comment(tenant: Tenant) -> None:
    case = _case(tenant)
    tester = add_member(tenant, "tester")
    web = web_as(tenant, tester.email, tester.password)
    token = web.cookies.get("csrftoken")
    posted = web.post(f"/cases/{case['code']}/comments", data={"_csrf_token": token, "body": "Looks **good**"})
    assert posted.status_code == 303, posted.text
    assert posted.headers["location"].startswith(f"/cases/{case['code']}#comment-")
    page = web.get(f"/cases/{case['code']}").text
    assert "<strong>good</strong>" in page and 'id="comments"' in page
    comment_id = re.search(r'id="comment-(c[a-z0-9]+)"', page).group(1)  # type: ignore[union-attr]
    assert f"/comments/{comment_id}/edit" in page  # the author sees Edit

    # a bad comment comes back with the text kept and the message next to the field
    bad = web.post(f"/cases/{case['code']}/comments", data={"_csrf_token": token, "body": "[x](javascript:alert(1))"})
    assert bad.status_code == 400
    assert "javascript:alert(1)" in bad.text and 'id="f-body-error"' in bad.text

    # someone else sees no Edit, and may not edit or delete
    owner = tenant.web()
    assert f"/comments/{comment_id}/edit" not in owner.get(f"/cases/{case['code']}").text
    assert owner.get(f"/comments/{comment_id}/edit").status_code == 403
    assert owner.post(f"/comments/{comment_id}/delete", data={"_csrf_token": owner.cookies.get("csrftoken")}
                      ).status_code == 403
    # the author edits, then deletes
    assert web.get(f"/comments/{comment_id}/edit").status_code == 200
    saved = web.post(f"/comments/{comment_id}/edit", data={"_csrf_token": token, "body": "Looks _fine_"})
    assert saved.status_code == 303
    assert "<em>fine</em>" in web.get(f"/cases/{case['code']}").text
    assert web.post(f"/comments/{comment_id}/delete", data={"_csrf_token": token}).status_code == 303
    assert "<em>fine</em>" not in web.get(f"/cases/{case['code']}").text


def test_the_execution_view_takes_a_comment_and_viewers_only_read(tenant: Tenant) -> None:
    case = _case(tenant)
    result = _result(tenant, case)
    viewer = add_member(tenant, "viewer")
    web = tenant.web()
    posted = web.post(f"/results/{result}/comments", data={"_csrf_token": web.cookies.get("csrftoken"),
                                                           "body": f"@{viewer.email} FYI"})
    assert posted.status_code == 303, posted.text
    viewer_web = web_as(tenant, viewer.email, viewer.password)
    page = viewer_web.get(f"/results/{result}/execute").text
    assert "FYI" in page and 'class="comment-form"' not in page
    assert viewer_web.post(f"/results/{result}/comments", data={"_csrf_token": viewer_web.cookies.get("csrftoken"),
                                                                "body": "me too"}).status_code == 403
    # the mention reached the viewer's bell
    home = viewer_web.get("/").text
    assert 'class="bell-count">1<' in home
