"""Issue 22: a Scenario Outline's expansion (steps x Examples rows) is bounded.

Saving a case whose checklist would exceed ``EXPANDED_STEPS_LIMIT`` is a 400 naming ``bdd_content`` and
the limit (API create and PATCH, CSV import). A case stored before the limit existed keeps working:
its execute page shows one bounded page of its checklist, and ``PATCH /results/{id}`` checks step
indexes against the computed size, without expanding the outline and without making anyone wait.
"""

from __future__ import annotations

import re
from typing import Any

import httpx

from tests.conftest import Tenant, assert_problem, connect_db
from tests.latency import while_attacking
from tests.test_case_import import csv_of, upload
from tests.test_runs import new_run
from tms.library.gherkin.service import EXPANDED_STEPS_LIMIT, STEPS_PAGE_SIZE

SMALL = "Feature: Checkout\n  Scenario: pay\n    Given a cart\n"


def outline(steps: int, rows: int, background: int = 0) -> str:
    """A Feature with ``background`` Background steps and one Outline of ``steps`` x ``rows``."""
    lines = ["Feature: Big"]
    if background:
        lines += ["  Background:", *[f"    Given setup {i}" for i in range(1, background + 1)]]
    lines += ["  Scenario Outline: many", *[f"    When step {i} uses <v>" for i in range(1, steps + 1)],
              "    Examples:", "      | v |", *[f"      | r{r} |" for r in range(1, rows + 1)]]
    return "\n".join(lines) + "\n"


# 16 KB: 100 steps x 1,000 rows = 100,000 expanded steps (the case), plus 2 Background steps
OVERSIZE = outline(100, 1_000, background=2)
OVERSIZE_STEPS = 2 + 100 * 1_000


def _stored_oversize_result(tenant: Tenant) -> tuple[str, str]:
    """(result id, case id) of a run's result whose case was written before the limit existed:
    saved small through the API, then given the oversize Gherkin straight in the database."""
    project = tenant.create_project()
    case = tenant.api.post("/api/v1/cases", json={"title": "Legacy", "bdd_content": SMALL,
                                                  "project_id": project["id"]}).json()["data"]
    with connect_db(tenant.server.db_path) as conn:
        conn.execute("UPDATE test_cases SET bdd_content = ? WHERE id = ? AND tenant_id = ?",
                     (OVERSIZE, case["id"], tenant.id))
    run = new_run(tenant, project, test_case_ids=[case["id"]])
    results = tenant.api.get(f"/api/v1/runs/{run['id']}/results").json()["data"]
    return results[0]["id"], case["id"]


def _problem_names_the_limit(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 400, response.text[:300]
    body = assert_problem(response, 400)
    assert "bdd_content" in body["detail"], body
    assert f"{EXPANDED_STEPS_LIMIT:,}" in body["detail"], body
    return body


def test_saving_an_outline_beyond_the_limit_is_400_naming_the_limit(tenant: Tenant) -> None:
    project = tenant.create_project()
    refused = tenant.api.post("/api/v1/cases", json={"title": "Big", "bdd_content": OVERSIZE,
                                                     "project_id": project["id"]})
    body = _problem_names_the_limit(refused)
    assert f"{OVERSIZE_STEPS:,}" in body["detail"]  # and says how big this one is
    # exactly at the limit is fine, one more step is not
    per_row = 20
    at_limit = outline(per_row, EXPANDED_STEPS_LIMIT // per_row)
    case = tenant.api.post("/api/v1/cases", json={"title": "At", "bdd_content": at_limit})
    assert case.status_code == 201, case.text
    over = outline(per_row, EXPANDED_STEPS_LIMIT // per_row, background=1)
    _problem_names_the_limit(tenant.api.patch(f"/api/v1/cases/{case.json()['data']['id']}",
                                              json={"bdd_content": over}))
    # a text that writes its steps out is bounded by its length, not by the limit
    plain = "Feature: Long\n  Scenario: long\n" + "".join(f"    * step {i}\n" for i in range(2_500))
    assert tenant.api.post("/api/v1/cases", json={"title": "Long", "bdd_content": plain}).status_code == 201
    # the import checks every row with the same rule
    imported = upload(tenant, project["id"], csv_of(["BIG-1", "Big", "", "", "", "", "", "", "", "", OVERSIZE],
                                                    ["OK-1", "Fine", "", "", "", "", "", "", "", "", SMALL]))
    assert imported.status_code == 207, imported.text
    errors = imported.json()["errors"]
    assert len(errors) == 1 and f"{EXPANDED_STEPS_LIMIT:,}" in errors[0]["error"]
    assert tenant.api.get("/api/v1/cases/BIG-1").status_code == 404
    # the web form says it next to the field, in one piece
    form = tenant.web().post("/cases/new", data={"title": "Big", "bdd_content": OVERSIZE, "status": "DRAFT"})
    assert form.status_code == 400
    assert re.search(rf"<li>bdd_content expands to {OVERSIZE_STEPS:,} steps[^<]*at most {EXPANDED_STEPS_LIMIT:,}",
                     form.text)


def test_execute_page_of_a_stored_oversize_case_is_one_bounded_page(tenant: Tenant, other_tenant: Tenant) -> None:
    result_id, _ = _stored_oversize_result(tenant)
    web = tenant.web()
    web.timeout = httpx.Timeout(120)

    def attack() -> list[httpx.Response]:
        return [web.get(f"/results/{result_id}/execute"),
                web.get(f"/results/{result_id}/execute", params={"steps_page": 2})]

    seen = while_attacking(tenant.server.url, other_tenant.read_token, attack)
    first, second = seen.result
    assert first.status_code == 200 and second.status_code == 200
    for page, start in ((first, 1), (second, STEPS_PAGE_SIZE + 1)):
        shown = [int(n) for n in re.findall(r'data-step="(\d+)"', page.text)]
        assert shown == list(range(start, start + STEPS_PAGE_SIZE))
        assert len(page.content) < 2_000_000
        assert f"{OVERSIZE_STEPS:,}" in page.text  # the page says how big the checklist is
    assert "Given</strong> setup 1" in first.text and "step 1 uses r1" in first.text
    assert "step 1 uses r3" in second.text and "v=r3" in second.text
    seen.assert_nobody_waited()
    # the last page, and a page beyond the end (shown as the last one)
    last_page = -(-OVERSIZE_STEPS // STEPS_PAGE_SIZE)
    for asked in (last_page, last_page + 5):
        last = web.get(f"/results/{result_id}/execute", params={"steps_page": asked})
        shown = [int(n) for n in re.findall(r'data-step="(\d+)"', last.text)]
        assert shown and shown[-1] == OVERSIZE_STEPS and "step 100 uses r1000" in last.text

    # saving page 2 keeps what was recorded on page 1 (and the reverse)
    loaded = re.search(r'name="loaded_updated_at" value="([^"]*)"', first.text)
    assert loaded is not None
    saved = web.post(f"/results/{result_id}/execute", data={
        "status": "FAILED", "steps_page": "1", "step_1": "PASSED", "loaded_updated_at": loaded.group(1)})
    assert saved.status_code == 303, saved.text
    step = STEPS_PAGE_SIZE + 7
    saved = web.post(f"/results/{result_id}/execute", data={
        "status": "FAILED", "steps_page": "2", f"step_{step}": "FAILED", f"note_{step}": "broken"})
    assert saved.status_code == 303, saved.text
    stored = tenant.api.get(f"/api/v1/results/{result_id}").json()["data"]["step_results"]
    assert stored == [{"index": 1, "status": "PASSED"}, {"index": step, "status": "FAILED", "comment": "broken"}]


def test_step_results_of_a_stored_oversize_case_are_checked_without_expanding(
        tenant: Tenant, other_tenant: Tenant) -> None:
    result_id, _ = _stored_oversize_result(tenant)
    api = tenant.client()
    api.timeout = httpx.Timeout(120)
    url = f"/api/v1/results/{result_id}"
    steps = [{"index": 1, "status": "PASSED"}, {"index": OVERSIZE_STEPS, "status": "FAILED"}]

    def attack() -> list[httpx.Response]:
        return [api.patch(url, json={"status": "FAILED", "step_results": steps}),
                api.patch(url, json={"step_results": [{"index": OVERSIZE_STEPS + 1, "status": "PASSED"}]})]

    seen = while_attacking(tenant.server.url, other_tenant.read_token, attack)
    accepted, beyond = seen.result
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["data"]["step_results"] == steps
    problem = assert_problem(beyond, 400)
    assert "step_results" in problem["detail"] and f"{OVERSIZE_STEPS:,}" in problem["detail"]
    seen.assert_nobody_waited()
