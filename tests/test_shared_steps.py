"""Shared steps (issue 26): a project's named lists of Gherkin steps, used by cases through the step
line `* shared: <name>`, expanded in the checklist (step_results index the expanded list), with
"used by", a new case version per edit, and bad input refused whole. Both databases."""

from __future__ import annotations

import html
from typing import Any

import httpx

from tests.conftest import Tenant, assert_problem, connect_db
from tests.team_helpers import add_member, web_as
from tests.test_runs import new_run
from tests.web_helpers import HTML, every_post_form_has_csrf, field_error, flashes, follow
from tms.library.gherkin.service import EXPANDED_STEPS_LIMIT

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)

LOGIN = "Given I open the shop\nAnd I sign in as \"ann\"\n"


def define(api: httpx.Client, project: str, name: str, steps: str) -> dict[str, Any]:
    response = api.post("/api/v1/shared-steps", json={"project_id": project, "name": name, "steps": steps})
    assert response.status_code == 201, response.text
    return response.json()["data"]


def case_using(api: httpx.Client, project: str, *names: str, title: str = "Checkout") -> httpx.Response:
    uses = "".join(f"    * shared: {name}\n" for name in names)
    text = f"Feature: Shop\n  Scenario: {title}\n    Given a cart\n{uses}    Then I pay\n"
    return api.post("/api/v1/cases", json={"project_id": project, "title": title, "bdd_content": text})


def problem(response: httpx.Response, status: int = 400) -> dict[str, Any]:
    body = assert_problem(response, status)
    return body


def field_of(body: dict[str, Any]) -> str:
    return next((error["field"] for error in body.get("errors", [])), body.get("field", ""))


def count_rows(tenant: Tenant, table: str) -> int:
    with connect_db(tenant.server.db_path) as conn:
        return int(conn.execute(f"SELECT COUNT(*) FROM {table} WHERE tenant_id = ?", (tenant.id,)).fetchone()[0])


def test_define_list_get_and_used_by(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    login = define(tenant.api, project, "Login", LOGIN)
    assert login["name"] == "Login" and login["steps"] == LOGIN and login["version"] == 1
    assert login["used_by"] == [] and login["used_by_total"] == 0
    define(tenant.api, project, "Add item", "When I add \"tea\"\n")
    listed = tenant.api.get("/api/v1/shared-steps", params={"project_id": project}).json()
    assert [s["name"] for s in listed["data"]] == ["Add item", "Login"]
    assert listed["pagination"]["total"] == 2

    first = case_using(tenant.api, project, "Login", title="One")
    assert first.status_code == 201, first.text
    second = case_using(tenant.api, project, "Add item", title="Two").json()["data"]
    got = tenant.api.get(f"/api/v1/shared-steps/{login['id']}").json()["data"]
    assert [c["code"] for c in got["used_by"]] == [first.json()["data"]["code"]]
    assert got["used_by_total"] == 1
    # the case's text stays Gherkin as written
    assert "* shared: Login" in first.json()["data"]["bdd_content"]

    # a case that stops naming it leaves "used by"; one that starts, joins
    changed = tenant.api.patch(f"/api/v1/cases/{second['id']}", json={
        "bdd_content": "Feature: Shop\n  Scenario: Two\n    * shared: Login\n"})
    assert changed.status_code == 200, changed.text
    tenant.api.patch(f"/api/v1/cases/{first.json()['data']['id']}", json={
        "bdd_content": "Feature: Shop\n  Scenario: One\n    Given nothing shared\n"})
    got = tenant.api.get(f"/api/v1/shared-steps/{login['id']}").json()["data"]
    assert [c["id"] for c in got["used_by"]] == [second["id"]]


def test_bad_input_is_a_400_naming_the_field_and_writes_nothing(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    define(tenant.api, project, "Login", LOGIN)
    url = "/api/v1/shared-steps"
    cases = [
        ({"project_id": project, "name": "X", "steps": "Scenario: not a step\n  Given a\n"}, "steps"),
        ({"project_id": project, "name": "X", "steps": "just words\nGiven a\n"}, "steps"),
        ({"project_id": project, "name": "X", "steps": "# only a comment\n"}, "steps"),
        ({"project_id": project, "name": "X", "steps": "Given a\n  | a |\n  | b | c |\n"}, "steps"),
        ({"project_id": project, "name": "X", "steps": "* shared: Nope\n"}, "steps"),
        ({"project_id": project, "name": "", "steps": "Given a\n"}, "name"),
        ({"project_id": project, "name": "two\nlines", "steps": "Given a\n"}, "name"),
        ({"project_id": project, "name": "X", "steps": "Given a\n", "extra": 1}, "extra"),
        ({"project_id": project, "name": "X", "steps": 5}, "steps"),
        ({"project_id": project, "name": "X", "steps": "Given a\x00b\n"}, "steps"),
        ({"project_id": project, "name": "X", "steps": "Given a\n" * 5_000}, "steps"),
    ]
    for body, field in cases:
        response = tenant.api.post(url, json=body)
        assert response.status_code == 400, (body, response.text)
        assert field in response.text, (field, response.text)
    # a name already used in the project: 409 naming it
    taken = tenant.api.post(url, json={"project_id": project, "name": "Login", "steps": "Given b\n"})
    assert problem(taken, 409) and "Login" in taken.text
    # another project (or tenant) may use the same name; an unknown project is a 404
    other = tenant.create_project()["id"]
    define(tenant.api, other, "Login", "Given elsewhere\n")
    assert tenant.api.post(url, json={"project_id": "nope", "name": "Y", "steps": "Given a\n"}).status_code == 404
    assert count_rows(tenant, "shared_steps") == 2


def test_a_shared_step_that_uses_itself_is_refused(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    a = define(tenant.api, project, "A", "Given a\n")
    define(tenant.api, project, "B", "Given b\n* shared: A\n")
    c = define(tenant.api, project, "C", "* shared: B\nThen c\n")
    direct = tenant.api.patch(f"/api/v1/shared-steps/{a['id']}", json={"steps": "Given a\n* shared: A\n"})
    body = problem(direct)
    assert "steps" in body["detail"] and "uses itself" in body["detail"], body
    through = tenant.api.patch(f"/api/v1/shared-steps/{a['id']}", json={"steps": "Given a\n* shared: C\n"})
    body = problem(through)
    assert "A → C → B → A" in body["detail"], body
    # nothing half-written
    assert tenant.api.get(f"/api/v1/shared-steps/{a['id']}").json()["data"]["steps"] == "Given a\n"
    assert tenant.api.get(f"/api/v1/shared-steps/{a['id']}").json()["data"]["version"] == 1
    # nested use is fine, and a case using C is used_by of A (through B)
    case = case_using(tenant.api, project, "C").json()["data"]
    got = tenant.api.get(f"/api/v1/shared-steps/{a['id']}").json()["data"]
    assert [u["id"] for u in got["used_by"]] == [case["id"]]
    assert c["version"] == 1


def test_case_save_refuses_unknown_names_and_oversize_expansions(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    unknown = case_using(tenant.api, project, "Nope")
    body = problem(unknown)
    assert "bdd_content" in body["detail"] and "no shared step named 'Nope' in this project" in body["detail"]
    # a case in no project cannot use them
    loose = tenant.api.post("/api/v1/cases", json={"title": "x", "bdd_content":
                                                   "Feature: F\n  Scenario: S\n    * shared: Login\n"})
    assert "bdd_content" in problem(loose)["detail"]
    # the step limit applies to the expanded checklist: 1,100 x 2 > 2,000
    many = "".join(f"* s{i}\n" for i in range(1_100))
    define(tenant.api, project, "Many", many)
    oversize = case_using(tenant.api, project, "Many", "Many")
    body = problem(oversize)
    assert "bdd_content" in body["detail"] and f"{EXPANDED_STEPS_LIMIT:,}" in body["detail"], body
    fits = case_using(tenant.api, project, "Many")
    assert fits.status_code == 201, fits.text
    # growing the shared step past the limit for that case is refused, naming the case
    steps_id = tenant.api.get("/api/v1/shared-steps", params={"project_id": project}).json()["data"][0]["id"]
    grown = tenant.api.patch(f"/api/v1/shared-steps/{steps_id}",
                             json={"steps": "".join(f"* s{i}\n" for i in range(2_000))})
    body = problem(grown)
    assert fits.json()["data"]["code"] in body["detail"] and "steps" in field_of(body) + body["detail"]
    assert count_rows(tenant, "test_cases") == 1
    # moving a case to a project without that shared step is refused too
    other = tenant.create_project()["id"]
    moved = tenant.api.patch(f"/api/v1/cases/{fits.json()['data']['id']}", json={"project_id": other})
    assert "no shared step named 'Many'" in problem(moved)["detail"]


def test_editing_makes_a_new_version_of_each_case_using_it(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    login = define(tenant.api, project, "Login", LOGIN)
    wrapper = define(tenant.api, project, "Start", "* shared: Login\nAnd I open the cart\n")
    direct = case_using(tenant.api, project, "Login", title="Direct").json()["data"]
    nested = case_using(tenant.api, project, "Start", title="Nested").json()["data"]
    bystander = tenant.api.post("/api/v1/cases", json={
        "project_id": project, "title": "Plain", "bdd_content": "Feature: F\n  Scenario: S\n    Given x\n",
    }).json()["data"]

    edited = tenant.api.patch(f"/api/v1/shared-steps/{login['id']}", json={"steps": "Given I open the shop\n"})
    assert edited.status_code == 200, edited.text
    data = edited.json()["data"]
    assert data["version"] == 2
    assert sorted(c["id"] for c in data["used_by"]) == sorted([direct["id"], nested["id"]])
    for case in (direct, nested):
        versions = tenant.api.get(f"/api/v1/cases/{case['id']}/versions").json()["data"]
        assert [v["version"] for v in versions] == [2, 1]
        assert tenant.api.get(f"/api/v1/cases/{case['id']}").json()["data"]["version"] == 2
    assert tenant.api.get(f"/api/v1/cases/{bystander['id']}").json()["data"]["version"] == 1

    # a rename rewrites the `* shared:` lines naming it (cases and shared steps), as new versions
    renamed = tenant.api.patch(f"/api/v1/shared-steps/{login['id']}", json={"name": "Sign in"})
    assert renamed.status_code == 200, renamed.text
    text = tenant.api.get(f"/api/v1/cases/{direct['id']}").json()["data"]["bdd_content"]
    assert "* shared: Sign in" in text and "shared: Login" not in text
    assert tenant.api.get(f"/api/v1/cases/{direct['id']}").json()["data"]["version"] == 3
    outer = tenant.api.get(f"/api/v1/shared-steps/{wrapper['id']}").json()["data"]
    assert outer["steps"].startswith("* shared: Sign in\n") and outer["version"] == 2
    assert tenant.api.get(f"/api/v1/cases/{nested['id']}").json()["data"]["version"] == 3
    # an edit that changes nothing makes no version
    same = tenant.api.patch(f"/api/v1/shared-steps/{login['id']}", json={"name": "Sign in"})
    assert same.json()["data"]["version"] == 3
    assert tenant.api.get(f"/api/v1/cases/{direct['id']}").json()["data"]["version"] == 3


def test_delete_refuses_a_used_one_listing_its_users(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    login = define(tenant.api, project, "Login", LOGIN)
    wrapper = define(tenant.api, project, "Start", "* shared: Login\n")
    case = case_using(tenant.api, project, "Start").json()["data"]
    refused = tenant.api.delete(f"/api/v1/shared-steps/{wrapper['id']}")
    assert case["code"] in problem(refused, 409)["detail"]
    assert case["code"] in problem(tenant.api.delete(f"/api/v1/shared-steps/{login['id']}"), 409)["detail"]
    tenant.api.delete(f"/api/v1/cases/{case['id']}")
    # no case any more, but another shared step uses it
    assert "'Start'" in problem(tenant.api.delete(f"/api/v1/shared-steps/{login['id']}"), 409)["detail"]
    assert tenant.api.delete(f"/api/v1/shared-steps/{wrapper['id']}").status_code == 204
    assert tenant.api.delete(f"/api/v1/shared-steps/{login['id']}").status_code == 204
    assert tenant.api.get(f"/api/v1/shared-steps/{login['id']}").status_code == 404
    assert count_rows(tenant, "shared_step_uses") == 0 and count_rows(tenant, "shared_step_nesting") == 0


def test_execution_expands_shared_steps_and_step_results_index_them(tenant: Tenant) -> None:
    project_row = tenant.create_project()
    project = project_row["id"]
    define(tenant.api, project, "Login", LOGIN)
    case = case_using(tenant.api, project, "Login").json()["data"]
    run = new_run(tenant, project_row, test_case_ids=[case["id"]])
    result = tenant.api.get(f"/api/v1/runs/{run['id']}/results").json()["data"][0]
    # the expanded checklist: Given a cart, the two shared steps, Then I pay = 4 steps
    url = f"/api/v1/results/{result['id']}"
    steps = [{"index": 1, "status": "PASSED"}, {"index": 3, "status": "FAILED", "comment": "no sign in"},
             {"index": 4, "status": "PASSED"}]
    saved = tenant.api.patch(url, json={"status": "FAILED", "step_results": steps})
    assert saved.status_code == 200, saved.text
    beyond = tenant.api.patch(url, json={"step_results": [{"index": 5, "status": "PASSED"}]})
    assert "4 steps" in problem(beyond)["detail"]
    # the execution view lists the expanded steps, marked as from the shared step
    page = tenant.web().get(f"/results/{result['id']}/execute")
    assert page.status_code == 200, page.text[:300]
    assert 'I sign in as "ann"' in page.text or "I sign in as &#34;ann&#34;" in page.text
    assert "from-shared" in page.text and "Login" in page.text
    assert "* shared: Login" not in page.text


def test_another_tenant_sees_none_and_cannot_use_them(tenant: Tenant, other_tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    define(tenant.api, project, "Login", LOGIN)
    assert other_tenant.api.get("/api/v1/shared-steps", params={"project_id": project}).status_code == 404
    # a same-named shared step of another tenant's project does not resolve in one's own
    theirs = other_tenant.create_project()["id"]
    assert "no shared step named 'Login'" in problem(case_using(other_tenant.api, theirs, "Login"))["detail"]


def test_viewers_read_and_testers_write(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    step = define(tenant.api, project, "Login", LOGIN)
    reader = tenant.client("read")
    assert reader.get(f"/api/v1/shared-steps/{step['id']}").status_code == 200
    assert reader.post("/api/v1/shared-steps", json={"project_id": project, "name": "X",
                                                     "steps": "Given a\n"}).status_code == 403
    assert reader.patch(f"/api/v1/shared-steps/{step['id']}", json={"name": "Y"}).status_code == 403
    assert reader.delete(f"/api/v1/shared-steps/{step['id']}").status_code == 403


# ------------------------------------------------------------------------------------------- web UI


def test_pages_add_edit_with_confirm_and_delete(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    web = tenant.web()
    token = web.cookies.get("csrftoken", "")
    listing = web.get(f"/projects/{project}/shared-steps", headers=HTML)
    assert listing.status_code == 200 and every_post_form_has_csrf(listing.text)
    bad = web.post(f"/projects/{project}/shared-steps", data={"_csrf_token": token, "name": "Login",
                                                              "steps": "Scenario: nope\n"})
    assert bad.status_code == 400 and "only step lines" in (field_error(bad.text, "steps") or "")
    assert "Scenario: nope" in bad.text  # the input is kept
    added = web.post(f"/projects/{project}/shared-steps", data={"_csrf_token": token, "name": "Login",
                                                                "steps": "Given I open the shop\r\n"})
    page = follow(web, added)
    assert "Shared step “Login” added." in flashes(page.text)
    step = tenant.api.get("/api/v1/shared-steps", params={"project_id": project}).json()["data"][0]
    assert step["steps"] == "Given I open the shop\n"
    case = case_using(tenant.api, project, "Login").json()["data"]
    page = web.get(f"/shared-steps/{step['id']}", headers=HTML)
    assert case["code"] in page.text and "Used by 1 case" in page.text

    # a change of a used one asks first, listing the cases, and keeps the input
    first = web.post(f"/shared-steps/{step['id']}", data={"_csrf_token": token, "name": "Login",
                                                          "steps": "Given I open the shop\nAnd I sign in\n"})
    assert first.status_code == 200 and "Save and make 1 new case version" in first.text
    assert case["code"] in first.text and "And I sign in" in first.text and every_post_form_has_csrf(first.text)
    assert tenant.api.get(f"/api/v1/shared-steps/{step['id']}").json()["data"]["version"] == 1
    confirmed = web.post(f"/shared-steps/{step['id']}", data={
        "_csrf_token": token, "name": "Login", "steps": "Given I open the shop\nAnd I sign in\n", "confirmed": "yes"})
    assert "1 case(s) got a new version" in " ".join(flashes(follow(web, confirmed).text))
    assert tenant.api.get(f"/api/v1/cases/{case['id']}").json()["data"]["version"] == 2

    # deleting a used one: 409 on the page, naming the case
    refused = web.post(f"/shared-steps/{step['id']}/delete", data={"_csrf_token": token})
    assert refused.status_code == 409 and case["code"] in refused.text
    tenant.api.delete(f"/api/v1/cases/{case['id']}")
    gone = follow(web, web.post(f"/shared-steps/{step['id']}/delete", data={"_csrf_token": token}))
    assert "deleted" in " ".join(flashes(gone.text))
    assert tenant.api.get(f"/api/v1/shared-steps/{step['id']}").status_code == 404


def test_case_page_shows_expanded_steps_and_the_editor_offers_names(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    define(tenant.api, project, "Login", LOGIN)
    case = case_using(tenant.api, project, "Login").json()["data"]
    web = tenant.web()
    page = web.get(f"/cases/{case['code']}", headers=HTML)
    assert page.status_code == 200
    assert "I open the shop" in page.text and 'class="ln shared"' in page.text
    # only the shared step's lines are marked
    marked = page.text.count('class="ln shared"')
    assert marked == 4, marked  # the two steps and the two marker lines
    edit = web.get(f"/cases/{case['code']}/edit", headers=HTML)
    assert '<datalist id="shared-step-names"><option value="Login">' in edit.text
    # the form's save names an unknown shared step next to the Gherkin field, keeping the text
    token = web.cookies.get("csrftoken", "")
    bad = web.post(f"/cases/{case['code']}/edit", data={
        "_csrf_token": token, "title": "Checkout", "code": case["code"], "project_id": project, "status": "DRAFT",
        "priority": "MEDIUM", "automation_status": "MANUAL",
        "bdd_content": "Feature: F\n  Scenario: S\n    * shared: Logout\n"})
    shown = html.unescape(bad.text)
    assert bad.status_code == 400 and "no shared step named 'Logout'" in shown and "* shared: Logout" in shown


def test_a_viewer_reads_but_cannot_write(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    step = define(tenant.api, project, "Login", LOGIN)
    viewer = add_member(tenant, "viewer")
    web = web_as(tenant, viewer.email, viewer.password)
    page = web.get(f"/shared-steps/{step['id']}", headers=HTML)
    assert page.status_code == 200 and "I open the shop" in page.text and "Delete shared step" not in page.text
    refused = web.post(f"/shared-steps/{step['id']}", data={"_csrf_token": web.cookies.get("csrftoken", ""),
                                                            "name": "X", "steps": "Given x\n", "confirmed": "yes"})
    assert refused.status_code == 403


def test_bulk_move_clone_and_import_keep_the_links(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    other = tenant.create_project()["id"]
    folder = tenant.api.post("/api/v1/sections", json={"project_id": other, "name": "Elsewhere"}).json()["data"]
    login = define(tenant.api, project, "Login", LOGIN)
    case = case_using(tenant.api, project, "Login").json()["data"]
    web = tenant.web()
    # moving it to a project without "Login": refused whole, the case stays
    moved = follow(web, web.post("/cases/bulk", data={"op": f"move:{folder['id']}", "ids": [case["id"]]}))
    assert "no shared step named 'Login'" in html.unescape(" ".join(flashes(moved.text)))
    assert tenant.api.get(f"/api/v1/cases/{case['id']}").json()["data"]["project_id"] == project
    # once the other project has one of that name, the move links the case to it
    theirs = define(tenant.api, other, "Login", "Given the other login\n")
    follow(web, web.post("/cases/bulk", data={"op": f"move:{folder['id']}", "ids": [case["id"]]}))
    assert tenant.api.get(f"/api/v1/shared-steps/{theirs['id']}").json()["data"]["used_by_total"] == 1
    assert tenant.api.get(f"/api/v1/shared-steps/{login['id']}").json()["data"]["used_by_total"] == 0
    # a clone uses it too
    follow(web, web.post("/cases/bulk", data={"op": "clone:", "ids": [case["id"]]}))
    assert tenant.api.get(f"/api/v1/shared-steps/{theirs['id']}").json()["data"]["used_by_total"] == 2
    # an import row naming an unknown one: nothing imported, the 400 names bdd_content
    body = (b"title,bdd_content\r\nImported,\"Feature: F\n  Scenario: S\n    * shared: Nope\n\"\r\n")
    imported = tenant.api.post("/api/v1/cases/import", params={"project_id": project, "format": "csv"},
                               files={"file": ("cases.csv", body, "text/csv")})
    assert imported.status_code in (400, 422) and "Nope" in imported.text, imported.text
    assert tenant.api.get("/api/v1/cases", params={"project_id": project}).json()["pagination"]["total"] == 0
