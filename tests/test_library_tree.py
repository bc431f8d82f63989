"""The organised library over the API: sections (tree, moves, deletes), case versions, search and filters."""

from __future__ import annotations

from typing import Any

from tests.conftest import Tenant, assert_problem

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)

FEATURE = (
    "Feature: Login\n  Scenario: valid password\n    Given a user\n    When she signs in\n    Then she sees home\n"
)


def section(tenant: Tenant, project_id: str, name: str, parent_id: str | None = None, **fields: Any) -> dict:
    body = {"project_id": project_id, "name": name, **fields}
    if parent_id:
        body["parent_id"] = parent_id
    response = tenant.api.post("/api/v1/sections", json=body)
    assert response.status_code == 201, response.text
    return response.json()["data"]


def case(tenant: Tenant, **fields: Any) -> dict:
    response = tenant.api.post("/api/v1/cases", json={"title": "Login works", "bdd_content": FEATURE, **fields})
    assert response.status_code == 201, response.text
    return response.json()["data"]


def tree(tenant: Tenant, project_id: str) -> list[dict]:
    response = tenant.api.get("/api/v1/sections", params={"project_id": project_id})
    assert response.status_code == 200, response.text
    return response.json()["data"]


def codes(tenant: Tenant, **params: Any) -> list[str]:
    response = tenant.api.get("/api/v1/cases", params=params)
    assert response.status_code == 200, response.text
    return [c["code"] for c in response.json()["data"]]


def test_tree_is_flat_parents_first_with_counts(tenant: Tenant) -> None:
    project = tenant.create_project()
    web = section(tenant, project["id"], "Web")
    checkout = section(tenant, project["id"], "Checkout", web["id"], description="Paying")
    cards = section(tenant, project["id"], "Cards", checkout["id"])
    api = section(tenant, project["id"], "API")
    assert set(web) >= {"id", "project_id", "parent_id", "name", "description", "position", "case_count",
                        "created_at", "updated_at"}
    case(tenant, section_id=cards["id"])
    case(tenant, section_id=cards["id"])
    one = case(tenant, section_id=web["id"])
    assert one["project_id"] == project["id"] and one["section_id"] == web["id"]
    listed = tree(tenant, project["id"])
    assert [s["name"] for s in listed] == ["Web", "Checkout", "Cards", "API"]
    by_name = {s["name"]: s for s in listed}
    assert by_name["Cards"]["parent_id"] == checkout["id"]
    assert (by_name["Web"]["case_count"], by_name["Web"]["subtree_case_count"]) == (1, 3)
    assert by_name["Cards"]["case_count"] == 2 and by_name["API"]["case_count"] == 0
    assert tenant.api.get(f"/api/v1/sections/{cards['id']}").json()["data"]["case_count"] == 2
    # the list filter: one section, or its whole subtree
    assert len(codes(tenant, section_id=web["id"])) == 1
    assert len(codes(tenant, section_id=web["id"], include_subsections="true")) == 3
    assert len(codes(tenant, section_id=api["id"], include_subsections="true")) == 0


def test_moving_a_section_under_itself_or_a_descendant_is_409(tenant: Tenant) -> None:
    project = tenant.create_project()
    a = section(tenant, project["id"], "A")
    b = section(tenant, project["id"], "B", a["id"])
    c = section(tenant, project["id"], "C", b["id"])
    assert_problem(tenant.api.patch(f"/api/v1/sections/{a['id']}", json={"parent_id": a["id"]}), 409)
    assert_problem(tenant.api.patch(f"/api/v1/sections/{a['id']}", json={"parent_id": c["id"]}), 409)
    # a legal move takes the subtree along
    moved = tenant.api.patch(f"/api/v1/sections/{b['id']}", json={"parent_id": None, "name": "B2", "position": 5})
    assert moved.status_code == 200, moved.text
    assert moved.json()["data"]["parent_id"] is None and moved.json()["data"]["name"] == "B2"
    case(tenant, section_id=c["id"])
    assert len(codes(tenant, section_id=b["id"], include_subsections="true")) == 1
    assert len(codes(tenant, section_id=a["id"], include_subsections="true")) == 0
    assert [s["name"] for s in tree(tenant, project["id"])] == ["A", "B2", "C"]


def test_delete_moves_cases_and_subsections_to_the_parent(tenant: Tenant) -> None:
    project = tenant.create_project()
    top = section(tenant, project["id"], "Top")
    mid = section(tenant, project["id"], "Mid", top["id"])
    leaf = section(tenant, project["id"], "Leaf", mid["id"])
    in_mid = case(tenant, section_id=mid["id"])
    case(tenant, section_id=leaf["id"])
    assert tenant.api.delete(f"/api/v1/sections/{mid['id']}").status_code == 204
    assert tenant.api.get(f"/api/v1/cases/{in_mid['id']}").json()["data"]["section_id"] == top["id"]
    listed = {s["name"]: s for s in tree(tenant, project["id"])}
    assert set(listed) == {"Top", "Leaf"} and listed["Leaf"]["parent_id"] == top["id"]
    assert listed["Top"]["subtree_case_count"] == 2
    # a root section's cases go to the project root
    assert tenant.api.delete(f"/api/v1/sections/{top['id']}").status_code == 204
    assert tenant.api.get(f"/api/v1/cases/{in_mid['id']}").json()["data"]["section_id"] is None
    assert len(codes(tenant, project_id=project["id"])) == 2
    assert_problem(tenant.api.get(f"/api/v1/sections/{mid['id']}"), 404)


def test_sections_of_other_projects_and_tenants(tenant: Tenant, other_tenant: Tenant) -> None:
    one, two = tenant.create_project("One"), tenant.create_project("Two")
    s1 = section(tenant, one["id"], "S1")
    s2 = section(tenant, two["id"], "S2")
    problem = assert_problem(tenant.api.post("/api/v1/sections", json={"project_id": one["id"], "name": "x",
                                                                         "parent_id": s2["id"]}), 400)
    assert problem["errors"][0]["field"] == "parent_id"
    assert_problem(tenant.api.patch(f"/api/v1/sections/{s1['id']}", json={"parent_id": s2["id"]}), 400)
    problem = assert_problem(tenant.api.post("/api/v1/cases", json={"title": "t", "bdd_content": FEATURE,
                                                                    "project_id": one["id"],
                                                                    "section_id": s2["id"]}), 400)
    assert problem["errors"][0]["field"] == "section_id"
    foreign = other_tenant.create_project()
    theirs = section(other_tenant, foreign["id"], "Theirs")
    assert_problem(tenant.api.post("/api/v1/cases", json={"title": "t", "bdd_content": FEATURE,
                                                          "section_id": theirs["id"]}), 404)
    assert_problem(tenant.api.post("/api/v1/sections", json={"project_id": one["id"], "name": "x",
                                                             "parent_id": theirs["id"]}), 404)
    assert_problem(tenant.api.get("/api/v1/sections", params={"project_id": foreign["id"]}), 404)
    assert_problem(tenant.api.get("/api/v1/sections"), 400)
    assert_problem(tenant.api.post("/api/v1/sections", json={"project_id": one["id"], "name": "S1"}), 409)
    assert_problem(tenant.api.post("/api/v1/sections", json={"project_id": one["id"], "name": "a / b"}), 400)
    assert_problem(tenant.api.post("/api/v1/sections", json={"project_id": one["id"], "name": "x", "bad": 1}), 400)


def test_versions_count_every_change_with_who_made_it(tenant: Tenant) -> None:
    project = tenant.create_project()
    folder = section(tenant, project["id"], "Folder")
    created = case(tenant, project_id=project["id"])
    assert created["version"] == 1
    same = tenant.api.patch(f"/api/v1/cases/{created['id']}", json={"title": "Login works"}).json()["data"]
    assert same["version"] == 1  # nothing changed, no version
    changed = tenant.api.patch(f"/api/v1/cases/{created['id']}",
                               json={"bdd_content": FEATURE.replace("home", "the dashboard"), "tags": ["smoke"]})
    assert changed.json()["data"]["version"] == 2
    moved = tenant.api.patch(f"/api/v1/cases/{created['code']}", json={"section_id": folder["id"]}).json()["data"]
    assert moved["version"] == 3 and moved["section_id"] == folder["id"]
    response = tenant.api.get(f"/api/v1/cases/{created['code']}/versions")
    assert response.status_code == 200
    versions = response.json()["data"]
    assert [v["version"] for v in versions] == [3, 2, 1]
    assert set(versions[0]) >= {"version", "title", "bdd_content", "status", "priority", "layer", "is_e2e",
                                "automation_status", "tags", "tickets", "section_id", "changed_by", "created_at"}
    assert versions[0]["changed_by"]["type"] == "token" and versions[0]["changed_by"]["name"]
    assert "home" in versions[2]["bdd_content"] and "dashboard" in versions[1]["bdd_content"]
    assert versions[1]["tags"] == ["smoke"] and versions[2]["tags"] == []
    assert_problem(tenant.api.get("/api/v1/cases/NOPE-1/versions"), 404)


def test_search_matches_every_word_in_title_code_steps_tags_and_tickets(tenant: Tenant) -> None:
    project = tenant.create_project()
    pay = case(tenant, project_id=project["id"], title="Pay with a saved card", code="SHOP-12",
               bdd_content="Feature: Pay\n  Scenario: saved card\n    Given a customer with a voucher\n"
                           "    When they pay\n    Then the receipt is emailed\n",
               tags=["checkout", "smoke"], tickets=[{"key": "PAY-991", "source": "JIRA"}])
    case(tenant, project_id=project["id"], title="Refund a card payment", tags=["refunds"])
    assert codes(tenant, q="voucher") == ["SHOP-12"]  # a word of its steps
    assert codes(tenant, q="saved receipt") == ["SHOP-12"]  # every word must match
    assert codes(tenant, q="saved refund") == []
    assert codes(tenant, q="SHOP-12") == ["SHOP-12"]
    assert codes(tenant, q="PAY-991") == ["SHOP-12"]
    assert codes(tenant, q="checkout") == ["SHOP-12"]
    assert codes(tenant, q="vouch") == ["SHOP-12"]  # the last word also as a prefix
    assert sorted(codes(tenant, q="card")) == sorted(["SHOP-12", "TC-1"])
    assert codes(tenant, q='"OR NOT *') == []  # FTS syntax in input is plain text, never an error
    # edits are searchable at once
    tenant.api.patch(f"/api/v1/cases/{pay['id']}", json={"title": "Pay with a gift card"})
    assert codes(tenant, q="gift") == ["SHOP-12"]
    tenant.api.delete(f"/api/v1/cases/{pay['id']}")
    assert codes(tenant, q="gift") == []


def test_search_never_crosses_tenants(tenant: Tenant, other_tenant: Tenant) -> None:
    case(other_tenant, title="Secret zebra case")
    case(tenant, title="Plain case")
    assert codes(tenant, q="zebra") == []
    assert codes(other_tenant, q="zebra") == ["TC-1"]


def test_filters_combine_and_sort(tenant: Tenant) -> None:
    project = tenant.create_project()
    case(tenant, project_id=project["id"], code="A-1", title="b", priority="HIGH", layer="UI", tags=["smoke"])
    case(tenant, project_id=project["id"], code="A-2", title="a", priority="LOW", automation_status="AUTOMATED",
         tags=["nightly"])
    case(tenant, project_id=project["id"], code="A-3", title="c", priority="HIGH", layer="API", tags=["other"])
    assert codes(tenant, priority="HIGH") == ["A-1", "A-3"]
    assert codes(tenant, priority="HIGH", layer="API") == ["A-3"]
    assert codes(tenant, automation_status="AUTOMATED") == ["A-2"]
    assert codes(tenant, tag=["smoke", "nightly"]) == ["A-1", "A-2"]
    assert codes(tenant, tag="smoke", priority="LOW") == []
    assert codes(tenant, sort="title") == ["A-2", "A-1", "A-3"]
    assert codes(tenant, sort="priority", order="desc") == ["A-3", "A-1", "A-2"]
    page = tenant.api.get("/api/v1/cases", params={"priority": "HIGH", "limit": 1}).json()
    assert page["pagination"] == {"total": 2, "limit": 1, "offset": 0}
    for bad in ({"priority": "URGENT"}, {"layer": "x"}, {"automation_status": "x"}, {"sort": "rowid"},
                {"order": "up"}):
        problem = assert_problem(tenant.api.get("/api/v1/cases", params=bad), 400)
        assert problem["errors"][0]["field"] == next(iter(bad))


def test_results_record_the_case_version_they_ran_against(tenant: Tenant) -> None:
    project = tenant.create_project()
    one = case(tenant, project_id=project["id"], code="VER-1")
    ingest = tenant.api.post("/api/v1/ingest", json={"project_id": project["id"], "results": [
        {"test_case_code": "VER-1", "status": "PASSED"}, {"title": "unlinked", "status": "PASSED"}]})
    assert ingest.status_code == 201, ingest.text
    first_run = ingest.json()["run_id"]
    tenant.api.patch(f"/api/v1/cases/{one['id']}", json={"title": "Changed"})
    run = tenant.api.post("/api/v1/runs", json={"project_id": project["id"], "name": "r"}).json()["data"]
    posted = tenant.api.post(f"/api/v1/runs/{run['id']}/results",
                             json={"results": [{"test_case_code": "VER-1", "status": "FAILED"}]})
    assert posted.status_code == 201, posted.text
    old = tenant.api.get(f"/api/v1/runs/{first_run}/results").json()["data"]
    assert {r["title"]: r["case_version"] for r in old} == {"Login works": 1, "unlinked": None}
    new = tenant.api.get(f"/api/v1/runs/{run['id']}/results").json()["data"]
    assert new[0]["case_version"] == 2
    ingested = tenant.api.post("/api/v1/ingest", json={"project_id": project["id"], "results": [
        {"test_case_code": "VER-1", "status": "FAILED"}, {"test_case_code": "VER-1", "status": "PASSED"}]})
    assert ingested.status_code == 201, ingested.text  # one case twice in one report: the last one kept
    again = tenant.api.get(f"/api/v1/runs/{ingested.json()['run_id']}/results").json()["data"]
    assert [(r["case_version"], r["status"]) for r in again] == [(2, "PASSED")]
    # re-writing the result stamps the version current at that write
    tenant.api.patch(f"/api/v1/cases/{one['id']}", json={"title": "Changed again"})
    tenant.api.post(f"/api/v1/runs/{run['id']}/results",
                    json={"results": [{"test_case_code": "VER-1", "status": "PASSED"}]})
    assert tenant.api.get(f"/api/v1/runs/{run['id']}/results").json()["data"][0]["case_version"] == 3


def test_search_within_a_project_follows_moves_between_projects(tenant: Tenant) -> None:
    one, two = tenant.create_project("One"), tenant.create_project("Two")
    moved = case(tenant, project_id=one["id"], title="Travelling walrus")
    case(tenant, project_id=two["id"], title="Resident walrus")
    assert len(codes(tenant, q="walrus", project_id=one["id"])) == 1
    tenant.api.patch(f"/api/v1/cases/{moved['id']}", json={"project_id": two["id"]})
    assert codes(tenant, q="walrus", project_id=one["id"]) == []
    assert len(codes(tenant, q="walrus", project_id=two["id"])) == 2
    page = tenant.api.get("/api/v1/cases", params={"q": "walrus", "project_id": two["id"], "limit": 1,
                                                   "offset": 1}).json()
    assert page["pagination"]["total"] == 2 and len(page["data"]) == 1
    assert codes(tenant, q="walrus", project_id='x" OR tenant : "y') == []
