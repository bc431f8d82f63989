"""Web interface: runs list and run page (filters, stack traces, attachments, unlinked results, completion)."""

from __future__ import annotations

import json
import re
import struct
import zlib

from tests.conftest import Tenant, connect_db
from tests.web_helpers import HTML, every_post_form_has_csrf, follow, text_of

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)

FEATURE = "Feature: f\n  Scenario: s\n    Given a step\n"


def png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * 4 for _ in range(4))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _seed(tenant: Tenant) -> tuple[dict, str]:
    project = tenant.create_project("Shop")
    for title in ("Pay", "Refund"):
        assert tenant.api.post("/api/v1/cases", json={"title": title, "bdd_content": FEATURE,
                                                      "project_id": project["id"]}).status_code == 201
    codes = [c["code"] for c in tenant.api.get("/api/v1/cases").json()["data"]]
    response = tenant.api.post("/api/v1/ingest", json={
        "project_id": project["id"], "run_name": "Nightly <42>", "environment": "staging", "framework": "pytest",
        "results": [
            {"test_case_code": codes[0], "status": "PASSED", "duration_ms": 1500},
            {"test_case_code": codes[1], "status": "FAILED", "error_message": "expected 200, got 500",
             "error_stack": "Traceback: line 1\nboom", "bug_ticket_key": "SHOP-9",
             "bug_ticket_url": "https://jira.example.com/browse/SHOP-9"},
            {"title": "unlinked login test", "status": "BROKEN"},
            {"title": "evil link", "status": "SKIPPED", "bug_ticket_key": "X-1",
             "bug_ticket_url": "javascript:alert(1)"},
        ],
    })
    assert response.status_code == 201, response.text
    return project, response.json()["run_id"]


def test_runs_list_shows_status_and_counts(tenant: Tenant) -> None:
    project, _ = _seed(tenant)
    tenant.api.post("/api/v1/runs", json={"name": "Manual pass", "project_id": project["id"]})
    web = tenant.web()
    page = web.get("/runs", headers=HTML)
    assert page.status_code == 200
    text = text_of(page.text)
    assert "Nightly <42>" in text and "Manual pass" in text and "Completed" in text and "Pending" in text
    assert "4 total" in text and "1 passed" in text and "1 failed" in text and "1 blocked" in text
    assert 'role="img" aria-label="1 passed, 1 failed, 1 blocked, 1 skipped"' in page.text
    completed = web.get("/runs?status=COMPLETED", headers=HTML)
    assert "Nightly" in completed.text and "Manual pass" not in completed.text
    other = tenant.create_project("Other")
    assert "No run matches" in web.get(f"/runs?project_id={other['id']}", headers=HTML).text


def test_run_page_results_sections_and_filter(tenant: Tenant) -> None:
    _, run_id = _seed(tenant)
    web = tenant.web()
    page = web.get(f"/runs/{run_id}", headers=HTML)
    assert page.status_code == 200 and every_post_form_has_csrf(page.text)
    html = page.text
    assert "Nightly &lt;42&gt;" in html
    assert "expected 200, got 500" in html
    assert re.search(r"<details class=\"stack\"><summary>Stack trace</summary><pre>Traceback: line 1\nboom</pre>", html)
    assert 'href="https://jira.example.com/browse/SHOP-9"' in html
    assert "javascript:" not in html  # an unsafe bug URL is shown as text, never as a link
    # the results sections (the failure clusters above them name failing tests of both kinds)
    linked, _, unlinked = html.split('id="results-title"', 1)[1].partition('id="unlinked-title"')
    assert "unlinked login test" in unlinked and "unlinked login test" not in linked
    assert "1.5 s" in linked and "pytest" in linked
    failed_only = web.get(f"/runs/{run_id}?status=FAILED", headers=HTML).text.split('id="results-title"', 1)[1]
    assert "expected 200" in failed_only and "unlinked login test" not in failed_only
    assert "Mark completed" not in html  # ingest creates runs COMPLETED


def test_mark_completed_fires_once(tenant: Tenant) -> None:
    project = tenant.create_project("Shop")
    run = tenant.api.post("/api/v1/runs", json={"name": "Manual", "project_id": project["id"]}).json()["data"]
    web = tenant.web()
    page = web.get(f"/runs/{run['id']}", headers=HTML)
    assert "Mark completed" in page.text
    done = follow(web, web.post(f"/runs/{run['id']}/complete"))
    assert "marked completed" in done.text and "Mark completed" not in done.text
    assert tenant.api.get(f"/api/v1/runs/{run['id']}").json()["data"]["status"] == "COMPLETED"
    again = follow(web, web.post(f"/runs/{run['id']}/complete"))
    assert "already completed" in again.text
    # the runs service fired test_run.completed into the outbox, once
    with connect_db(tenant.server.db_path) as conn:
        bodies = [json.loads(body) for (body,) in conn.execute(
            "SELECT body FROM events WHERE tenant_id = ? AND event = 'test_run.completed'", (tenant.id,))]
    assert [b["data"]["run_id"] for b in bodies] == [run["id"]]


def test_attachments_inline_and_download(tenant: Tenant) -> None:
    _, run_id = _seed(tenant)
    results = tenant.api.get(f"/api/v1/runs/{run_id}/results").json()["data"]
    failed = next(r for r in results if r["status"] == "FAILED")
    upload = tenant.api.post(f"/api/v1/results/{failed['id']}/attachments",
                             files=[("file", ("shot.png", png(), "image/png")),
                                    ("file", ("log.txt", b"log line\n", "text/plain"))])
    assert upload.status_code == 201, upload.text
    image, text_file = upload.json()["data"]
    web = tenant.web()
    page = web.get(f"/runs/{run_id}", headers=HTML).text
    assert f'<img src="/web/attachments/{image["id"]}"' in page
    assert f'href="/web/attachments/{text_file["id"]}" download="log.txt"' in page
    got = web.get(f"/web/attachments/{image['id']}")
    assert got.status_code == 200 and got.content == png() and got.headers["content-type"] == "image/png"
    assert got.headers["x-content-type-options"] == "nosniff"
    assert 'filename="log.txt"' in web.get(f"/web/attachments/{text_file['id']}").headers["content-disposition"]


def test_other_tenants_run_and_attachment_are_404(tenant: Tenant, other_tenant: Tenant) -> None:
    _, run_id = _seed(other_tenant)
    results = other_tenant.api.get(f"/api/v1/runs/{run_id}/results").json()["data"]
    attachment = other_tenant.api.post(f"/api/v1/results/{results[0]['id']}/attachments",
                                       files=[("file", ("shot.png", png(), "image/png"))]).json()["data"][0]
    web = tenant.web()
    assert web.get(f"/runs/{run_id}", headers=HTML).status_code == 404
    assert web.post(f"/runs/{run_id}/complete").status_code == 404
    assert web.get(f"/web/attachments/{attachment['id']}").status_code == 404
    assert "Nightly" not in web.get("/runs", headers=HTML).text


def test_run_page_pages_linked_and_unlinked_results_apart(tenant: Tenant) -> None:
    project = tenant.create_project("Big")
    bodies = [{"title": f"Case {i:03d}", "bdd_content": FEATURE, "project_id": project["id"]} for i in range(205)]
    codes = [tenant.api.post("/api/v1/cases", json=body).json()["data"]["code"] for body in bodies]
    items = [{"test_case_code": code, "status": "PASSED"} for code in codes]
    items += [{"title": f"loose {i:03d}", "status": "FAILED"} for i in range(203)]
    run_id = tenant.api.post("/api/v1/ingest", json={"project_id": project["id"], "results": items}).json()["run_id"]
    web = tenant.web()
    first = web.get(f"/runs/{run_id}", headers=HTML).text
    linked, _, unlinked = first.partition('id="unlinked-title"')
    assert linked.count('<tr class="result">') == 200 and unlinked.count('<tr class="result">') == 200
    assert "Case 199" in linked and "Case 200" not in linked and "loose 199" in unlinked and "loose 200" not in unlinked
    assert 'href="?unlinked_offset=200#unlinked-title"' in unlinked and 'href="?offset=200#results-title"' in linked
    # each pager keeps the other section where it is
    second = web.get(f"/runs/{run_id}?offset=200&unlinked_offset=200", headers=HTML).text
    linked, _, unlinked = second.partition('id="unlinked-title"')
    assert linked.count('<tr class="result">') == 5 and unlinked.count('<tr class="result">') == 3
    assert "Case 204" in linked and "loose 202" in unlinked and "loose 199" not in unlinked
    assert 'href="?offset=200&amp;unlinked_offset=0#unlinked-title"' in unlinked
    assert 'href="?unlinked_offset=200&amp;offset=0#results-title"' in linked
