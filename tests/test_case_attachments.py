"""Case attachments (issue 26): specs, mock-ups and data files on the case itself, with the checks and
limits of a result's attachments, reference-counted objects shared with them, gone with their case or
project, listed on the case page (upload from it) and in the execution view. Both databases."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess, Tenant, assert_problem, connect_db, make_tenant_on, run_admin
from tests.test_attachments import EXE, PDF, PNG, TXT, add_result, attachments_dir, upload
from tests.test_cases import new_case
from tms.attachments.objects import LocalStore

IN_PROCESS = True  # tests/inprocess.py


def upload_to_case(client: httpx.Client, case: str, *files: tuple[str, bytes, str]) -> httpx.Response:
    return client.post(f"/api/v1/cases/{case}/attachments",
                       files=[("file", (name, content, ctype)) for name, content, ctype in files])


def object_path(server: ServerProcess, tenant: Tenant, content: bytes) -> Path:
    return attachments_dir(server) / tenant.id / hashlib.sha256(content).hexdigest()


def object_rows(server: ServerProcess, tenant_id: str) -> set[str]:
    with connect_db(server.db_path) as conn:
        rows = conn.execute("SELECT object_key FROM attachment_objects WHERE tenant_id = ?", (tenant_id,)).fetchall()
    conn.close()
    return {row[0] for row in rows}


def wait_until_gone(path: Path, seconds: float = 5) -> bool:
    """The objects leave the store after the commit, in the background of the request."""
    return eventually(lambda: not path.exists(), seconds)


def eventually(condition: Any, seconds: float = 5) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return bool(condition())


def test_upload_list_and_download_by_code_or_id(tenant: Tenant) -> None:
    case = new_case(tenant)
    answer = upload_to_case(tenant.api, case["code"], ("mock-up.png", PNG, "application/octet-stream"),
                            ("spec.pdf", PDF, "application/pdf"))
    assert answer.status_code == 201, answer.text
    created = answer.json()["data"]
    # the stored type is the detected one, as for a result's attachments
    assert [(a["fileName"], a["mimeType"], a["size"]) for a in created] == [
        ("mock-up.png", "image/png", len(PNG)), ("spec.pdf", "application/pdf", len(PDF))]
    upload_to_case(tenant.api, case["id"], ("data.txt", TXT, "text/plain"))
    listed = tenant.client("read").get(f"/api/v1/cases/{case['id']}/attachments")
    assert listed.status_code == 200
    assert [a["fileName"] for a in listed.json()["data"]] == ["mock-up.png", "spec.pdf", "data.txt"]
    assert tenant.api.get(f"/api/v1/cases/{case['code']}/attachments").json() == listed.json()
    downloaded = tenant.api.get(f"/api/v1/attachments/{created[0]['id']}")
    assert downloaded.status_code == 200 and downloaded.content == PNG
    assert downloaded.headers["content-type"] == "image/png"
    assert downloaded.headers["x-content-type-options"] == "nosniff"
    # another case lists nothing of them
    assert tenant.api.get(f"/api/v1/cases/{new_case(tenant)['id']}/attachments").json()["data"] == []


def test_the_same_refusals_as_result_attachments(tenant: Tenant) -> None:
    case = new_case(tenant)
    assert_problem(upload_to_case(tenant.api, case["id"], ("tool.png", EXE, "image/png")), 415)
    assert_problem(upload_to_case(tenant.api, case["id"], ("tool.exe", EXE, "application/octet-stream")), 415)
    no_file = tenant.api.post(f"/api/v1/cases/{case['id']}/attachments", files={"comment": (None, "hi")})
    assert_problem(no_file, 400)
    json_body = tenant.api.post(f"/api/v1/cases/{case['id']}/attachments", json={"file": "x"})
    assert_problem(json_body, 415)
    assert_problem(upload_to_case(tenant.api, "TC-999", ("a.png", PNG, "image/png")), 404)
    assert_problem(upload_to_case(tenant.client("read"), case["id"], ("a.png", PNG, "image/png")), 403)
    assert tenant.api.get(f"/api/v1/cases/{case['id']}/attachments").json()["data"] == []
    assert_problem(tenant.api.get("/api/v1/cases/TC-999/attachments"), 404)


def test_the_size_limit_applies(start_app: Any) -> None:
    tenant = make_tenant_on(start_app(env={"ATTACHMENT_MAX_BYTES": "1000"}))
    case = new_case(tenant)
    assert_problem(upload_to_case(tenant.api, case["id"], ("big.txt", b"x" * 1001, "text/plain")), 413)
    assert upload_to_case(tenant.api, case["id"], ("small.txt", b"x" * 1000, "text/plain")).status_code == 201


def test_a_case_holds_at_most_100(tenant: Tenant) -> None:
    from tms.attachments.upload import MAX_CASE_ATTACHMENTS, MAX_FILES

    case = new_case(tenant)
    batch = [(f"n{i}.txt", f"note {i}\n".encode(), "text/plain") for i in range(MAX_FILES)]
    for _ in range(MAX_CASE_ATTACHMENTS // MAX_FILES):
        assert upload_to_case(tenant.api, case["id"], *batch).status_code == 201
    refused = upload_to_case(tenant.api, case["id"], ("one more.txt", b"more\n", "text/plain"))
    assert_problem(refused, 413)
    assert "at most 100" in refused.json()["detail"]
    assert len(tenant.api.get(f"/api/v1/cases/{case['id']}/attachments").json()["data"]) == MAX_CASE_ATTACHMENTS


def test_objects_are_shared_with_results_and_go_with_the_case(tenant: Tenant) -> None:
    shared_case, own_case = new_case(tenant), new_case(tenant)
    result_id = add_result(tenant)
    only_case = b"only on the case\n"
    upload(tenant.api, result_id, ("shot.png", PNG, "image/png"))
    upload_to_case(tenant.api, shared_case["id"], ("shot.png", PNG, "image/png"),
                   ("notes.txt", only_case, "text/plain"))
    kept = upload_to_case(tenant.api, own_case["id"], ("kept.txt", TXT, "text/plain")).json()["data"][0]
    png, notes = object_path(tenant.server, tenant, PNG), object_path(tenant.server, tenant, only_case)
    assert png.exists() and notes.exists()

    assert tenant.api.delete(f"/api/v1/cases/{shared_case['id']}").status_code == 204
    assert wait_until_gone(notes), "the case's own object stayed after its deletion"
    assert png.exists(), "an object a result still references was removed"
    gone_key = f"{tenant.id}/{hashlib.sha256(only_case).hexdigest()}"
    assert eventually(lambda: gone_key not in object_rows(tenant.server, tenant.id))
    # the other case's file is untouched, and the sweep leaves case objects alone
    removed = run_admin(tenant.server.db_path, lambda db: _sweep(db, attachments_dir(tenant.server)))
    assert removed == 0
    assert tenant.api.get(f"/api/v1/attachments/{kept['id']}").content == TXT


async def _sweep(db: Any, directory: Path) -> int:
    from tms.attachments.collection import sweep_orphans

    return await sweep_orphans(db, LocalStore(directory))


def test_deleting_the_project_removes_its_cases_attachments(tenant: Tenant) -> None:
    project = tenant.create_project("Doomed")
    case = new_case(tenant, project_id=project["id"])
    content = b"the doomed project's spec\n"
    upload_to_case(tenant.api, case["id"], ("spec.txt", content, "text/plain"))
    path = object_path(tenant.server, tenant, content)
    assert path.exists()
    web = tenant.web()
    answer = web.post(f"/projects/{project['id']}/delete", data={"confirm_name": "Doomed"})
    assert answer.status_code in (200, 303), answer.text
    assert wait_until_gone(path)
    assert eventually(lambda: object_rows(tenant.server, tenant.id) == set())


def test_case_page_lists_them_and_uploads_with_a_session(tenant: Tenant) -> None:
    case = new_case(tenant)
    upload_to_case(tenant.api, case["id"], ("wireframe.png", PNG, "image/png"))
    web = tenant.web()
    page = web.get(f"/cases/{case['code']}")
    assert page.status_code == 200
    assert "wireframe.png" in page.text and f'data-upload-url="/api/cases/{case["id"]}/attachments"' in page.text
    assert '<script src="/static/case_files.js" defer>' in page.text
    assert web.get("/static/case_files.js").status_code == 200
    posted = web.post(f"/api/cases/{case['id']}/attachments", files={"file": ("pasted.png", PNG, "image/png")})
    assert posted.status_code == 201, posted.text
    # a session request without the CSRF header is refused
    del web.headers["x-csrftoken"]
    refused = web.post(f"/api/cases/{case['id']}/attachments", files={"file": ("x.png", PNG, "image/png")})
    assert refused.status_code == 403
    assert [a["fileName"] for a in tenant.api.get(f"/api/v1/cases/{case['id']}/attachments").json()["data"]] == [
        "wireframe.png", "pasted.png"]


def test_the_execution_view_shows_the_cases_attachments(tenant: Tenant) -> None:
    result_id = add_result(tenant)
    case_id = tenant.api.get(f"/api/v1/results/{result_id}").json()["data"]["test_case_id"]
    upload_to_case(tenant.api, case_id, ("checkout-spec.pdf", PDF, "application/pdf"))
    upload(tenant.api, result_id, ("failure.png", PNG, "image/png"))
    web = tenant.web()
    page = web.get(f"/results/{result_id}/execute")
    assert page.status_code == 200
    case_part = page.text.split('id="case-attachment-list"', 1)[1].split("</ul>", 1)[0]
    assert "checkout-spec.pdf" in case_part and "failure.png" not in case_part


@pytest.mark.parametrize("path", ["/api/v1/cases/{case}/attachments"])
def test_another_tenants_case_is_404(path: str, tenant: Tenant, other_tenant: Tenant) -> None:
    case = new_case(other_tenant)
    attached = upload_to_case(other_tenant.api, case["id"], ("theirs.png", PNG, "image/png")).json()["data"][0]
    assert_problem(tenant.api.get(path.format(case=case["id"])), 404)
    assert_problem(upload_to_case(tenant.api, case["id"], ("mine.png", PNG, "image/png")), 404)
    assert_problem(tenant.api.get(f"/api/v1/attachments/{attached['id']}"), 404)
    assert other_tenant.api.get(f"/api/v1/cases/{case['id']}/attachments").json()["data"][0]["id"] == attached["id"]


def test_a_bulk_delete_removes_the_cases_attachments(tenant: Tenant) -> None:
    doomed, kept = new_case(tenant), new_case(tenant)
    content, other = b"bulk-deleted spec\n", b"kept spec\n"
    upload_to_case(tenant.api, doomed["id"], ("spec.txt", content, "text/plain"))
    upload_to_case(tenant.api, kept["id"], ("spec.txt", other, "text/plain"))
    web = tenant.web()
    answer = web.post("/cases/bulk", data={"op": "delete:", "ids": [doomed["id"]], "confirmed": "1"})
    assert answer.status_code == 303, answer.text
    assert wait_until_gone(object_path(tenant.server, tenant, content))
    assert object_path(tenant.server, tenant, other).exists()
    assert tenant.api.get(f"/api/v1/cases/{doomed['id']}/attachments").status_code == 404


def test_one_attachment_is_deleted_and_its_object_goes_unless_shared(tenant: Tenant) -> None:
    case = new_case(tenant)
    result_id = add_result(tenant)
    own = b"the case's own wireframe notes\n"
    upload(tenant.api, result_id, ("shot.png", PNG, "image/png"))  # the same bytes as the case's PNG
    shared, notes, kept = upload_to_case(tenant.api, case["id"], ("shot.png", PNG, "image/png"),
                                         ("notes.txt", own, "text/plain"),
                                         ("kept.txt", TXT, "text/plain")).json()["data"]
    assert_problem(tenant.client("read").delete(f"/api/v1/attachments/{notes['id']}"), 403)
    assert tenant.api.delete(f"/api/v1/attachments/{notes['id']}").status_code == 204
    assert wait_until_gone(object_path(tenant.server, tenant, own)), "the deleted attachment's object stayed"
    assert eventually(lambda: f"{tenant.id}/{hashlib.sha256(own).hexdigest()}" not in object_rows(
        tenant.server, tenant.id))
    assert_problem(tenant.api.get(f"/api/v1/attachments/{notes['id']}"), 404)
    assert_problem(tenant.api.delete(f"/api/v1/attachments/{notes['id']}"), 404)
    # a result still has the PNG's bytes: its object stays, and the result's download still works
    assert tenant.api.delete(f"/api/v1/attachments/{shared['id']}").status_code == 204
    listed = tenant.api.get(f"/api/v1/cases/{case['id']}/attachments").json()["data"]
    assert [a["id"] for a in listed] == [kept["id"]]
    result_files = tenant.api.get(f"/api/v1/results/{result_id}").json()["data"]["attachments"]
    assert tenant.api.get(f"/api/v1/attachments/{result_files[0]['id']}").content == PNG
    assert object_path(tenant.server, tenant, PNG).exists()
    entries = tenant.api.get("/api/v1/audit", params={"action": "attachment.deleted"}).json()["data"]
    assert sorted(e["changes"]["file"] for e in entries) == ["notes.txt", "shot.png"]
    assert {e["entity_id"] for e in entries} == {case["id"]}
    # the same route deletes a result's attachment; then no row references the PNG and it goes
    assert tenant.api.delete(f"/api/v1/attachments/{result_files[0]['id']}").status_code == 204
    assert tenant.api.get(f"/api/v1/results/{result_id}").json()["data"]["attachments"] == []
    assert wait_until_gone(object_path(tenant.server, tenant, PNG))


def test_the_case_page_deletes_an_attachment_with_its_button(tenant: Tenant) -> None:
    case, other = new_case(tenant), new_case(tenant)
    content = b"a mock-up description to delete\n"
    doomed = upload_to_case(tenant.api, case["id"], ("mock-up.txt", content, "text/plain")).json()["data"][0]
    theirs = upload_to_case(tenant.api, other["id"], ("other.txt", TXT, "text/plain")).json()["data"][0]
    web = tenant.web()
    action = f"/cases/{case['code']}/attachments/{doomed['id']}/delete"
    page = web.get(f"/cases/{case['code']}").text
    assert f'action="{action}"' in page and 'name="_csrf_token"' in page.split(action, 1)[1][:400]
    # only the case named in the path: another case's attachment is a 404 there, and stays
    assert web.post(f"/cases/{case['code']}/attachments/{theirs['id']}/delete", data={}).status_code == 404
    assert tenant.api.get(f"/api/v1/attachments/{theirs['id']}").status_code == 200
    answer = web.post(action, data={})
    assert answer.status_code == 303 and answer.headers["location"].startswith(f"/cases/{case['code']}")
    assert tenant.api.get(f"/api/v1/cases/{case['id']}/attachments").json()["data"] == []
    assert wait_until_gone(object_path(tenant.server, tenant, content))
    listed = web.get(f"/cases/{case['code']}").text.split('id="attachment-list"', 1)[1].split("</ul>", 1)[0]
    assert "mock-up.txt" not in listed and "No specs, mock-ups or data files yet." in listed
    # a form post without the CSRF token is refused
    again = upload_to_case(tenant.api, case["id"], ("again.txt", content, "text/plain")).json()["data"][0]
    del web.headers["x-csrftoken"]
    assert web.post(f"/cases/{case['code']}/attachments/{again['id']}/delete", data={}).status_code == 403
    assert tenant.api.get(f"/api/v1/attachments/{again['id']}").status_code == 200
