"""Issue 22 on the library: history diffs, import planning, TestRail parsing, CSV injection, previews.

Each attack is answered (a bounded page, a 400 naming the limit) and, for the CPU-heavy ones, another
tenant is answered meanwhile (``tests/latency.py``).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import os
import time
from pathlib import Path

import httpx

from tests.conftest import Tenant, assert_problem, run_admin
from tests.latency import while_attacking
from tests.test_case_import import HEADER, all_cases, csv_of, export, upload
from tests.web_helpers import HTML, flashes, follow

STEPS = "Feature: Long\n  Scenario: many steps\n    Given a start\n"


def _probe_token(other: Tenant) -> str:
    return other.read_token


# ------------------------------------------------------------------------------------ item 2: history diff


def test_history_diff_of_repeated_lines_does_not_stall_others(tenant: Tenant, other_tenant: Tenant) -> None:
    """difflib compares repeated lines in cubic time: 800 lines held the event loop for ~9 s."""
    project = tenant.create_project()
    old = STEPS + "    And a\n" * 800
    new = STEPS + "    And a\n    And b\n" * 400
    case = tenant.api.post("/api/v1/cases", json={"project_id": project["id"], "title": "Long",
                                                  "bdd_content": old}).json()["data"]
    assert tenant.api.patch(f"/api/v1/cases/{case['id']}", json={"bdd_content": new}).status_code == 200
    web = tenant.web()
    seen = while_attacking(tenant.server.url, _probe_token(other_tenant),
                           lambda: web.get(f"/cases/{case['code']}/versions?a=1&b=2", headers=HTML, timeout=300))
    assert seen.result.status_code == 200
    assert '<tr class="add">' in seen.result.text and '<tr class="del">' in seen.result.text
    seen.assert_nobody_waited()


def test_history_diff_of_a_16000_line_case(tenant: Tenant, other_tenant: Tenant) -> None:
    """The issue's case: 16,000 lines (107 s on the loop before). Unchanged runs fold to their context."""
    project = tenant.create_project()
    old = STEPS + "    And a\n" * 16_000
    new = STEPS + "    And a\n    And b\n" * 8_000
    case = tenant.api.post("/api/v1/cases", json={"project_id": project["id"], "title": "Huge",
                                                  "bdd_content": old}, timeout=120).json()["data"]
    assert tenant.api.patch(f"/api/v1/cases/{case['id']}", json={"bdd_content": new},
                            timeout=120).status_code == 200
    web = tenant.web()
    url = f"/cases/{case['code']}/versions?a=1&b=2"
    seen = while_attacking(tenant.server.url, _probe_token(other_tenant),
                           lambda: web.get(url, headers=HTML, timeout=300))
    assert seen.result.status_code == 200
    assert "more changed lines are not shown" in seen.result.text
    seen.assert_nobody_waited()
    # the same pair again comes from the cache; a small edit of a big case shows only its context
    assert web.get(url, headers=HTML).status_code == 200
    edited = new.replace("    And b\n", "    And c\n", 1)
    assert tenant.api.patch(f"/api/v1/cases/{case['id']}", json={"bdd_content": edited},
                            timeout=120).status_code == 200
    page = web.get(f"/cases/{case['code']}/versions?a=2&b=3", headers=HTML).text
    assert page.count('<tr class="add">') == 1 and page.count('<tr class="del">') == 1
    assert "unchanged lines" in page and page.count('<tr class="same">') <= 6


def test_history_diff_too_large_to_compare(tenant: Tenant) -> None:
    """Past the bound (the changed part of both versions), the page says so instead of comparing."""
    project = tenant.create_project()
    old = "Feature: F\n  Scenario: S\n" + "".join(f"* s{i}\n" for i in range(22_000))
    new = "Feature: F\n  Scenario: S\n" + "".join(f"* t{i}\n" for i in range(22_000))
    case = tenant.api.post("/api/v1/cases", json={"project_id": project["id"], "title": "Big",
                                                  "bdd_content": old}, timeout=120).json()["data"]
    tenant.api.patch(f"/api/v1/cases/{case['id']}", json={"bdd_content": new}, timeout=120)
    page = tenant.web().get(f"/cases/{case['code']}/versions?a=1&b=2", headers=HTML, timeout=120)
    assert page.status_code == 200 and "too large to compare" in page.text


# ------------------------------------------------------------------------------------ item 3: import planning


def _deep_csv(depth: int) -> str:
    return csv_of(["", "Deep", " / ".join(f"s{i}" for i in range(depth)), "", "", "", "", "", "", "",
                   "Feature: F\n  Scenario: S\n    Given x\n"])


def test_csv_section_depth_limit_is_a_400_and_nobody_waits(tenant: Tenant, other_tenant: Tenant) -> None:
    project = tenant.create_project()
    seen = while_attacking(tenant.server.url, _probe_token(other_tenant),
                           lambda: upload(tenant, project["id"], _deep_csv(3000), dry_run="true"))
    problem = assert_problem(seen.result, 400)
    assert "3000 levels" in problem["detail"] and "at most 50" in problem["detail"]
    seen.assert_nobody_waited()
    # at the limit it imports, with every level created
    at_limit = upload(tenant, project["id"], _deep_csv(50))
    assert at_limit.status_code == 201, at_limit.text
    assert at_limit.json()["sections_created"] == 50


def test_csv_section_count_limit_is_a_400_and_nobody_waits(tenant: Tenant, other_tenant: Tenant) -> None:
    project = tenant.create_project()
    feature = "Feature: F\n  Scenario: S\n    Given x\n"
    rows = [["", f"Case {i}", f"flat {i}", "", "", "", "", "", "", "", feature] for i in range(50_000)]
    data = csv_of(*rows)
    seen = while_attacking(tenant.server.url, _probe_token(other_tenant),
                           lambda: upload(tenant, project["id"], data, dry_run="true"))
    problem = assert_problem(seen.result, 400)
    assert "10000 sections" in problem["detail"].replace(",", "")
    seen.assert_nobody_waited()
    # many sections under the limit plan in linear time
    fine = upload(tenant, project["id"], csv_of(*rows[:3000]), dry_run="true")
    assert fine.status_code == 201, fine.text
    assert (fine.json()["created"], fine.json()["sections_created"]) == (3000, 3000)


def _nested_testrail(depth: int, case_id: str = "C1") -> bytes:
    opening = "<section><name>s</name><sections>" * depth
    closing = "</sections></section>" * depth
    inner = (f"<section><name>leaf</name><cases><case><id>{case_id}</id><title>T</title></case></cases>"
             "</section>")
    return f"<suite><sections>{opening}{inner}{closing}</sections></suite>".encode()


def test_testrail_nesting_limit_is_a_400_and_nobody_waits(tenant: Tenant, other_tenant: Tenant) -> None:
    project = tenant.create_project()
    seen = while_attacking(tenant.server.url, _probe_token(other_tenant),
                           lambda: upload(tenant, project["id"], _nested_testrail(990), "testrail-xml",
                                          dry_run="true"))
    problem = assert_problem(seen.result, 400)
    assert "at most 50" in problem["detail"]
    seen.assert_nobody_waited()
    fine = upload(tenant, project["id"], _nested_testrail(49), "testrail-xml")
    assert fine.status_code == 201, fine.text
    assert fine.json()["sections_created"] == 50


# ------------------------------------------------------------------------------------ item 9: TestRail 500s


def test_testrail_recursion_and_huge_ids_are_400s(tenant: Tenant) -> None:
    project = tenant.create_project()
    deep = assert_problem(upload(tenant, project["id"], _nested_testrail(1100), "testrail-xml"), 400)
    assert "nest" in deep["detail"]
    # deep markup anywhere (inside a title) is refused the same way, never a RecursionError
    title = "<b>" * 5000 + "x" + "</b>" * 5000
    markup = f"<suite><sections><section><name>s</name><cases><case><title>{title}</title></case></cases>" \
             "</section></sections></suite>"
    assert "nest" in assert_problem(upload(tenant, project["id"], markup, "testrail-xml"), 400)["detail"]
    huge = assert_problem(upload(tenant, project["id"], _nested_testrail(1, "C" + "7" * 5000), "testrail-xml"),
                          400)
    assert "case 1" in huge["detail"] and "digits" in huge["detail"]
    # an ordinary id still becomes the code
    ok = upload(tenant, project["id"], _nested_testrail(1, "C0042"), "testrail-xml")
    assert ok.status_code == 201 and [c["code"] for c in all_cases(tenant, project_id=project["id"])] == ["C-42"]


# ------------------------------------------------------------------------------------ item 8: CSV injection

DANGEROUS = ["=1+2", "+1", "-1", "@SUM(A1)", "\t=cmd", "\r=cmd", "'=literal", "''two", "'plain"]


def _cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def test_export_neutralises_formulas_and_imports_back_unchanged(tenant: Tenant) -> None:
    project = tenant.create_project()
    section = tenant.api.post("/api/v1/sections", json={"project_id": project["id"],
                                                        "name": "=HYPERLINK(x)"}).json()["data"]
    feature = "@smoke\nFeature: F\n  Scenario: S\n    Given x\n"
    made = []
    for title in DANGEROUS:
        body = {"project_id": project["id"], "title": title, "bdd_content": feature, "tags": ["-rm", "ok"],
                "section_id": section["id"]}
        response = tenant.api.post("/api/v1/cases", json=body)
        assert response.status_code == 201, response.text
        made.append(response.json()["data"])
    text = export(tenant, project["id"])
    rows = _cells(text)[1:]
    by_code = {row[0]: row for row in rows}
    for case in made:
        row = by_code[case["code"]]
        for cell in row:  # no cell starts the way a spreadsheet formula does
            assert cell[:1] not in ("=", "+", "-", "@", "\t", "\r"), row
        assert row[1] == ("'" + case["title"] if case["title"] != "'plain" else "'plain")
        assert row[2] == "'=HYPERLINK(x)" and row[8] == "'-rm;ok" and row[10].startswith("'@smoke")
    # our own import takes exactly that quote off again: nothing changes
    again = upload(tenant, project["id"], text).json()
    assert (again["created"], again["updated"], again["unchanged"], again["rejected"]) == (0, 0, len(made), 0)
    stored = {c["code"]: c for c in all_cases(tenant, project_id=project["id"])}
    titles = sorted(c["title"] for c in made)  # as the API stored them (it may trim white space)
    assert sorted(c["title"] for c in stored.values()) == titles
    # into a fresh project (new codes): the values arrive as they were
    fresh = tenant.create_project()
    rows2 = _cells(text)
    rows2 = [rows2[0]] + [["", *row[1:]] for row in rows2[1:]]  # no codes: every row creates a case
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(rows2)
    assert upload(tenant, fresh["id"], buffer.getvalue()).status_code == 201
    fresh_cases = all_cases(tenant, project_id=fresh["id"])
    assert sorted(c["title"] for c in fresh_cases) == titles
    assert all(c["tags"] == ["-rm", "ok"] and c["bdd_content"] == feature for c in fresh_cases)
    sections = tenant.api.get("/api/v1/sections", params={"project_id": fresh["id"]}).json()["data"]
    assert [s["name"] for s in sections] == ["=HYPERLINK(x)"]


def test_exports_have_one_charset_and_the_web_export_is_neutralised_too(tenant: Tenant) -> None:
    project = tenant.create_project()
    tenant.api.post("/api/v1/cases", json={"project_id": project["id"], "title": "=cmd|' /C calc'!A0",
                                           "bdd_content": "Feature: F\n  Scenario: S\n    Given x\n"})
    api = tenant.api.get("/api/v1/cases/export", params={"project_id": project["id"]})
    web = tenant.web().get("/cases/export", params={"project_id": project["id"]})
    for response in (api, web):
        assert response.status_code == 200
        content_type = response.headers["content-type"]
        assert content_type.startswith("text/csv") and content_type.lower().count("charset") == 1, content_type
        assert _cells(response.text)[1][1] == "'=cmd|' /C calc'!A0"


def test_openapi_documents_the_export_as_csv(tenant: Tenant) -> None:
    schema = httpx.get(f"{tenant.server.url}/schema/openapi.json").json()
    responses = schema["paths"]["/api/v1/cases/export"]["get"]["responses"]
    assert list(responses["200"]["content"]) == ["text/csv"]


# ------------------------------------------------------------------------------------ NUL in a CSV import


def test_nul_in_a_csv_import_is_a_row_error_or_replaced_in_free_text(tenant: Tenant) -> None:
    project = tenant.create_project()
    feature = "Feature: F\n  Scenario: S\n    Given x\n"
    data = csv_of(
        ["", "bad\0title", "", "", "", "", "", "", "", "", feature],
        ["NUL-1\0", "code", "", "", "", "", "", "", "", "", feature],
        ["", "section", "A\0 / B", "", "", "", "", "", "", "", feature],
        ["", "tags", "", "", "", "", "", "", "a\0b", "", feature],
        ["", "free text", "", "", "", "", "", "", "", "", "Feature: F\n  Scenario: S\n    Given x\0y\n"],
    )
    response = upload(tenant, project["id"], data)
    assert response.status_code == 207, response.text
    body = response.json()
    errors = {e["row"]: e["error"] for e in body["errors"]}
    assert set(errors) == {2, 3, 4, 5}
    for row, column in ((2, "title"), (3, "code"), (4, "section"), (5, "tags")):
        assert errors[row].startswith(f"{column}: ") and "NUL" in errors[row], errors[row]
    [stored] = all_cases(tenant, project_id=project["id"])
    assert stored["bdd_content"] == "Feature: F\n  Scenario: S\n    Given x\ufffdy\n"


# ------------------------------------------------------------------------------------ item 12: previews


def _second_user(tenant: Tenant) -> Tenant:
    from tms.team import accounts

    email = f"second-{os.getpid()}-{time.time_ns()}@example.com"
    run_admin(tenant.server.db_path, lambda db: accounts.create_user(db, tenant.id, email, tenant.password))
    return dataclasses.replace(tenant, email=email)


def _preview(web: httpx.Client, project_id: str, n: int) -> str:
    data = csv_of(["", f"Case {n}", "", "", "", "", "", "", "", "", "Feature: F\n  Scenario: S\n    Given x\n"])
    response = web.post("/cases/import", data={"project_id": project_id, "format": "csv"},
                        files={"file": ("cases.csv", data.encode(), "text/csv")}, headers=HTML)
    assert response.status_code == 200, response.text[:300]
    return response.text.split('name="token" value="')[1].split('"')[0]


def _waiting(tenant: Tenant) -> list[Path]:
    return list((tenant.server.data_dir / "imports" / tenant.id).rglob("*.bin"))


def test_import_previews_are_capped_per_user_and_tenant_and_expire(tenant: Tenant) -> None:
    project = tenant.create_project()
    web = tenant.web()
    tokens = [_preview(web, project["id"], n) for n in range(5)]
    assert len(_waiting(tenant)) == 3  # a user keeps their 3 newest previews
    gone = follow(web, web.post("/cases/import/confirm", data={"token": tokens[0]}))
    assert "expired" in " ".join(flashes(gone.text))
    kept = follow(web, web.post("/cases/import/confirm", data={"token": tokens[4]}))
    assert "1 created" in " ".join(flashes(kept.text))
    # the tenant keeps at most 10, whoever made them; the oldest go first
    others = [_second_user(tenant).web() for _ in range(4)]
    for other in others:
        for n in range(3):
            _preview(other, project["id"], n)
    assert len(_waiting(tenant)) == 10
    # another user of the tenant cannot confirm someone else's preview
    newest = _preview(others[0], project["id"], 99)
    refused = follow(web, web.post("/cases/import/confirm", data={"token": newest}))
    assert "expired" in " ".join(flashes(refused.text))
    # an hour-old preview is removed at the next preview
    old = time.time() - 2 * 3600
    for path in _waiting(tenant):
        os.utime(path, (old, old))
        os.utime(path.with_suffix(".json"), (old, old))
    _preview(web, project["id"], 100)
    assert len(_waiting(tenant)) == 1


def test_preview_of_a_file_over_the_limits_is_a_form_error(tenant: Tenant) -> None:
    project = tenant.create_project()
    web = tenant.web()
    response = web.post("/cases/import", data={"project_id": project["id"], "format": "csv"},
                        files={"file": ("deep.csv", _deep_csv(3000).encode(), "text/csv")}, headers=HTML)
    assert response.status_code == 400 and "at most 50" in response.text
    assert HEADER.split(",")[0] == "code"


def test_neutralise_and_restore_are_exact_inverses() -> None:
    from tms.library.transfer.csvfile import neutralise, restore

    values = ["", "x", "'", "''", "'''", "'x", "''x", "=", "'=", "''=", "+1", "'+1", "-", "@a", "'@a", "\t", "'\t",
              "\r\n", "'\r", " =1", "'quoted'"]
    for value in values:
        cell = neutralise(value)
        assert restore(cell) == value, value
        assert cell[:1] not in ("=", "+", "-", "@", "\t", "\r"), value
    assert neutralise("'quoted'") == "'quoted'" and restore("'quoted'") == "'quoted'"  # a lone quote stays
