"""Manual and CI results kept apart where it matters (issue 24): a team day, CI and a manual regression
of the same cases in one project and two environments, checked as a QA lead reads it (flaky list,
clusters, `new` badges, the comparison); then one test per rule."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Tenant, assert_problem
from tests.test_failures import case, failures_of, ingest, wait_for
from tms.failures.fingerprints import EMPTY

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)

STEPS = "Feature: F\n  Scenario: S\n    Given the shop is open\n    When I pay by card\n    Then I see a receipt\n"


def make_case(tenant: Tenant, project: str, code: str, automation: str = "AUTOMATED",
              gherkin: str = STEPS) -> str:
    response = tenant.api.post("/api/v1/cases", json={
        "project_id": project, "code": code, "title": f"Case {code}", "bdd_content": gherkin,
        "automation_status": automation})
    assert response.status_code == 201, response.text
    return response.json()["data"]["id"]  # type: ignore[no-any-return]


def failed(code: str, message: str | None, **extra: Any) -> dict[str, Any]:
    return {"test_case_code": code, "status": "FAILED", "error_message": message, **extra}


def passed(code: str) -> dict[str, Any]:
    return {"test_case_code": code, "status": "PASSED"}


def flaky_of(tenant: Tenant, project: str, runs: int = 30) -> dict[str, dict[str, Any]]:
    response = tenant.api.get("/api/v1/flaky", params={"project_id": project, "runs": runs})
    assert response.status_code == 200, response.text
    return {t["test_case_code"] or t["title"]: t for t in response.json()["data"]}


def manual_run(tenant: Tenant, project: str, environment: str | None, codes: list[str]) -> dict[str, str]:
    """A run pre-populated for testers: result id by case code."""
    response = tenant.api.post("/api/v1/runs", json={"project_id": project, "name": "Manual regression",
                                                     "environment": environment, "test_case_ids": codes})
    assert response.status_code == 201, response.text
    run_id = response.json()["data"]["id"]
    results = tenant.api.get(f"/api/v1/runs/{run_id}/results").json()["data"]
    return {"run": run_id, **{r["test_case_code"]: r["id"] for r in results}}


def execute(tenant: Tenant, result_id: str, **body: Any) -> dict[str, Any]:
    """A tester's save (PATCH /results/{id}: the result becomes manual, as through the execution view)."""
    response = tenant.api.patch(f"/api/v1/results/{result_id}", json=body)
    assert response.status_code == 200, response.text
    return response.json()["data"]  # type: ignore[no-any-return]


def by_name(items: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    return {(i["test_case_code"] or i["title"], i["status"], i["base_status"]) for i in items}


# ---- the team day --------------------------------------------------------------------------------------

def test_a_team_day_of_ci_and_a_manual_regression_reads_right(tenant: Tenant) -> None:
    project = tenant.create_project("Shop")["id"]
    for code in ("PAY-1", "CART-1", "SHIP-1", "SEARCH-1", "COUPON-1", "REFUND-1"):
        make_case(tenant, project, code)
    make_case(tenant, project, "LOGIN-1", automation="MANUAL")  # run by hand, though CI reports it too

    timeout = "TimeoutError: POST /payments timed out after {n}ms"
    staging: list[str] = []
    for night in range(6):
        red = night % 2 == 1
        staging.append(ingest(tenant, project, [
            failed("PAY-1", timeout.format(n=3000 + night)) if red else passed("PAY-1"),   # flip-flops
            failed("LOGIN-1", "login page did not load") if red else passed("LOGIN-1"),  # flip-flops, MANUAL case
            failed("CART-1", f"AssertionError: total {night} != 42") if night >= 3 else passed("CART-1"),  # regression
            passed("SHIP-1"), passed("SEARCH-1"),
            *([failed("COUPON-1", "KeyError: 'coupon'"), failed("REFUND-1", None)] if night == 5 else
              [passed("COUPON-1"), passed("REFUND-1")]),
        ], environment="staging", run_name=f"Staging nightly {night + 1}"))
        ingest(tenant, project, [  # production: SHIP always fails there, that is no flip
            passed("PAY-1"), passed("CART-1"), failed("SHIP-1", "no carrier for region EU"), passed("SEARCH-1"),
        ], environment="production", run_name=f"Production nightly {night + 1}")
        if night == 4:
            # the morning's manual regression on staging, between two nightlies: the testers disagree with CI
            manual = manual_run(tenant, project, "staging", ["PAY-1", "CART-1", "SEARCH-1", "LOGIN-1"])
            execute(tenant, manual["CART-1"], status="PASSED")
            execute(tenant, manual["PAY-1"], status="FAILED")  # no note at all
            execute(tenant, manual["LOGIN-1"], status="FAILED")
            execute(tenant, manual["SEARCH-1"], status="FAILED",
                    step_results=[{"index": 1, "status": "PASSED"},
                                  {"index": 2, "status": "FAILED", "comment": "card form is blank"}])
    latest = staging[-1]

    # flaky: the flip-flops only, each within its environment, manual results out of it
    flaky = flaky_of(tenant, project)
    assert set(flaky) == {"PAY-1", "LOGIN-1"}, flaky
    # staging P F P F P F (5 changes in 5 steps), production always green (0 in 5): 5 / 10
    assert flaky["PAY-1"]["flip_rate"] == 0.5 and flaky["PAY-1"]["runs"] == 12 and flaky["LOGIN-1"]["flip_rate"] == 1.0
    assert (flaky["PAY-1"]["passes"], flaky["PAY-1"]["failures"]) == (9, 3)
    # PAY moves to FLAKY; LOGIN, a MANUAL case, is never changed by what CI says
    assert wait_for(lambda: case(tenant, "PAY-1")["automation_status"] == "FLAKY")
    login = case(tenant, "LOGIN-1")
    assert (login["automation_status"], login["version"]) == ("MANUAL", 1)

    # clusters of the latest nightly: by cause, automated only; the failure without a message stands alone
    clusters = failures_of(tenant, latest)
    named = {(c["error_message"] or "", tuple(r["test_case_code"] for r in c["results"])): c for c in clusters}
    assert set(named) == {(timeout.format(n=3005), ("PAY-1",)), ("login page did not load", ("LOGIN-1",)),
                          ("AssertionError: total 5 != 42", ("CART-1",)), ("KeyError: 'coupon'", ("COUPON-1",)),
                          ("", ("REFUND-1",))}
    new = {codes for (_, codes), c in named.items() if c["new"]}
    assert new == {("COUPON-1",), ("REFUND-1",)}  # seen before: PAY, LOGIN, CART; first time: COUPON, REFUND
    refund = named[("", ("REFUND-1",))]
    assert refund["fingerprint"] == EMPTY and refund["count"] == 1 and refund["first_seen_at"] is None
    # the manual run has no clusters: its failures are the testers' notes, not CI causes
    assert failures_of(tenant, manual["run"]) == []

    # compare: the default base is the previous staging nightly, not the manual run made in between
    data = tenant.api.get(f"/api/v1/runs/{latest}/compare").json()["data"]
    assert data["base_run_id"] == staging[-2]
    assert by_name(data["new_failures"]) == {("PAY-1", "FAILED", "PASSED"), ("LOGIN-1", "FAILED", "PASSED"),
                                            ("COUPON-1", "FAILED", "PASSED"), ("REFUND-1", "FAILED", "PASSED")}
    assert by_name(data["still_failing"]) == {("CART-1", "FAILED", "FAILED")}
    assert data["fixed"] == data["added"] == data["missing"] == []
    # the manual run compared with the nightly before it, chosen explicitly: every test in one list
    chosen = tenant.api.get(f"/api/v1/runs/{manual['run']}/compare", params={"base": staging[4]}).json()["data"]
    lists = [by_name(chosen[key]) for key in ("new_failures", "fixed", "still_failing", "added", "missing")]
    listed = [name for items in lists for (name, _, _) in items]
    assert sorted(listed) == sorted(set(listed))
    assert lists[0] == {("PAY-1", "FAILED", "PASSED"), ("LOGIN-1", "FAILED", "PASSED"),
                        ("SEARCH-1", "FAILED", "PASSED")}
    assert lists[1] == {("CART-1", "PASSED", "FAILED")}
    assert lists[2] == lists[3] == set()
    assert lists[4] == {("SHIP-1", None, "PASSED"), ("COUPON-1", None, "PASSED"), ("REFUND-1", None, "PASSED")}

    # the dashboard's top clusters hold causes, never "(no message)"
    page = tenant.web().get(f"/?project_id={project}")
    panel = page.text.split('id="failure-panel"', 1)[1].split('id="retest"', 1)[0]
    assert "TimeoutError: POST /payments" in panel and "(no message)" not in panel


# ---- one test per rule ---------------------------------------------------------------------------------

def test_a_change_that_stays_is_not_flaky_and_a_flip_flop_needs_five_runs(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    plan = {"REG-1": "PPFFFF", "FIX-1": "FFFPPP", "FLIP-1": "PFPFPP"}
    for code in plan:
        make_case(tenant, project, code)
    for night in range(6):
        ingest(tenant, project, [failed(code, "x") if history[night] == "F" else passed(code)
                                 for code, history in plan.items()])
        if night == 3:
            assert flaky_of(tenant, project) == {}  # FLIP changed three times, but four runs say little
    flaky = flaky_of(tenant, project)
    assert set(flaky) == {"FLIP-1"}  # REG regressed once and stays red, FIX was fixed once: neither flips
    assert flaky["FLIP-1"]["flip_rate"] == 0.8  # P F P F P P: 4 changes in 5 steps


def test_flips_count_within_an_environment(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    make_case(tenant, project, "ENV-1")
    for _ in range(6):
        ingest(tenant, project, [passed("ENV-1")], environment="staging")
        ingest(tenant, project, [failed("ENV-1", "region EU")], environment="production")
    # interleaved, the project's runs read P F P F ...: per environment it never changes
    assert flaky_of(tenant, project) == {}


def test_a_manual_case_is_never_moved_to_flaky(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    make_case(tenant, project, "HAND-1", automation="MANUAL")
    make_case(tenant, project, "BOT-1")
    for night in range(6):
        status = "FAILED" if night % 2 else "PASSED"
        ingest(tenant, project, [{"test_case_code": code, "status": status} for code in ("HAND-1", "BOT-1")])
    assert set(flaky_of(tenant, project)) == {"HAND-1", "BOT-1"}  # listed: the list says what CI saw
    assert wait_for(lambda: case(tenant, "BOT-1")["automation_status"] == "FLAKY")  # one evaluation moves both
    hand = case(tenant, "HAND-1")
    assert (hand["automation_status"], hand["version"]) == ("MANUAL", 1)


def test_manual_results_do_not_count_for_flaky_tests(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    make_case(tenant, project, "T-1")
    for night in range(6):
        run = ingest(tenant, project, [failed("T-1", "boom") if night >= 1 else passed("T-1")])
        if night == 2:  # a tester re-runs it by hand in a run of their own and sees it pass
            execute(tenant, manual_run(tenant, project, None, ["T-1"])["T-1"], status="PASSED")
        if night == 4:  # ... and once right in the CI run: that result is manual now
            [result] = tenant.api.get(f"/api/v1/runs/{run}/results").json()["data"]
            execute(tenant, result["id"], status="PASSED")
    assert flaky_of(tenant, project) == {}  # CI: P F F F F F, one change (with the manual passes: five)


def test_an_empty_error_never_forms_a_cluster_nor_a_known_issue(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    for code in ("E-1", "E-2", "E-3"):
        make_case(tenant, project, code)
    first = ingest(tenant, project, [failed("E-1", None), failed("E-2", ""), passed("E-3")])
    second = ingest(tenant, project, [failed("E-1", None), failed("E-2", None), failed("E-3", "   ")])
    clusters = failures_of(tenant, second)
    assert [(c["fingerprint"], c["count"]) for c in clusters] == [(EMPTY, 1)] * 3
    # new: the test was not failing in the previous run (nothing else tells such failures apart)
    assert {c["results"][0]["test_case_code"]: c["new"] for c in clusters} == {"E-1": False, "E-2": False,
                                                                              "E-3": True}
    assert all(c["new"] for c in failures_of(tenant, first))
    refused = tenant.api.post("/api/v1/known-issues", json={"project_id": project, "fingerprint": EMPTY,
                                                            "bug_ticket_key": "ALL-1"})
    assert [e["field"] for e in assert_problem(refused, 400)["errors"]] == ["fingerprint"]
    # the run page's one-click form says why instead of swallowing every such failure
    web = tenant.web()
    page = web.post("/known-issues", data={"project_id": project, "fingerprint": EMPTY, "run_id": second,
                                           "bug_ticket_key": "ALL-1", "_csrf_token": web.cookies.get("csrftoken")})
    assert page.status_code == 400 and "names no cause" in page.text
    assert tenant.api.get("/api/v1/known-issues", params={"project_id": project}).json()["data"] == []


def test_compare_lists_each_test_once_and_defaults_to_the_same_environment_and_kind(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    for code in ("A-1", "B-1", "C-1"):
        make_case(tenant, project, code)
    ci = ingest(tenant, project, [passed("A-1"), failed("B-1", "x")], environment="staging")
    manual = manual_run(tenant, project, "staging", ["A-1", "B-1", "C-1"])
    execute(tenant, manual["A-1"], status="PASSED")
    latest = ingest(tenant, project, [failed("A-1", "y"), failed("B-1", "x"), failed("C-1", "z")],
                    environment="staging")
    data = tenant.api.get(f"/api/v1/runs/{latest}/compare").json()["data"]
    assert data["base_run_id"] == ci  # not the manual run created in between
    assert by_name(data["new_failures"]) == {("A-1", "FAILED", "PASSED")}
    assert by_name(data["still_failing"]) == {("B-1", "FAILED", "FAILED")}
    assert by_name(data["added"]) == {("C-1", "FAILED", None)}  # only here: added, not also a new failure
    # a manual run's default base is the previous manual run of its environment: none yet
    assert tenant.api.get(f"/api/v1/runs/{manual['run']}/compare").json()["data"]["base_run_id"] is None
    # the first run: every test added, none "new" twice
    first = tenant.api.get(f"/api/v1/runs/{ci}/compare").json()["data"]
    assert first["new_failures"] == [] and by_name(first["added"]) == {("A-1", "PASSED", None), ("B-1", "FAILED", None)}


def test_the_compare_page_picks_the_baseline(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    make_case(tenant, project, "P-1")
    older = ingest(tenant, project, [passed("P-1")], environment="staging", run_name="Staging 1")
    prod = ingest(tenant, project, [failed("P-1", "x")], environment="production", run_name="Production 1")
    previous = ingest(tenant, project, [failed("P-1", "x")], environment="staging", run_name="Staging 2")
    run = ingest(tenant, project, [failed("P-1", "x")], environment="staging", run_name="Staging 3")
    web = tenant.web()
    page = web.get(f"/runs/{run}/compare")
    assert page.status_code == 200
    picker = page.text.split('id="base-picker"', 1)[1].split("</form>", 1)[0]
    # the same environment first (newest first), then the others; the run itself is not offered
    order = [picker.index(f'value="{run_id}"') for run_id in (previous, older, prod)]
    assert order == sorted(order) and f'value="{run}"' not in picker
    assert "Still failing" in page.text
    chosen = web.get(f"/runs/{run}/compare", params={"base": older})
    assert chosen.status_code == 200
    assert f'value="{older}" selected' in chosen.text
    assert "Staging 1" in chosen.text.split('id="base"', 1)[1].split("</p>", 1)[0]


@pytest.mark.parametrize("steps, comment, expected", [
    ([{"index": 2, "status": "FAILED", "comment": "card form is blank"}], None, "same"),
    ([{"index": 2, "status": "FAILED", "comment": "card form shows error 500"}], None, "other"),
    ([{"index": 2, "status": "BROKEN", "comment": "card form is blank"}], "retried twice", "same"),
    ([{"index": 2, "status": "FAILED"}], "card form is blank", "same"),
    ([{"index": 3, "status": "FAILED", "comment": "card form is blank"}], None, "other"),
    ([{"index": 1, "status": "PASSED"}], None, "empty"),
])
def test_a_manual_failure_is_fingerprinted_by_its_failed_step_and_note(
        tenant: Tenant, steps: list[dict[str, Any]], comment: str | None, expected: str) -> None:
    project = tenant.create_project()["id"]
    make_case(tenant, project, "M-1", automation="MANUAL", gherkin=STEPS)
    make_case(tenant, project, "M-2", automation="MANUAL", gherkin=STEPS)
    run = manual_run(tenant, project, "staging", ["M-1", "M-2"])
    reference = execute(tenant, run["M-1"], status="FAILED", step_results=[
        {"index": 1, "status": "PASSED"}, {"index": 2, "status": "FAILED", "comment": "card form is blank"}])
    assert reference["fingerprint"] not in (None, EMPTY)
    body: dict[str, Any] = {"status": "FAILED", "step_results": steps}
    if comment:
        body["comment"] = comment
    other = execute(tenant, run["M-2"], **body)
    assert other["source"] == "manual"
    if expected == "empty":
        assert other["fingerprint"] == EMPTY  # nothing written: it names no cause
    else:
        assert (other["fingerprint"] == reference["fingerprint"]) is (expected == "same")
        assert other["fingerprint"] != EMPTY
