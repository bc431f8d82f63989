"""Web interface: test-case list (search, filters, pagination), case page, create/edit forms."""

from __future__ import annotations

import re

from tests.conftest import Tenant
from tests.web_helpers import HTML, every_post_form_has_csrf, field_error, follow, text_of

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)

FEATURE = """@smoke
Feature: Checkout

  Scenario Outline: Pay with <method>
    Given a cart with "2" items
    When they pay with <method>
    \"\"\"
    a doc string
    \"\"\"
    Examples:
      | method |
      | card   |
"""


def _case(tenant: Tenant, title: str, **fields) -> dict:
    response = tenant.api.post("/api/v1/cases", json={"title": title, "bdd_content": FEATURE, **fields})
    assert response.status_code == 201, response.text
    return response.json()["data"]


def _codes(html: str) -> list[str]:
    return re.findall(r'<a href="/cases/([A-Z][A-Z0-9]*-\d+)"><code>', html)


def test_list_search_and_filters(tenant: Tenant) -> None:
    project = tenant.create_project("Shop")
    a = _case(tenant, "Pay by card", project_id=project["id"], status="READY", automation_status="FLAKY",
              priority="HIGH", layer="UI", tags=["smoke"])
    b = _case(tenant, "Refund order", status="DRAFT", priority="LOW", layer="API", tags=["payments"])
    web = tenant.web()
    page = web.get("/cases", headers=HTML)
    assert page.status_code == 200 and set(_codes(page.text)) == {a["code"], b["code"]}
    assert every_post_form_has_csrf(page.text)
    cases = [
        ("q=refund", {b["code"]}), (f"q={a['code']}", {a["code"]}), ("status=READY", {a["code"]}),
        ("automation_status=FLAKY", {a["code"]}), ("priority=LOW", {b["code"]}), ("layer=API", {b["code"]}),
        ("tag=smoke", {a["code"]}), (f"project_id={project['id']}", {a["code"]}), ("q=nothing-matches", set()),
        ("status=BOGUS", {a["code"], b["code"]}), ("q=%25", set()),
    ]
    for query, expected in cases:
        listed = web.get(f"/cases?{query}", headers=HTML)
        assert listed.status_code == 200, query
        assert set(_codes(listed.text)) == expected, query
    assert "No test case matches" in web.get("/cases?q=nothing-matches").text


def test_list_paginates(tenant: Tenant) -> None:
    body = [{"title": f"Case {i}", "bdd_content": FEATURE} for i in range(55)]
    for item in body:
        assert tenant.api.post("/api/v1/cases", json=item).status_code == 201
    web = tenant.web()
    first = web.get("/cases", headers=HTML)
    assert len(_codes(first.text)) == 50 and "Page 1 of 2" in text_of(first.text)
    second = web.get("/cases?offset=50", headers=HTML)
    assert len(_codes(second.text)) == 5 and "Page 2 of 2" in text_of(second.text)
    assert not set(_codes(first.text)) & set(_codes(second.text))


def test_case_page_highlights_gherkin_and_shows_metadata(tenant: Tenant) -> None:
    case = _case(tenant, "Pay by card <b>", tags=["smoke"], tickets=[{"key": "SHOP-7", "source": "JIRA"}])
    web = tenant.web()
    page = web.get(f"/cases/{case['code']}", headers=HTML)
    assert page.status_code == 200
    html = page.text
    assert '<span class="g-kw">Feature:</span>' in html
    assert '<span class="g-step">Given </span>' in html
    assert '<span class="g-tag">@smoke</span>' in html
    assert '<span class="g-pipe">|</span>' in html and 'class="g-cell"' in html
    assert 'class="g-doc"' in html and 'class="g-ph">&lt;method&gt;' in html
    assert "Pay by card &lt;b&gt;" in html  # escaped, never markup
    assert "SHOP-7" in html and "No results yet" in html
    assert every_post_form_has_csrf(html)
    by_id = web.get(f"/cases/{case['id']}", headers=HTML)
    assert by_id.status_code == 200 and case["code"] in by_id.text


def test_create_case_with_invalid_gherkin_shows_the_line(tenant: Tenant) -> None:
    web = tenant.web()
    bad = "Feature: Broken\n  Scenario: one\n    Given a step\n  this line is not gherkin\n"
    response = web.post("/cases/new", data={"title": "Keep my title", "bdd_content": bad, "status": "DRAFT"})
    assert response.status_code == 400
    html = response.text
    assert 'href="#L4">Line 4</a>' in html
    assert re.search(r'class="ln bad" id="L4"', html)
    assert 'value="Keep my title"' in html and "this line is not gherkin" in html
    assert tenant.api.get("/api/v1/cases").json()["pagination"]["total"] == 0


def test_create_case_validation_messages(tenant: Tenant) -> None:
    web = tenant.web()
    no_title = web.post("/cases/new", data={"title": "", "bdd_content": FEATURE})
    assert no_title.status_code == 400 and field_error(no_title.text, "title")
    bad_code = web.post("/cases/new", data={"title": "x", "bdd_content": FEATURE, "code": "lower-1"})
    assert bad_code.status_code == 400 and "SHOP-12" in (field_error(bad_code.text, "code") or "")
    bad_ticket = web.post("/cases/new", data={"title": "x", "bdd_content": FEATURE, "tickets": "JIRA A-1 extra"})
    assert bad_ticket.status_code == 400 and "Line 1" in (field_error(bad_ticket.text, "tickets") or "")
    _case(tenant, "taken", code="SHOP-1")
    dup = web.post("/cases/new", data={"title": "x", "bdd_content": FEATURE, "code": "SHOP-1"})
    assert dup.status_code == 400 and "already used" in (field_error(dup.text, "code") or "")


def test_create_then_edit_case(tenant: Tenant) -> None:
    project = tenant.create_project("Shop")
    web = tenant.web()
    form = web.get("/cases/new", headers=HTML)
    assert form.status_code == 200 and 'name="bdd_content"' in form.text
    created = web.post("/cases/new", data={
        "title": "Pay by card", "bdd_content": FEATURE, "project_id": project["id"], "status": "READY",
        "priority": "HIGH", "layer": "UI", "automation_status": "AUTOMATED", "is_e2e": "on",
        "tags": "smoke, checkout", "tickets": "JIRA SHOP-9\nGH-4",
    })
    page = follow(web, created)
    code = re.search(r"Test case (\S+) created", page.text).group(1)
    api_case = tenant.api.get(f"/api/v1/cases/{code}").json()["data"]
    assert api_case["tags"] == ["smoke", "checkout"] and api_case["is_e2e"] is True
    assert api_case["tickets"] == [{"key": "SHOP-9", "source": "JIRA"}, {"key": "GH-4", "source": "OTHER"}]
    assert (api_case["status"], api_case["priority"], api_case["layer"]) == ("READY", "HIGH", "UI")
    edit = web.get(f"/cases/{code}/edit", headers=HTML)
    assert 'value="Pay by card"' in edit.text and "JIRA SHOP-9" in edit.text
    saved = web.post(f"/cases/{code}/edit", data={
        "title": "Pay by saved card", "bdd_content": FEATURE, "project_id": "", "status": "DEPRECATED",
        "priority": "LOW", "layer": "", "automation_status": "MANUAL", "tags": "", "tickets": "",
        "code": code,
    })
    follow(web, saved)
    after = tenant.api.get(f"/api/v1/cases/{code}").json()["data"]
    assert (after["title"], after["status"], after["layer"], after["is_e2e"], after["tags"]) == (
        "Pay by saved card", "DEPRECATED", None, False, [])


def test_status_change_from_case_page(tenant: Tenant) -> None:
    case = _case(tenant, "Flip me")
    web = tenant.web()
    page = follow(web, web.post(f"/cases/{case['code']}/status",
                                data={"status": "READY", "automation_status": "FLAKY"}))
    assert "status ready" in page.text and "automation status flaky" in page.text
    after = tenant.api.get(f"/api/v1/cases/{case['id']}").json()["data"]
    assert (after["status"], after["automation_status"]) == ("READY", "FLAKY")
    bogus = follow(web, web.post(f"/cases/{case['code']}/status", data={"status": "NOPE"}))
    assert "Choose a listed status" in bogus.text


def test_other_tenants_case_is_404(tenant: Tenant, other_tenant: Tenant) -> None:
    theirs = _case(other_tenant, "Secret")
    web = tenant.web()
    for path in (f"/cases/{theirs['id']}", f"/cases/{theirs['code']}", f"/cases/{theirs['id']}/edit"):
        response = web.get(path, headers=HTML)
        assert response.status_code == 404, path
        assert "Secret" not in response.text
    assert web.post(f"/cases/{theirs['id']}/status", data={"status": "READY"}).status_code == 404
    assert web.post(f"/cases/{theirs['id']}/edit", data={"title": "x", "bdd_content": FEATURE}).status_code == 404
    assert other_tenant.api.get(f"/api/v1/cases/{theirs['id']}").json()["data"]["status"] == "DRAFT"


def test_case_forms_need_csrf(tenant: Tenant) -> None:
    web = tenant.web()
    del web.headers["x-csrftoken"]
    assert web.post("/cases/new", data={"title": "x", "bdd_content": FEATURE}).status_code == 403


def test_anonymous_is_sent_to_login(tenant: Tenant) -> None:
    response = tenant.server.http_client().get("/cases")
    assert response.status_code in (302, 303, 307) and "/login" in response.headers["location"]


def test_list_marks_cases_waiting_for_retest(tenant: Tenant) -> None:
    flagged, plain = _case(tenant, "Flagged"), _case(tenant, "Plain")
    web = tenant.web()
    assert web.post(f"/cases/{flagged['code']}/retest", data={"needs_retest": "true"}).status_code == 303
    rows = web.get("/cases", headers=HTML).text.split("<tr>")
    assert "needs retest" in next(r for r in rows if f'href="/cases/{flagged["code"]}"' in r)
    assert "needs retest" not in next(r for r in rows if f'href="/cases/{plain["code"]}"' in r)
