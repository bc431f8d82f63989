"""Team work in the web UI: members, invitations, resets, account; runs, assignment, execution, audit."""

from __future__ import annotations

import re

from tests.conftest import Tenant, connect_db
from tests.team_helpers import add_member, web_as
from tests.test_result_api import GHERKIN
from tests.web_helpers import every_post_form_has_csrf, field_error, text_of

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)


def _path(url: str) -> str:
    return "/" + url.split("://", 1)[1].split("/", 1)[1]


def _issued(owner, response) -> str:
    assert response.status_code == 303, response.text
    page = owner.get("/settings/team").text
    match = re.search(r'id="issued-link"[^>]*>([^<]+)</code>', page)
    assert match, text_of(page)[:500]
    return _path(match.group(1).strip())


def test_invite_accept_sign_in_and_the_link_works_once(tenant: Tenant) -> None:
    owner = tenant.web()
    page = owner.get("/settings/team")
    assert page.status_code == 200 and every_post_form_has_csrf(page.text)
    bad = owner.post("/settings/team/invite", data={"email": "nope", "role": "boss"})
    assert bad.status_code == 400
    assert field_error(bad.text, "email") and field_error(bad.text, "role")  # both named at once
    assert 'value="nope"' in bad.text
    link = _issued(owner, owner.post("/settings/team/invite", data={"email": "new.tester@example.com",
                                                                    "role": "tester"}))
    assert owner.get("/settings/team").text.count("issued-link") == 0  # shown once
    visitor = web_as_anonymous(tenant)
    form = visitor.get(link)
    assert form.status_code == 200 and "new.tester@example.com" in form.text
    assert form.headers["cache-control"] == "no-store"
    token = visitor.cookies.get("csrftoken")
    wrong = visitor.post(link, data={"name": "", "password": "short", "password_confirm": "x", "_csrf_token": token})
    assert wrong.status_code == 400 and field_error(wrong.text, "name") and field_error(wrong.text, "password")
    ok = visitor.post(link, data={"name": "Tess Tester", "password": "a long password",
                                  "password_confirm": "a long password", "_csrf_token": token})
    assert ok.status_code == 303
    assert visitor.get("/my-work").status_code == 200  # signed in right away
    again = web_as_anonymous(tenant).get(link)
    assert again.status_code == 404
    users = {u["email"]: u for u in tenant.api.get("/api/v1/users").json()["data"]}
    joined = users["new.tester@example.com"]
    assert joined["role"] == "tester" and joined["name"] == "Tess Tester"
    web_as(tenant, "new.tester@example.com", "a long password")
    with connect_db(tenant.server.db_path) as conn:
        stored = conn.execute("SELECT token_sha256, used_at FROM user_links WHERE email = ?",
                              ("new.tester@example.com",)).fetchone()
    assert stored[1] and link.rsplit("/", 1)[1].encode() not in stored[0]  # hashed, used


def web_as_anonymous(tenant: Tenant):
    client = tenant.server.http_client(timeout=30, follow_redirects=False)
    client.get("/login")
    return client


def test_roles_deactivation_and_the_owner_cannot_be_touched(tenant: Tenant) -> None:
    owner = tenant.web()
    admin = add_member(tenant, "admin")
    tester = add_member(tenant, "tester")
    admin_web = web_as(tenant, admin.email, admin.password)
    tester_web = web_as(tenant, tester.email, tester.password)
    owner_id = next(u["id"] for u in tenant.api.get("/api/v1/users").json()["data"] if u["role"] == "owner")
    # an admin cannot demote, deactivate or reset the owner
    for path, data in ((f"/settings/team/{owner_id}/role", {"role": "viewer"}),
                       (f"/settings/team/{owner_id}/active", {"active": "0"}),
                       (f"/settings/team/{owner_id}/reset", {})):
        admin_web.post(path, data=data)
    owner_row = next(u for u in tenant.api.get("/api/v1/users").json()["data"] if u["id"] == owner_id)
    assert owner_row["role"] == "owner" and owner_row["active"] is True
    with connect_db(tenant.server.db_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM user_links WHERE user_id = ?", (owner_id,)).fetchone()[0] == 0
    # a tester may not manage the team at all
    assert tester_web.get("/settings/team").status_code == 403
    assert tester_web.post(f"/settings/team/{admin.id}/role", data={"role": "viewer"}).status_code == 403
    # deactivation ends the tester's session at once
    assert tester_web.get("/runs").status_code == 200
    owner.post(f"/settings/team/{tester.id}/active", data={"active": "0"})
    assert tester_web.get("/runs").status_code in (302, 303, 307)
    owner.post(f"/settings/team/{admin.id}/role", data={"role": "viewer"})
    # a demotion below admin ends the demoted user's sessions: back to the sign-in page
    assert admin_web.get("/settings/team").status_code in (302, 303, 307)
    actions = [e["action"] for e in tenant.api.get("/api/v1/audit", params={"entity_type": "user"}).json()["data"]]
    assert "user.deactivated" in actions and "user.role_changed" in actions


def test_reset_link_and_account_page(tenant: Tenant) -> None:
    owner = tenant.web()
    viewer = add_member(tenant, "viewer")
    link = _issued(owner, owner.post(f"/settings/team/{viewer.id}/reset"))
    anonymous = web_as_anonymous(tenant)
    token = anonymous.cookies.get("csrftoken")
    assert anonymous.post(link, data={"password": "brand new pass", "password_confirm": "brand new pass",
                                      "_csrf_token": token}).status_code == 303
    assert web_as_anonymous(tenant).get(link).status_code == 404  # single use
    viewer_web = web_as(tenant, viewer.email, "brand new pass")
    page = viewer_web.get("/account")
    assert page.status_code == 200
    wrong = viewer_web.post("/account", data={"name": "Vi", "old_password": "bad", "new_password": "x",
                                              "confirm": "y"})
    assert wrong.status_code == 400
    assert field_error(wrong.text, "old_password") and field_error(wrong.text, "new_password")
    assert 'value="Vi"' in wrong.text
    ok = viewer_web.post("/account", data={"name": "Vivian", "old_password": "brand new pass",
                                           "new_password": "another pass 2", "confirm": "another pass 2"})
    assert ok.status_code == 303
    # a fresh session id after a password change: the old cookie no longer signs in
    assert viewer_web.get("/account").status_code == 200
    web_as(tenant, viewer.email, "another pass 2")
    names = {u["email"]: u["name"] for u in tenant.api.get("/api/v1/users").json()["data"]}
    assert names[viewer.email] == "Vivian"


def _cases(tenant: Tenant, project: dict, n: int) -> list[dict]:
    out = []
    for i in range(n):
        response = tenant.api.post("/api/v1/cases", json={"title": f"Checkout {i}", "bdd_content": GHERKIN,
                                                          "project_id": project["id"], "tags": ["smoke"]})
        out.append(response.json()["data"])
    return out


def test_new_run_assign_execute_and_my_work(tenant: Tenant) -> None:
    owner = tenant.web()
    tester = add_member(tenant, "tester")
    project = tenant.create_project("Shop")
    _cases(tenant, project, 4)
    page = owner.get("/runs/new", params={"project_id": project["id"], "tag": "smoke"})
    assert page.status_code == 200 and every_post_form_has_csrf(page.text)
    bad = owner.post("/runs/new", data={"name": "", "project_id": "", "f_tag": "smoke"})
    assert bad.status_code == 400 and field_error(bad.text, "name") and field_error(bad.text, "project_id")
    created = owner.post("/runs/new", data={"name": "Regression", "project_id": project["id"], "environment": "qa",
                                            "all_matching": "1", "f_tag": "smoke",
                                            "f_project_id": project["id"]})
    assert created.status_code == 303, created.text
    run_id = created.headers["location"].rsplit("/", 1)[1]
    results = tenant.api.get(f"/api/v1/runs/{run_id}/results").json()["data"]
    assert len(results) == 4 and {r["status"] for r in results} == {"UNKNOWN"}
    half = [r["id"] for r in results[:2]]
    assigned = owner.post(f"/runs/{run_id}/bulk", data={"result_ids": half, "assignee_id": tester.id,
                                                        "action": "assign"})
    assert assigned.status_code == 303
    run_page = owner.get(f"/runs/{run_id}", params={"assignee": tester.id})
    assert run_page.status_code == 200 and run_page.text.count('name="result_ids"') == 2
    tester_web = web_as(tenant, tester.email, tester.password)
    work = tester_web.get("/my-work")
    assert all(f"/results/{rid}/execute" in work.text for rid in half)
    view = tester_web.get(f"/results/{half[0]}/execute")
    assert view.status_code == 200 and "Given" in view.text and "a signed-in shopper" in view.text
    assert "I pay with visa" in view.text and "I pay with amex" in view.text  # outline rows expanded
    assert "<script>" not in view.text  # no inline script (strict CSP)
    loaded = re.search(r'name="loaded_updated_at" value="([^"]+)"', view.text).group(1)
    bad = tester_web.post(f"/results/{half[0]}/execute", data={"status": "", "bug_ticket_url": "javascript:x",
                                                               "duration": "-3", "loaded_updated_at": loaded,
                                                               "comment": "kept"})
    assert bad.status_code == 400
    for field in ("status", "bug_ticket_url", "duration"):
        assert field_error(bad.text, field), field
    assert "kept" in bad.text
    saved = tester_web.post(f"/results/{half[0]}/execute", data={
        "status": "FAILED", "step_1": "PASSED", "step_2": "FAILED", "note_2": "declined", "comment": "Amex fails",
        "bug_ticket_key": "PAY-1", "bug_ticket_url": "https://bugs.example.com/PAY-1", "duration": "1m 1s",
        "loaded_updated_at": loaded, "next": "1", "assignee_id": tester.id})
    assert saved.status_code == 303 and saved.headers["location"] == f"/results/{half[1]}/execute"
    stored = tenant.api.get(f"/api/v1/results/{half[0]}").json()["data"]
    assert stored["step_results"] == [{"index": 1, "status": "PASSED"},
                                      {"index": 2, "status": "FAILED", "comment": "declined"}]
    assert stored["status"] == "FAILED" and stored["duration_ms"] == 61000
    # someone else saves over it with the stale version: the later save wins and is told
    again = owner.post(f"/results/{half[0]}/execute", data={"status": "PASSED", "loaded_updated_at": loaded})
    assert again.status_code == 303
    notice = owner.get(again.headers["location"]).text
    assert "had changed this result" in text_of(notice)
    assert tenant.api.get(f"/api/v1/results/{half[0]}").json()["data"]["status"] == "PASSED"
    # the viewer sees but cannot change
    viewer = add_member(tenant, "viewer")
    viewer_web = web_as(tenant, viewer.email, viewer.password)
    assert viewer_web.get(f"/results/{half[1]}/execute").status_code == 200
    assert viewer_web.post(f"/results/{half[1]}/execute", data={"status": "PASSED"}).status_code == 403
    # complete with a summary; the audit page shows who did what
    done = owner.post(f"/runs/{run_id}/complete", data={"summary": "Amex broken, rest fine"})
    assert done.status_code == 303
    run = tenant.api.get(f"/api/v1/runs/{run_id}").json()["data"]
    assert run["status"] == "COMPLETED" and run["summary"] == "Amex broken, rest fine"
    audit_page = owner.get("/settings/audit", params={"entity_type": "run"})
    assert audit_page.status_code == 200
    assert "run.completed" in audit_page.text and "run.results_assigned" in audit_page.text
    assert "Regression" in owner.get(f"/runs/{run_id}").text


def test_add_and_remove_cases_of_an_open_run(tenant: Tenant) -> None:
    owner = tenant.web()
    project = tenant.create_project("Shop")
    cases = _cases(tenant, project, 3)
    run = tenant.api.post("/api/v1/runs", json={"name": "r", "project_id": project["id"],
                                                "test_case_ids": [cases[0]["id"]]}).json()["data"]
    page = owner.get(f"/runs/{run['id']}/add")
    assert page.status_code == 200 and page.text.count('name="case_ids"') == 2  # the one in the run is ticked off
    assert owner.post(f"/runs/{run['id']}/add", data={}).status_code == 400
    added = owner.post(f"/runs/{run['id']}/add", data={"case_ids": [cases[1]["id"], cases[2]["id"]]})
    assert added.status_code == 303
    results = tenant.api.get(f"/api/v1/runs/{run['id']}/results").json()["data"]
    assert len(results) == 3
    removed = owner.post(f"/runs/{run['id']}/bulk", data={"result_ids": [results[0]["id"]], "action": "remove"})
    assert removed.status_code == 303
    assert tenant.api.get(f"/api/v1/runs/{run['id']}").json()["data"]["counts"]["total"] == 2


def test_new_run_from_a_section_in_a_milestone(tenant: Tenant) -> None:
    owner = tenant.web()
    project = tenant.create_project("Shop")
    section = tenant.api.post("/api/v1/sections", json={"project_id": project["id"], "name": "Checkout"})
    assert section.status_code == 201, section.text
    section_id = section.json()["data"]["id"]
    inside = [tenant.api.post("/api/v1/cases", json={"title": f"In {i}", "bdd_content": GHERKIN,
                                                     "project_id": project["id"], "section_id": section_id}
                              ).json()["data"] for i in range(2)]
    tenant.api.post("/api/v1/cases", json={"title": "Outside", "bdd_content": GHERKIN, "project_id": project["id"]})
    milestone = tenant.api.post("/api/v1/milestones", json={"project_id": project["id"], "name": "2.4"})
    assert milestone.status_code == 201, milestone.text
    milestone_id = milestone.json()["data"]["id"]
    page = owner.get("/runs/new", params={"project_id": project["id"], "section_id": section_id,
                                          "milestone_id": milestone_id})
    assert page.status_code == 200 and page.text.count('name="case_ids"') == 2
    created = owner.post("/runs/new", data={"name": "Checkout pass", "project_id": project["id"],
                                            "milestone_id": milestone_id, "all_matching": "1",
                                            "f_project_id": project["id"], "f_section_id": section_id})
    assert created.status_code == 303, created.text
    run_id = created.headers["location"].rsplit("/", 1)[1]
    run = tenant.api.get(f"/api/v1/runs/{run_id}").json()["data"]
    assert run["milestone_id"] == milestone_id and run["counts"]["total"] == 2
    codes = {r["test_case_code"] for r in tenant.api.get(f"/api/v1/runs/{run_id}/results").json()["data"]}
    assert codes == {c["code"] for c in inside}
