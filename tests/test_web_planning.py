"""Web interface of planning: project settings (edit, archive, delete), milestones and test plans."""

from __future__ import annotations

import time
from typing import Any

from tests.conftest import Tenant, connect_db
from tests.test_cases import new_case
from tests.test_planning import audit_of, new_milestone, new_plan
from tests.web_helpers import HTML, every_post_form_has_csrf, field_error, flashes, follow, input_value, text_of

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x00" * 17


# --- project settings -----------------------------------------------------------------------------

def test_edit_a_project_and_keep_input_on_errors(tenant: Tenant) -> None:
    project = tenant.create_project("Shop", environments=["staging"])
    web = tenant.web()
    page = web.get(f"/projects/{project['id']}/edit", headers=HTML)
    assert page.status_code == 200 and every_post_form_has_csrf(page.text)
    assert input_value(page.text, "environments") == "staging"

    bad = web.post(f"/projects/{project['id']}/edit", data={"name": " ", "description": "kept",
                                                             "environments": "a, b"})
    assert bad.status_code == 400 and field_error(bad.text, "name")
    assert input_value(bad.text, "description") == "kept" and input_value(bad.text, "environments") == "a, b"

    saved = follow(web, web.post(f"/projects/{project['id']}/edit", data={
        "name": "Web shop", "description": "Storefront", "environments": "staging, prod"}))
    assert "Project “Web shop” saved." in flashes(saved.text)[0]
    got = tenant.api.get(f"/api/v1/projects/{project['id']}").json()["data"]
    assert (got["name"], got["description"], got["environments"]) == ("Web shop", "Storefront", ["staging", "prod"])
    assert audit_of(tenant, "project.updated")[0]["actor_type"] == "user"


def test_archive_hides_the_project_until_shown_or_unarchived(tenant: Tenant) -> None:
    kept, archived = tenant.create_project("Kept"), tenant.create_project("Old one")
    web = tenant.web()
    follow(web, web.post(f"/projects/{archived['id']}/activate"))
    page = follow(web, web.post(f"/projects/{archived['id']}/archive"))
    assert "archived" in flashes(page.text)[0]
    table = text_of(page.text.split("<table", 1)[1].split("</table>", 1)[0])
    assert "Kept" in table and "Old one" not in table and "Show 1 archived project" in text_of(page.text)
    got = tenant.api.get(f"/api/v1/projects/{archived['id']}").json()["data"]
    assert got["archived"] is True and got["active"] is False  # the dashboard no longer defaults to it
    shown = web.get("/projects?archived=true", headers=HTML)
    assert "Old one" in text_of(shown.text) and "Archived" in text_of(shown.text)
    # nor offered in the planning pickers
    assert archived["id"] not in web.get("/plans/new", headers=HTML).text
    assert archived["id"] not in web.get("/milestones", headers=HTML).text
    assert kept["id"] in web.get("/milestones", headers=HTML).text

    page = follow(web, web.post(f"/projects/{archived['id']}/unarchive"))
    assert "no longer archived" in flashes(page.text)[0]
    assert "Old one" in text_of(web.get("/projects", headers=HTML).text)


def test_delete_needs_the_exact_name_and_takes_everything_with_it(tenant: Tenant) -> None:
    doomed, other = tenant.create_project("Doomed"), tenant.create_project("Other")
    section = tenant.api.post("/api/v1/sections", json={"project_id": doomed["id"], "name": "Checkout"})
    assert section.status_code == 201, section.text
    case = new_case(tenant, project_id=doomed["id"], tags=["smoke"], section_id=section.json()["data"]["id"])
    assert tenant.api.patch(f"/api/v1/cases/{case['id']}", json={"title": "Edited once"}).status_code == 200
    other_case = new_case(tenant, project_id=other["id"])
    ingest = tenant.api.post("/api/v1/ingest", json={"project_id": doomed["id"], "results": [
        {"test_case_code": case["code"], "status": "FAILED"}, {"title": "unlinked", "status": "PASSED"}]})
    run_id = ingest.json()["run_id"]
    results = tenant.api.get(f"/api/v1/runs/{run_id}/results").json()["data"]
    for n, result in enumerate(results):  # a file on a linked and on an unlinked result, bytes of their own
        upload = tenant.api.post(f"/api/v1/results/{result['id']}/attachments",
                                 files={"file": ("shot.png", PNG + f"doomed {n}".encode(), "image/png")})
        assert upload.status_code == 201, upload.text
    kept_ingest = tenant.api.post("/api/v1/ingest", json={"project_id": other["id"], "results": [
        {"test_case_code": other_case["code"], "status": "PASSED"}]})
    kept_result = tenant.api.get(f"/api/v1/runs/{kept_ingest.json()['run_id']}/results").json()["data"][0]
    kept_upload = tenant.api.post(f"/api/v1/results/{kept_result['id']}/attachments",
                                  files={"file": ("keep.png", PNG, "image/png")})
    milestone = new_milestone(tenant, doomed)
    new_plan(tenant, doomed, tags=["smoke"], milestone_id=milestone["id"])
    files = tenant.server.data_dir / "attachments"

    def stored(project_id: str) -> list[str]:
        with connect_db(tenant.server.db_path) as conn:
            return [name for (name,) in conn.execute(
                "SELECT a.object_key FROM attachments a WHERE a.result_id IN (SELECT r.id FROM test_results r "
                "JOIN test_runs t ON t.id = r.run_id WHERE t.project_id = ? UNION SELECT n.id FROM "
                "unlinked_test_results n WHERE n.project_id = ?)", (project_id, project_id))]

    doomed_files = stored(doomed["id"])
    assert len(doomed_files) == 2 and all((files / name).is_file() for name in doomed_files)

    web = tenant.web()
    wrong = web.post(f"/projects/{doomed['id']}/delete", data={"confirm_name": "doomed"})
    assert wrong.status_code == 400 and "exactly" in (field_error(wrong.text, "confirm_name") or "")
    assert tenant.api.get(f"/api/v1/projects/{doomed['id']}").status_code == 200

    page = follow(web, web.post(f"/projects/{doomed['id']}/delete", data={"confirm_name": "Doomed"}))
    assert "deleted with 1 cases, 2 runs and 2 attachments" in flashes(page.text)[0]
    assert tenant.api.get(f"/api/v1/projects/{doomed['id']}").status_code == 404
    assert tenant.api.get(f"/api/v1/cases/{case['id']}").status_code == 404
    assert tenant.api.get(f"/api/v1/runs/{run_id}").status_code == 404
    assert tenant.api.get(f"/api/v1/milestones/{milestone['id']}").status_code == 404
    assert tenant.api.get("/api/v1/plans").json()["data"] == []
    # the objects leave the store once the deletion has committed (in the background of the request)
    deadline = time.monotonic() + 10
    while any((files / name).exists() for name in doomed_files) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any((files / name).exists() for name in doomed_files)
    with connect_db(tenant.server.db_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM attachments WHERE object_key IN (?, ?)",
                            doomed_files).fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM unlinked_test_results WHERE project_id = ?",
                            (doomed["id"],)).fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM case_versions WHERE case_id = ?", (case["id"],)).fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM sections WHERE project_id = ?", (doomed["id"],)).fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM case_versions WHERE case_id = ?",
                            (other_case["id"],)).fetchone()[0] == 1
    # the other project is untouched, its file included
    assert tenant.api.get(f"/api/v1/cases/{other_case['id']}").status_code == 200
    assert tenant.api.get(f"/api/v1/attachments/{kept_upload.json()['data'][0]['id']}").status_code == 200
    [entry] = audit_of(tenant, "project.deleted")
    assert entry["changes"] == {"name": "Doomed", "cases": 1, "runs": 2, "attachments": 2}


def test_only_admins_delete_projects(tenant: Tenant) -> None:
    project = tenant.create_project("Kept")
    with connect_db(tenant.server.db_path) as conn:
        conn.execute("UPDATE users SET role = 'tester' WHERE tenant_id = ?", (tenant.id,))
    web = tenant.web()
    response = web.post(f"/projects/{project['id']}/delete", data={"confirm_name": "Kept"})
    assert response.status_code == 403
    assert tenant.api.get(f"/api/v1/projects/{project['id']}").status_code == 200


# --- milestones -----------------------------------------------------------------------------------

def test_milestones_page_create_progress_complete_delete(tenant: Tenant) -> None:
    project = tenant.create_project("Shop")
    case = new_case(tenant, project_id=project["id"])
    web = tenant.web()
    page = web.get("/milestones", headers=HTML)
    assert page.status_code == 200 and "No milestones yet" in text_of(page.text)
    assert every_post_form_has_csrf(page.text)

    bad = web.post("/milestones", data={"project_id": project["id"], "name": "", "due_on": "2026-13-01"})
    assert bad.status_code == 400 and field_error(bad.text, "name")
    bad_date = web.post("/milestones", data={"project_id": project["id"], "name": "1.0", "due_on": "2026-13-01"})
    assert bad_date.status_code == 400 and "YYYY-MM-DD" in (field_error(bad_date.text, "due_on") or "")
    assert input_value(bad_date.text, "name") == "1.0"
    no_project = web.post("/milestones", data={"project_id": "", "name": "1.0"})
    assert no_project.status_code == 400 and field_error(no_project.text, "project_id")

    created = web.post("/milestones", data={"project_id": project["id"], "name": "Release 1.0",
                                            "due_on": "2020-01-31", "description": "Ship it"})
    detail = follow(web, created)
    assert "Milestone “Release 1.0” created." in flashes(detail.text)[0]
    milestone_id = created.headers["location"].rsplit("/", 1)[1]
    run = tenant.api.post("/api/v1/runs", json={"name": "Nightly", "project_id": project["id"],
                                                "milestone_id": milestone_id, "test_case_ids": [case["code"]]})
    tenant.api.post(f"/api/v1/runs/{run.json()['data']['id']}/results", json={"results": [
        {"test_case_code": case["code"], "status": "PASSED"}]})

    listing = text_of(web.get("/milestones", headers=HTML).text)
    assert "Release 1.0" in listing and "2020-01-31" in listing and "Overdue" in listing
    assert "1 of 1 executed (100%)" in listing and "pass rate 100%" in listing
    detail = web.get(f"/milestones/{milestone_id}", headers=HTML)
    assert "Nightly" in text_of(detail.text) and every_post_form_has_csrf(detail.text)

    done = follow(web, web.post(f"/milestones/{milestone_id}/status", data={"status": "COMPLETED"}))
    assert "completed" in flashes(done.text)[0]
    assert tenant.api.get(f"/api/v1/milestones/{milestone_id}").json()["data"]["status"] == "COMPLETED"
    edited = web.post(f"/milestones/{milestone_id}/edit", data={"name": "", "due_on": ""})
    assert edited.status_code == 400 and field_error(edited.text, "name")
    follow(web, web.post(f"/milestones/{milestone_id}/edit", data={"name": "1.0 final", "due_on": ""}))
    assert tenant.api.get(f"/api/v1/milestones/{milestone_id}").json()["data"]["due_on"] is None

    gone = follow(web, web.post(f"/milestones/{milestone_id}/delete"))
    assert "its 1 runs are kept" in flashes(gone.text)[0]
    assert tenant.api.get(f"/api/v1/runs/{run.json()['data']['id']}").json()["data"]["milestone_id"] is None


# --- plans ----------------------------------------------------------------------------------------

def _plan_form(project: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"project_id": project["id"], "name": "Release check", "description": "", "milestone_id": "",
            "case_codes": "", "tags": "", "other_environments": "", **fields}


def test_create_a_plan_from_the_form_and_follow_its_progress(tenant: Tenant) -> None:
    project = tenant.create_project("Shop", environments=["staging", "prod"])
    one = new_case(tenant, project_id=project["id"], title="Pay")
    two = new_case(tenant, project_id=project["id"], title="Refund", tags=["smoke"])
    new_case(tenant, project_id=project["id"], title="Slow", tags=["slow"])
    milestone = new_milestone(tenant, project)
    web = tenant.web()

    form = web.get(f"/plans/new?project_id={project['id']}&milestone_id={milestone['id']}", headers=HTML)
    assert form.status_code == 200 and every_post_form_has_csrf(form.text)
    text = text_of(form.text)
    assert "staging" in text and "prod" in text and "smoke" in text  # environments and known tags offered

    bad = web.post("/plans/new", data=_plan_form(project, case_codes=f"{one['code']} NOPE-1", tags="smoke"))
    assert bad.status_code == 400 and "NOPE-1" in (field_error(bad.text, "case_codes") or "")
    assert f"{one['code']} NOPE-1" in bad.text and input_value(bad.text, "tags") == "smoke"
    nothing = web.post("/plans/new", data=_plan_form(project))
    assert nothing.status_code == 400 and field_error(nothing.text, "case_codes")
    assert tenant.api.get("/api/v1/plans").json()["data"] == []

    data = _plan_form(project, case_codes=one["code"], tags="smoke", milestone_id=milestone["id"])
    data["environments"] = ["staging", "prod"]
    created = web.post("/plans/new", data=data)
    page = follow(web, created)
    assert "started: 2 runs of 2 cases" in flashes(page.text)[0]
    plan_id = created.headers["location"].rsplit("/", 1)[1]
    plan = tenant.api.get(f"/api/v1/plans/{plan_id}").json()["data"]
    assert plan["milestone_id"] == milestone["id"] and plan["case_count"] == 2 and len(plan["run_ids"]) == 2

    staging = plan["run_ids"][0]
    tenant.api.post(f"/api/v1/runs/{staging}/results", json={"results": [
        {"test_case_code": one["code"], "status": "PASSED"}, {"test_case_code": two["code"], "status": "FAILED"}]})
    page = web.get(f"/plans/{plan_id}", headers=HTML)
    text = text_of(page.text)
    assert "2 of 4 executed (50%)" in text and "pass rate 50%" in text  # the plan
    assert "2 of 2 executed (100%)" in text and "0 of 2 executed (0%)" in text  # a bar per run
    assert page.text.count('class="bar"') == 3
    listing = text_of(web.get(f"/plans?project_id={project['id']}", headers=HTML).text)
    assert "Release check" in listing and "2 of 4 executed" in listing

    edited = web.post(f"/plans/{plan_id}/edit", data={"name": "", "milestone_id": ""})
    assert edited.status_code == 400 and field_error(edited.text, "name")
    follow(web, web.post(f"/plans/{plan_id}/edit", data={"name": "Renamed", "description": "", "milestone_id": ""}))
    assert tenant.api.get(f"/api/v1/plans/{plan_id}").json()["data"]["milestone_id"] is None
    gone = follow(web, web.post(f"/plans/{plan_id}/delete"))
    assert "runs and their results are kept" in flashes(gone.text)[0]
    assert tenant.api.get(f"/api/v1/runs/{staging}").json()["data"]["counts"]["passed"] == 1


def test_the_plan_form_picks_sections_with_their_subsections(tenant: Tenant) -> None:
    project = tenant.create_project("Shop")

    def section(name: str, parent: str | None = None) -> str:
        response = tenant.api.post("/api/v1/sections", json={"project_id": project["id"], "name": name,
                                                             "parent_id": parent})
        assert response.status_code == 201, response.text
        return response.json()["data"]["id"]

    checkout = section("Checkout")
    cards = section("Cards", checkout)
    new_case(tenant, project_id=project["id"], section_id=cards, title="Pay by card")
    new_case(tenant, project_id=project["id"], title="Unfiled")
    web = tenant.web()
    form = web.get(f"/plans/new?project_id={project['id']}", headers=HTML)
    assert f'value="{checkout}"' in form.text and f'value="{cards}"' in form.text and "Cards" in text_of(form.text)
    created = web.post("/plans/new", data={**_plan_form(project), "section_ids": [checkout]})
    page = follow(web, created)
    assert "started: 1 run of 1 case." in flashes(page.text)[0]
    assert "1 section" in text_of(page.text)
