"""The library's pages over HTTP: section forms, bulk actions with their confirmation, import preview,
filtered export, the history diff, and "Move to…"."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

from tests.conftest import Tenant
from tests.web_helpers import HTML, every_post_form_has_csrf, field_error, flashes, follow, text_of

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)

FIXTURE = Path(__file__).parent / "fixtures" / "testrail" / "shop_suite.xml"
FEATURE = "Feature: F\n  Scenario: S\n    Given a thing\n    When it runs\n    Then it works\n"


def case(tenant: Tenant, **fields: Any) -> dict:
    response = tenant.api.post("/api/v1/cases", json={"title": "A case", "bdd_content": FEATURE, **fields})
    assert response.status_code == 201, response.text
    return response.json()["data"]


def test_sections_are_made_and_moved_from_the_cases_page(tenant: Tenant) -> None:
    project = tenant.create_project("Shop")
    web = tenant.web()
    page = web.get(f"/cases?project_id={project['id']}", headers=HTML)
    assert page.status_code == 200 and every_post_form_has_csrf(page.text)
    created = follow(web, web.post("/cases/sections", data={"project_id": project["id"], "name": "Checkout"}))
    assert "Section “Checkout” created." in flashes(created.text)
    sections = tenant.api.get("/api/v1/sections", params={"project_id": project["id"]}).json()["data"]
    top = sections[0]
    follow(web, web.post("/cases/sections", data={"project_id": project["id"], "name": "Cards",
                                                   "parent_id": top["id"]}))
    child = next(s for s in tenant.api.get("/api/v1/sections", params={"project_id": project["id"]}).json()["data"]
                 if s["name"] == "Cards")
    case(tenant, section_id=child["id"], title="Pay by card")
    follow(web, web.post("/cases/sections", data={"project_id": project["id"], "name": "<b>bold</b>"}))
    listing = web.get(f"/cases?project_id={project['id']}", headers=HTML).text
    assert "Checkout" in listing and "Cards" in listing
    assert "&lt;b&gt;bold&lt;/b&gt;" in listing and "<b>bold</b>" not in listing
    # a section cannot move under its own subsection: the form says so next to the field
    edit = web.get(f"/cases/sections/{top['id']}", headers=HTML)
    assert edit.status_code == 200 and every_post_form_has_csrf(edit.text)
    bad = web.post(f"/cases/sections/{top['id']}", data={"name": "Checkout", "parent_id": child["id"],
                                                          "position": "0"})
    assert bad.status_code == 400 and field_error(bad.text, "parent_id")
    blank = web.post(f"/cases/sections/{top['id']}", data={"name": "", "position": "0"})
    assert blank.status_code == 400 and field_error(blank.text, "name")
    renamed = follow(web, web.post(f"/cases/sections/{child['id']}", data={"name": "Card payments",
                                                                            "parent_id": "", "position": "3"}))
    assert "Card payments" in renamed.text
    deleted = follow(web, web.post(f"/cases/sections/{child['id']}/delete"))
    assert "moved one level up" in " ".join(flashes(deleted.text))
    assert tenant.api.get("/api/v1/cases", params={"q": "card"}).json()["data"][0]["section_id"] is None


def test_bulk_actions_change_many_cases_in_one_go(tenant: Tenant) -> None:
    project = tenant.create_project()
    folder = tenant.api.post("/api/v1/sections", json={"project_id": project["id"], "name": "Folder"}).json()["data"]
    ids = [case(tenant, project_id=project["id"], title=f"Login case {n}")["id"] for n in range(3)]
    other = case(tenant, project_id=project["id"], title="Unrelated")
    web = tenant.web()
    done = follow(web, web.post("/cases/bulk", data={"op": "priority:HIGH", "ids": ids[:2]}))
    assert "2 of 2 test cases changed." in flashes(done.text)
    follow(web, web.post("/cases/bulk", data={"op": f"move:{folder['id']}", "ids": ids}))
    follow(web, web.post("/cases/bulk", data={"op": "add_tag:", "tag": "smoke", "ids": ids}))
    cases = {c["id"]: c for c in tenant.api.get("/api/v1/cases", params={"project_id": project["id"]}).json()["data"]}
    assert [cases[i]["priority"] for i in ids] == ["HIGH", "HIGH", "MEDIUM"]
    assert all(cases[i]["section_id"] == folder["id"] and cases[i]["tags"] == ["smoke"] for i in ids)
    assert cases[ids[0]]["version"] == 4 and cases[other["id"]]["version"] == 1
    # "all matching the filter" asks first, naming how many
    confirm = web.post("/cases/bulk", data={"op": "status:READY", "all_matching": "1", "filter": "q=login"})
    assert confirm.status_code == 200 and "3 test cases" in text_of(confirm.text)
    applied = follow(web, web.post("/cases/bulk", data={"op": "status:READY", "all_matching": "1",
                                                        "filter": "q=login", "confirmed": "1"}))
    assert "3 of 3" in " ".join(flashes(applied.text))
    assert tenant.api.get(f"/api/v1/cases/{other['id']}").json()["data"]["status"] == "DRAFT"
    cloned = follow(web, web.post("/cases/bulk", data={"op": "clone:", "ids": ids[:1]}))
    assert "1 of 1 test case cloned." in flashes(cloned.text)
    # delete always confirms, saying how many
    ask = web.post("/cases/bulk", data={"op": "delete:", "ids": ids[:2]})
    assert ask.status_code == 200 and "Delete 2 test cases?" in text_of(ask.text)
    assert len(tenant.api.get("/api/v1/cases", params={"project_id": project["id"]}).json()["data"]) == 5
    follow(web, web.post("/cases/bulk", data={"op": "delete:", "ids": ids[:2], "confirmed": "1"}))
    assert tenant.api.get(f"/api/v1/cases/{ids[0]}").status_code == 404
    nothing = follow(web, web.post("/cases/bulk", data={"op": "delete:"}))
    assert "Select at least one" in " ".join(flashes(nothing.text))
    audit = tenant.api.get("/api/v1/audit", params={"entity_type": "case"})
    if audit.status_code == 200:  # the audit API lands with the team-work issue
        actions = [e["action"] for e in audit.json()["data"]]
        assert "case.bulk_deleted" in actions and "case.bulk_priority" in actions


def test_import_preview_writes_nothing_until_confirmed(tenant: Tenant) -> None:
    project = tenant.create_project()
    web = tenant.web()
    form = web.get("/cases/import", headers=HTML)
    assert form.status_code == 200 and every_post_form_has_csrf(form.text)
    token = web.cookies.get("csrftoken")
    preview = web.post("/cases/import", data={"project_id": project["id"], "format": "testrail-xml",
                                              "_csrf_token": token},
                       files={"file": ("suite.xml", FIXTURE.read_bytes(), "text/xml")}, headers=HTML)
    assert preview.status_code == 200, preview.text[:500]
    assert 'data-count="created">4<' in preview.text and every_post_form_has_csrf(preview.text)
    assert tenant.api.get("/api/v1/cases", params={"project_id": project["id"]}).json()["data"] == []
    confirm_token = preview.text.split('name="token" value="')[1].split('"')[0]
    done = follow(web, web.post("/cases/import/confirm", data={"token": confirm_token}))
    assert "4 created" in " ".join(flashes(done.text))
    assert len(tenant.api.get("/api/v1/cases", params={"project_id": project["id"]}).json()["data"]) == 4
    # the preview token is single-use
    again = follow(web, web.post("/cases/import/confirm", data={"token": confirm_token}))
    assert "expired" in " ".join(flashes(again.text))
    # a bad file re-renders the form naming the problem
    bad = web.post("/cases/import", data={"project_id": project["id"], "format": "csv", "_csrf_token": token},
                   files={"file": ("x.csv", b"name;steps\n", "text/csv")}, headers=HTML)
    assert bad.status_code == 400 and "commas" in (field_error(bad.text, "file") or "")
    missing = web.post("/cases/import", data={"project_id": project["id"], "format": "csv", "_csrf_token": token},
                       headers=HTML)
    assert missing.status_code == 400 and field_error(missing.text, "file")


def test_export_of_a_filtered_selection(tenant: Tenant) -> None:
    project = tenant.create_project()
    case(tenant, project_id=project["id"], title="Smoke one", tags=["smoke"])
    case(tenant, project_id=project["id"], title="Other")
    web = tenant.web()
    everything = web.get(f"/cases/export?project_id={project['id']}")
    assert everything.status_code == 200 and len(list(csv.reader(io.StringIO(everything.text)))) == 3
    selection = web.get(f"/cases/export?project_id={project['id']}&tag=smoke")
    rows = list(csv.reader(io.StringIO(selection.text)))
    assert len(rows) == 2 and rows[1][1] == "Smoke one"
    page = web.get(f"/cases?project_id={project['id']}&tag=smoke", headers=HTML).text
    assert "Export CSV (this selection)" in page


def test_list_keeps_filters_sort_and_page_size_in_the_url(tenant: Tenant) -> None:
    project = tenant.create_project()
    for n in range(30):
        case(tenant, project_id=project["id"], title=f"Case {n:02d}", priority="HIGH" if n % 2 else "LOW")
    web = tenant.web()
    page = web.get(f"/cases?project_id={project['id']}&priority=HIGH&sort=title&limit=25", headers=HTML).text
    titles = re.findall(r">Case (\d\d)<", page)
    assert titles[:3] == ["01", "03", "05"] and "15 in all" in text_of(page)
    assert "sort=title&amp;order=desc" in page  # the column header toggles the order
    desc = web.get(f"/cases?project_id={project['id']}&priority=HIGH&sort=title&order=desc", headers=HTML).text
    assert re.findall(r">Case (\d\d)<", desc)[:1] == ["29"]
    small = web.get(f"/cases?project_id={project['id']}&limit=25", headers=HTML).text
    assert "Page 1 of 2" in text_of(small) and "limit=25" in small
    found = web.get("/cases?q=Case+07", headers=HTML).text
    assert "Case 07" in found and "Case 08" not in found


def test_history_page_and_move_to(tenant: Tenant) -> None:
    project = tenant.create_project()
    folder = tenant.api.post("/api/v1/sections", json={"project_id": project["id"], "name": "Folder"}).json()["data"]
    one = case(tenant, project_id=project["id"])
    tenant.api.patch(f"/api/v1/cases/{one['id']}", json={"bdd_content": FEATURE.replace("works", "passes")})
    web = tenant.web()
    history = web.get(f"/cases/{one['code']}/versions", headers=HTML)
    assert history.status_code == 200
    assert '<tr class="del">' in history.text and '<tr class="add">' in history.text
    assert "Then it passes" in history.text and "Then it works" in history.text
    same = web.get(f"/cases/{one['code']}/versions?a=2&b=2", headers=HTML)
    assert "choose two different ones" in text_of(same.text)
    detail = web.get(f"/cases/{one['code']}", headers=HTML)
    assert "History (v2)" in detail.text and every_post_form_has_csrf(detail.text)
    moved = follow(web, web.post(f"/cases/{one['code']}/move", data={"section_id": folder["id"]}))
    assert "moved" in " ".join(flashes(moved.text)) and "Folder" in moved.text
    assert tenant.api.get(f"/api/v1/cases/{one['id']}").json()["data"]["section_id"] == folder["id"]
    form = web.get(f"/cases/{one['code']}/edit", headers=HTML).text
    assert f'value="{folder["id"]}" selected' in form
