"""The words a manual tester reads (issues 23 and 24): one list of result statuses and their words, durations
typed as people say them, names instead of ids and hashes, the plan form's preview, layers as written.

The first tests are pure (tms.runs.statuses, tms.runs.executions.durations); the rest run against the shared
`tms serve` subprocess (SQLite, or PostgreSQL with TMS_TEST_DATABASE=postgres).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Tenant
from tests.test_cases import new_case
from tests.test_web_planning import _plan_form
from tests.web_helpers import HTML, field_error, text_of
from tms.runs import statuses
from tms.runs.executions import durations

ROOT = Path(__file__).resolve().parent.parent


def test_the_status_list_is_spelled_out_once() -> None:
    found = subprocess.run(["grep", "-rn", "-e", "'PASSED', 'FAILED'", "-e", '"PASSED", "FAILED"', "tms"],
                           cwd=ROOT, capture_output=True, text=True, check=False).stdout.splitlines()
    assert [line.split(":", 1)[0] for line in found] == ["tms/runs/statuses.py"], found


def test_one_word_per_status() -> None:
    assert [statuses.label(s) for s in statuses.RESULT_STATUSES] == ["Passed", "Failed", "Blocked", "Skipped",
                                                                    "Untested"]
    assert statuses.label("UNKNOWN", "automated") == "Unknown"  # a CI tool said so: it ran
    assert statuses.label("UNKNOWN", "manual") == statuses.label("UNKNOWN", "mixed") == "Untested"
    assert statuses.label("IN_PROGRESS") == "In progress" and statuses.label("UI") == "UI"
    assert statuses.rgb("FAILED") == (207, 34, 46)


@pytest.mark.parametrize(("text", "ms"), [
    ("1m 30s", 90_000), ("1m30s", 90_000), ("90", 90_000), ("1:30", 90_000), ("1:02:03", 3_723_000),
    ("1h 2m 3s", 3_723_000), ("2.5s", 2_500), ("300ms", 300), ("45 sec", 45_000), ("2 min", 120_000),
    ("", None), ("  ", None)])
def test_a_duration_as_people_type_it(text: str, ms: int | None) -> None:
    assert durations.parse(text) == ms
    if ms is not None:
        assert durations.parse(durations.words(ms)) == ms  # what the form shows reads back the same


@pytest.mark.parametrize("text", ["-3", "abc", "1x", "1m -2s", "1:99:99:99", "9" * 41, "99999999999999999999h"])
def test_a_duration_that_is_none_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        durations.parse(text)


def test_durations_read_in_words() -> None:
    assert [durations.words(ms) for ms in (0, 999, 90_000, 3_723_000, 2_500)] == ["0s", "0.999s", "1m 30s",
                                                                                  "1h 2m 3s", "2.5s"]


def test_the_plan_form_previews_its_cases(tenant: Tenant) -> None:
    project = tenant.create_project("Preview", environments=["staging", "prod"])
    new_case(tenant, project_id=project["id"], title="Pay", tags=["smoke"])
    new_case(tenant, project_id=project["id"], title="Refund", tags=["smoke"])
    new_case(tenant, project_id=project["id"], title="Slow", tags=["slow"])
    web = tenant.web()
    data = {**_plan_form(project, tags="smoke", name=""), "environments": ["staging", "prod"], "preview": "1"}
    preview = web.post("/plans/new", data=data)
    assert preview.status_code == 200
    shown = text_of(preview.text.split('id="plan-preview"', 1)[1].split("</p>", 1)[0])
    assert "2 cases" in shown and "2 runs of 2" in shown and "4 results to do" in shown
    assert tenant.api.get("/api/v1/plans").json()["data"] == []  # nothing created
    wrong = web.post("/plans/new", data={**data, "tags": "", "case_codes": "NOPE-9"})
    assert wrong.status_code == 400 and "NOPE-9" in (field_error(wrong.text, "case_codes") or "")


def test_ids_and_hashes_read_as_names(tenant: Tenant) -> None:
    project = tenant.create_project("Named shop")
    case = new_case(tenant, project_id=project["id"], title="Pay", layer="UI")
    run = tenant.api.post("/api/v1/runs", json={"project_id": project["id"], "name": "By hand",
                                                "test_case_ids": [case["code"]]}).json()["data"]
    web = tenant.web()
    # the run's history names its project, not its id (and the history is not in the page's <title>)
    page = web.get(f"/runs/{run['id']}", headers=HTML).text
    history = page.split('class="history"', 1)[1]
    assert "project: Named shop" in text_of(history) and project["id"] not in history
    assert "<section" not in page.split("<title>", 1)[1].split("</title>", 1)[0]
    # the audit log likewise
    audit = web.get(f"/settings/audit?entity_type=run&entity_id={run['id']}", headers=HTML).text
    assert "project: Named shop" in text_of(audit.split("<tbody>", 1)[1])
    # a known issue reads as its failure's message, not only its fingerprint
    ingested = tenant.api.post("/api/v1/ingest", json={"project_id": project["id"], "results": [
        {"test_case_code": case["code"], "status": "FAILED", "error_message": "KeyError: 'coupon'"}]})
    failures = tenant.api.get(f"/api/v1/runs/{ingested.json()['run_id']}/failures").json()["data"]
    tenant.api.post("/api/v1/known-issues", json={"project_id": project["id"], "fingerprint":
                                                  failures[0]["fingerprint"], "bug_ticket_key": "SHOP-7"})
    issues = web.get(f"/known-issues?project_id={project['id']}", headers=HTML).text
    assert "KeyError: &#39;coupon&#39;" in issues.split('id="known-issues"', 1)[1]
    # layers as written: UI and API, never "Ui" or "Api"
    form = web.get(f"/cases/{case['code']}/edit", headers=HTML).text
    options = re.findall(r"<option value=\"(?:UI|API)\"[^>]*>([^<]*)</option>", form)
    assert options == ["UI", "API"], options
