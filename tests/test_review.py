"""Case review (issue 26): request, approve, request changes; require_review; the waiting list; web
forms; AI drafts are in test_ai.py. Both databases."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import Tenant, assert_problem
from tests.team_helpers import Member, add_member, web_as
from tests.web_helpers import HTML, every_post_form_has_csrf, flashes, follow, text_of

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)

GHERKIN = "Feature: F\n  Scenario: S\n    Given a step\n"


def api_of(tenant: Tenant, member: Member) -> httpx.Client:
    """An API client acting as ``member``: a token that member created."""
    from tms.team.tokens import service as tokens

    async def create(db: Any) -> str:
        return (await tokens.create_token(db, tenant.id, f"{member.role} token", "read,write",
                                          created_by=member.id)).token

    token = tenant.server.run_admin(create)
    return tenant.server.http_client(headers={"Authorization": f"Bearer {token}"}, timeout=30)


def new_case(api: httpx.Client, project: str, **more: Any) -> dict[str, Any]:
    response = api.post("/api/v1/cases", json={"project_id": project, "title": "Review me", "bdd_content": GHERKIN,
                                               **more})
    assert response.status_code == 201, response.text
    return response.json()["data"]


def field_of(response: httpx.Response, status: int = 400) -> str:
    body = assert_problem(response, status)
    return str(body["errors"][0]["field"]) if body.get("errors") else ""


def audit_actions(tenant: Tenant, case_id: str) -> list[str]:
    response = tenant.api.get("/api/v1/audit", params={"entity_type": "case", "entity_id": case_id})
    assert response.status_code == 200, response.text
    return sorted(entry["action"] for entry in response.json()["data"])


def strict_project(tenant: Tenant) -> str:
    project = tenant.create_project("Strict")["id"]
    response = tenant.api.patch(f"/api/v1/projects/{project}", json={"require_review": True})
    assert response.status_code == 200 and response.json()["data"]["require_review"] is True, response.text
    return project


# ------------------------------------------------------------------------------------------------ API


def test_request_approve_and_reject_without_require_review(tenant: Tenant) -> None:
    author, reviewer = add_member(tenant, "tester"), add_member(tenant, "tester")
    as_author, as_reviewer = api_of(tenant, author), api_of(tenant, reviewer)
    project = tenant.create_project()["id"]
    assert tenant.api.get(f"/api/v1/projects/{project}").json()["data"]["require_review"] is False
    case = new_case(as_author, project)
    assert case["review"] == {"state": "NONE", "reviewer_id": None, "updated_at": None, "comment": None,
                              "author_id": None}

    asked = as_author.post(f"/api/v1/cases/{case['code']}/review", json={"reviewer_id": reviewer.id})
    assert asked.status_code == 200, asked.text
    review = asked.json()["data"]["review"]
    assert review["state"] == "REQUESTED" and review["reviewer_id"] == reviewer.id
    assert review["author_id"] == author.id and review["updated_at"]
    assert tenant.api.get(f"/api/v1/cases/{case['id']}").json()["data"]["review"] == review

    # changes requested: a comment is required, the case stays DRAFT, the comment is kept
    missing = assert_problem(as_reviewer.post(f"/api/v1/cases/{case['id']}/review/reject", json={}), 400)
    assert "comment" in missing["detail"]
    assert field_of(as_reviewer.post(f"/api/v1/cases/{case['id']}/review/reject", json={"comment": "   "})) == "comment"
    rejected = as_reviewer.post(f"/api/v1/cases/{case['id']}/review/reject", json={"comment": "Add a Then step"})
    assert rejected.status_code == 200, rejected.text
    data = rejected.json()["data"]
    assert data["status"] == "DRAFT" and data["review"]["state"] == "CHANGES_REQUESTED"
    assert data["review"]["comment"] == "Add a Then step" and data["review"]["reviewer_id"] == reviewer.id
    # a second rejection has no open request
    assert_problem(as_reviewer.post(f"/api/v1/cases/{case['id']}/review/reject", json={"comment": "again"}), 409)

    # asked again, then approved (without require_review the author may approve too): READY, a new version
    as_author.post(f"/api/v1/cases/{case['id']}/review", json={"reviewer_id": reviewer.id})
    approved = as_author.post(f"/api/v1/cases/{case['id']}/review/approve")
    assert approved.status_code == 200, approved.text
    data = approved.json()["data"]
    assert data["status"] == "READY" and data["review"]["state"] == "APPROVED" and data["review"]["comment"] is None
    assert data["version"] == case["version"] + 1
    versions = tenant.api.get(f"/api/v1/cases/{case['id']}/versions").json()["data"]
    assert [v["status"] for v in versions[:2]] == ["READY", "DRAFT"]
    assert_problem(as_author.post(f"/api/v1/cases/{case['id']}/review/approve"), 409)  # nothing open
    assert audit_actions(tenant, case["id"]) == sorted([
        "case.created", "case.review_requested", "case.review_rejected", "case.review_requested",
        "case.review_approved"])


def test_require_review_rules(tenant: Tenant) -> None:
    author, reviewer = add_member(tenant, "tester"), add_member(tenant, "admin")
    as_author, as_reviewer = api_of(tenant, author), api_of(tenant, reviewer)
    project = strict_project(tenant)

    # READY only by approval: create and PATCH are refused naming status
    refused = as_author.post("/api/v1/cases", json={"project_id": project, "title": "t", "bdd_content": GHERKIN,
                                                    "status": "READY"})
    assert field_of(refused) == "status"
    case = new_case(as_author, project)
    assert field_of(as_author.patch(f"/api/v1/cases/{case['id']}", json={"status": "READY"})) == "status"
    assert tenant.api.get(f"/api/v1/cases/{case['id']}").json()["data"]["status"] == "DRAFT"
    # other statuses are free
    assert as_author.patch(f"/api/v1/cases/{case['id']}", json={"status": "DEPRECATED"}).status_code == 200
    as_author.patch(f"/api/v1/cases/{case['id']}", json={"status": "DRAFT"})

    # the author may not review their own case
    assert field_of(as_author.post(f"/api/v1/cases/{case['id']}/review", json={"reviewer_id": author.id})) \
        == "reviewer_id"
    as_author.post(f"/api/v1/cases/{case['id']}/review", json={"reviewer_id": reviewer.id})
    own = as_author.post(f"/api/v1/cases/{case['id']}/review/approve")
    assert "another person" in assert_problem(own, 409)["detail"]
    # a token nobody created is no person: it cannot approve under require_review
    assert_problem(tenant.api.post(f"/api/v1/cases/{case['id']}/review/approve"), 409)
    approved = as_reviewer.post(f"/api/v1/cases/{case['id']}/review/approve")
    assert approved.status_code == 200, approved.text
    assert approved.json()["data"]["status"] == "READY"

    # an edit after approval asks again: REQUESTED, same reviewer, the editor as author, DRAFT again
    edited = as_author.patch(f"/api/v1/cases/{case['id']}", json={"title": "Review me again"})
    assert edited.status_code == 200, edited.text
    data = edited.json()["data"]
    assert data["status"] == "DRAFT" and data["review"]["state"] == "REQUESTED"
    assert data["review"]["reviewer_id"] == reviewer.id and data["review"]["author_id"] == author.id
    versions = tenant.api.get(f"/api/v1/cases/{case['id']}/versions").json()["data"]
    assert versions[0]["status"] == "DRAFT" and versions[0]["title"] == "Review me again"
    # the reviewer edits it now: the author may approve the reviewer's version
    as_reviewer.patch(f"/api/v1/cases/{case['id']}", json={"priority": "HIGH"})
    assert as_reviewer.post(f"/api/v1/cases/{case['id']}/review/approve").status_code == 200
    as_reviewer.patch(f"/api/v1/cases/{case['id']}", json={"priority": "LOW"})
    assert as_reviewer.get(f"/api/v1/cases/{case['id']}").json()["data"]["review"]["author_id"] == reviewer.id
    assert as_author.post(f"/api/v1/cases/{case['id']}/review/approve").status_code == 200

    # bulk READY is refused for cases not approved; a status-only change keeps the approval
    other = new_case(as_author, project)
    web = tenant.web()
    bulk = follow(web, web.post("/cases/bulk", data={"ids": [other["id"]], "op": "status:READY"}, headers=HTML))
    assert any(other["code"] in f and "requires review" in f for f in flashes(bulk.text)), flashes(bulk.text)
    assert tenant.api.get(f"/api/v1/cases/{other['id']}").json()["data"]["status"] == "DRAFT"
    # turning the setting off lets READY through
    tenant.api.patch(f"/api/v1/projects/{project}", json={"require_review": False})
    assert as_author.patch(f"/api/v1/cases/{other['id']}", json={"status": "READY"}).status_code == 200


def test_waiting_for_my_review_filter(tenant: Tenant) -> None:
    author, reviewer, bystander = (add_member(tenant, "tester") for _ in range(3))
    as_author, as_reviewer = api_of(tenant, author), api_of(tenant, reviewer)
    project = tenant.create_project()["id"]
    waiting = [new_case(as_author, project) for _ in range(3)]
    for case in waiting:
        as_author.post(f"/api/v1/cases/{case['id']}/review", json={"reviewer_id": reviewer.id})
    as_author.post(f"/api/v1/cases/{waiting[2]['id']}/review", json={"reviewer_id": bystander.id})
    as_reviewer.post(f"/api/v1/cases/{waiting[1]['id']}/review/approve")
    new_case(as_author, project)  # never asked

    mine = as_reviewer.get("/api/v1/cases", params={"review": "REQUESTED", "reviewer_id": "me"})
    assert mine.status_code == 200, mine.text
    assert [c["id"] for c in mine.json()["data"]] == [waiting[0]["id"]]
    assert mine.json()["pagination"]["total"] == 1
    by_id = tenant.api.get("/api/v1/cases", params={"review": "REQUESTED", "reviewer_id": bystander.id}).json()
    assert [c["id"] for c in by_id["data"]] == [waiting[2]["id"]]
    approved = tenant.api.get("/api/v1/cases", params={"review": "APPROVED", "project_id": project}).json()
    assert [c["id"] for c in approved["data"]] == [waiting[1]["id"]]
    assert field_of(tenant.api.get("/api/v1/cases", params={"review": "MAYBE"})) == "review"
    # a token nobody created has no "me": nothing waits for it
    assert tenant.api.get("/api/v1/cases", params={"reviewer_id": "me"}).json()["data"] == []

    # the web list: the reviewer sees theirs, linked to the case
    web = web_as(tenant, reviewer.email, reviewer.password)
    page = web.get("/reviews", headers=HTML)
    assert page.status_code == 200
    assert f"/cases/{waiting[0]['code']}#review" in page.text and waiting[2]["code"] not in text_of(page.text)
    assert "1 in all" in text_of(page.text)


def test_bad_review_input(tenant: Tenant, other_tenant: Tenant) -> None:
    viewer, tester = add_member(tenant, "viewer"), add_member(tenant, "tester")
    stranger = add_member(other_tenant, "tester")
    case = new_case(tenant.api, tenant.create_project()["id"])
    url = f"/api/v1/cases/{case['id']}/review"
    assert field_of(tenant.api.post(url, json={"reviewer_id": viewer.id})) == "reviewer_id"
    assert field_of(tenant.api.post(url, json={"reviewer_id": stranger.id}), 404) == "reviewer_id"
    assert field_of(tenant.api.post(url, json={"reviewer_id": "cnosuchuser000000000000000"}), 404) == "reviewer_id"
    for body in ({}, {"reviewer_id": 7}, {"reviewer_id": tester.id, "extra": 1}, {"reviewer_id": ""},
                 {"reviewer_id": "x" * 65}):
        assert_problem(tenant.api.post(url, json=body), 400)
    assert_problem(tenant.api.post(url, json={"reviewer_id": "a\u0000b"}), 400)
    tenant.api.post(url, json={"reviewer_id": tester.id})
    too_long = tenant.api.post(f"{url}/reject", json={"comment": "x" * 5001})
    assert field_of(too_long) == "comment"
    assert_problem(tenant.client("read").post(url, json={"reviewer_id": tester.id}), 403)
    assert_problem(tenant.api.post("/api/v1/cases/TC-999999/review/approve"), 404)
    assert field_of(tenant.api.patch(f"/api/v1/projects/{case['project_id']}", json={"require_review": "yes"})) \
        == "require_review"
    assert tenant.api.get(f"/api/v1/cases/{case['id']}").json()["data"]["review"]["state"] == "REQUESTED"


# ------------------------------------------------------------------------------------------------ web


def test_web_review_flow(tenant: Tenant) -> None:
    author, reviewer, viewer = add_member(tenant, "tester"), add_member(tenant, "tester"), add_member(tenant, "viewer")
    project = strict_project(tenant)
    as_author = web_as(tenant, author.email, author.password)
    created = as_author.post("/cases/new", data={"title": "Web review", "bdd_content": GHERKIN,
                                                 "project_id": project, "priority": "MEDIUM", "status": "DRAFT",
                                                 "automation_status": "MANUAL"}, headers=HTML)
    assert created.status_code == 303, text_of(created.text)[:500]
    code = created.headers["location"].rsplit("/", 1)[1]
    page = as_author.get(f"/cases/{code}", headers=HTML)
    assert page.status_code == 200 and every_post_form_has_csrf(page.text)
    assert "Request review" in page.text and "Not requested" in text_of(page.text)
    assert f'value="{reviewer.id}"' in page.text and f'value="{viewer.id}"' not in page.text  # testers and admins

    # the quick status change refuses READY with the reason
    quick = follow(as_author, as_author.post(f"/cases/{code}/status", data={"status": "READY"}, headers=HTML))
    assert any("requires review" in f for f in flashes(quick.text))
    # no reviewer chosen: the page again with the error; yourself: refused under require_review
    empty = as_author.post(f"/cases/{code}/review", data={"reviewer_id": ""}, headers=HTML)
    assert empty.status_code == 400 and 'id="f-reviewer_id-error"' in empty.text
    self_review = as_author.post(f"/cases/{code}/review", data={"reviewer_id": author.id}, headers=HTML)
    assert self_review.status_code == 400 and "someone else" in text_of(self_review.text)
    asked = follow(as_author, as_author.post(f"/cases/{code}/review", data={"reviewer_id": reviewer.id}, headers=HTML))
    assert f"{code}: review requested." in flashes(asked.text) and "Waiting for review" in text_of(asked.text)

    # the author cannot approve; the reviewer's blank rejection keeps the page with the error
    own = as_author.post(f"/cases/{code}/review/approve", data={}, headers=HTML)
    assert own.status_code == 400 and "another person" in text_of(own.text)
    as_reviewer = web_as(tenant, reviewer.email, reviewer.password)
    blank = as_reviewer.post(f"/cases/{code}/review/reject", data={"comment": "  "}, headers=HTML)
    assert blank.status_code == 400 and 'id="f-comment-error"' in blank.text
    rejected = follow(as_reviewer, as_reviewer.post(f"/cases/{code}/review/reject",
                                                    data={"comment": "Name the <b>user</b>"}, headers=HTML))
    assert "Changes requested" in text_of(rejected.text)
    assert "Name the &lt;b&gt;user&lt;/b&gt;" in rejected.text  # shown, escaped
    assert tenant.api.get(f"/api/v1/cases/{code}").json()["data"]["status"] == "DRAFT"
    approved = follow(as_reviewer, as_reviewer.post(f"/cases/{code}/review/approve", data={}, headers=HTML))
    assert f"{code} approved: it is READY." in flashes(approved.text)
    assert tenant.api.get(f"/api/v1/cases/{code}").json()["data"]["status"] == "READY"

    # the inbox: the reviewer was asked, the author told of both results (nobody of their own acts)
    reviewer_inbox = as_reviewer.get("/api/v1/notifications").json()["data"]
    assert [(n["kind"], n["link"], n["actor_id"]) for n in reviewer_inbox] == [
        ("review_request", f"/cases/{code}#review", author.id)]
    author_inbox = as_author.get("/api/v1/notifications").json()["data"]
    assert sorted((n["kind"], n["title"].split(":")[0], n["actor_id"]) for n in author_inbox) == [
        ("review_result", "Approved", reviewer.id), ("review_result", "Changes requested", reviewer.id)]

    # a viewer may not act (403), even with a valid CSRF token
    as_viewer = web_as(tenant, viewer.email, viewer.password)
    assert as_viewer.post(f"/cases/{code}/review", data={"reviewer_id": reviewer.id}).status_code == 403


def test_web_require_review_setting_is_for_admins(tenant: Tenant) -> None:
    project = tenant.create_project("Settings")["id"]
    tester = add_member(tenant, "tester")
    as_tester = web_as(tenant, tester.email, tester.password)
    page = as_tester.get(f"/projects/{project}/edit", headers=HTML)
    assert page.status_code == 200 and "Admins change this setting." in page.text
    assert as_tester.post(f"/projects/{project}/review", data={"require_review": "true"}).status_code == 403
    web = tenant.web()  # the owner
    done = follow(web, web.post(f"/projects/{project}/review", data={"require_review": "true"}, headers=HTML))
    assert "now requires review" in " ".join(flashes(done.text)) and "Stop requiring review" in done.text
    assert tenant.api.get(f"/api/v1/projects/{project}").json()["data"]["require_review"] is True
    follow(web, web.post(f"/projects/{project}/review", data={"require_review": "false"}, headers=HTML))
    assert tenant.api.get(f"/api/v1/projects/{project}").json()["data"]["require_review"] is False


def test_imports_and_copies_under_require_review_arrive_draft(tenant: Tenant) -> None:
    """An imported or cloned READY case has not been reviewed: it arrives DRAFT; an import's edit of an
    approved case asks for review again."""
    from tests.test_case_import import FEATURE, csv_of, upload

    reviewer = add_member(tenant, "tester")
    project = strict_project(tenant)
    row = ["IMP-1", "Imported", "", "READY", "MEDIUM", "", "false", "MANUAL", "", "", FEATURE]
    imported = upload(tenant, project, csv_of(row))
    assert imported.status_code in (200, 201), imported.text
    case = tenant.api.get("/api/v1/cases/IMP-1").json()["data"]
    assert case["status"] == "DRAFT"
    # an update by import may not make it READY either
    assert upload(tenant, project, csv_of([*row[:1], "Imported again", *row[2:]])).status_code in (200, 201)
    assert tenant.api.get("/api/v1/cases/IMP-1").json()["data"]["status"] == "DRAFT"
    # approved, then edited by an import: REQUESTED again and DRAFT
    tenant.api.post("/api/v1/cases/IMP-1/review", json={"reviewer_id": reviewer.id})
    assert api_of(tenant, reviewer).post("/api/v1/cases/IMP-1/review/approve").status_code == 200
    assert upload(tenant, project, csv_of([*row[:1], "Imported thrice", *row[2:]])).status_code in (200, 201)
    after = tenant.api.get("/api/v1/cases/IMP-1").json()["data"]
    assert (after["title"], after["status"], after["review"]["state"]) == ("Imported thrice", "DRAFT", "REQUESTED")

    # a bulk clone of an approved READY case is a new, unreviewed DRAFT
    tenant.api.post("/api/v1/cases/IMP-1/review", json={"reviewer_id": reviewer.id})
    api_of(tenant, reviewer).post("/api/v1/cases/IMP-1/review/approve")
    web = tenant.web()
    web.post("/cases/bulk", data={"ids": [after["id"]], "op": "clone"}, headers=HTML)
    copies = [c for c in tenant.api.get("/api/v1/cases", params={"project_id": project}).json()["data"]
              if c["id"] != after["id"]]
    assert [(c["status"], c["review"]["state"]) for c in copies] == [("DRAFT", "NONE")]
