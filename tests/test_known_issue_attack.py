"""Issue 22: known-issue patterns cannot stall every tenant.

The attack of the issue: five known issues with the pattern ``.{0,1000}.{0,1000}.{0,1000}Q`` and a
report of 20 failures with 8 KB messages. Each search is linear (RE2) but its program is 27,000
instructions, so 100 searches of 8 KB took 9 s, on the event loop, inside the write transaction:
another tenant's ``GET`` waited as long. Now such a pattern is refused (its RE2 program is over
``MAX_PROGRAM_SIZE``: a 400 naming ``pattern``); one stored before the limit never matches; a project
holds at most ``MAX_PATTERNS_PER_PROJECT`` patterns; matching sees the first ``MAX_SUBJECT``
characters, runs in a worker thread before the write transaction, within ``MATCH_BUDGET_SECONDS``
per ingest.
"""

from __future__ import annotations

import json
import random
import string
from typing import Any

import httpx

from tests.conftest import Tenant, assert_problem, connect_db
from tests.latency import while_attacking
from tests.test_failures import audit_entries
from tms.failures.known_issues.patterns import MAX_PATTERNS_PER_PROJECT, MAX_PROGRAM_SIZE, compile_pattern

ATTACK_PATTERN = ".{0,1000}.{0,1000}.{0,1000}Q"
# the heaviest of its kind the limit accepts: 1,985 RE2 instructions
HEAVIEST_ACCEPTED = ".{0,220}Q"
NORMAL_PATTERN = r"PaymentClient\.charge"
# 8 KB of failure text without a "Q": every search of the attack pattern scans all of it
FILLER = ("expected the cart total to equal the sum of its lines but it did not; " * 120)[:8 * 1024]


def _failures(count: int = 20, *, varied: bool = False) -> list[dict[str, Any]]:
    """``count`` failures of 8 KB messages; the even ones are the normal pattern's bug. ``varied``: each
    text is different random letters, so no RE2 automaton state built for one serves the next."""
    items = []
    letters = random.Random(22)
    for i in range(count):
        head = f"AssertionError at com.shop.PaymentClient.charge line {i}: " if i % 2 == 0 else f"Timeout {i}: "
        filler = "".join(letters.choices(string.ascii_lowercase + " ", k=8 * 1024)) if varied else FILLER
        items.append({"title": f"attack {i}", "status": "FAILED", "error_message": (head + filler)[:8 * 1024],
                      "error_stack": f"\tat com.shop.CartTest.checkout(CartTest.java:{i})\n"})
    return items


def _known_issue(tenant: Tenant, project: str, pattern: str, key: str) -> httpx.Response:
    return tenant.api.post("/api/v1/known-issues", json={"project_id": project, "pattern": pattern,
                                                         "bug_ticket_key": key})


def _ingest_under_attack(tenant: Tenant, other_tenant: Tenant, project: str, *, varied: bool = False,
                         all_matched: bool = True) -> dict[str, Any]:
    """Ingests the attack report while the other tenant lists its projects; checks nobody waited and
    that the normal pattern linked its bug to the failures it matches (``all_matched``: to every one
    of them; else, past the matching budget, some may stay unlinked, but no other failure is linked)."""
    def attack() -> httpx.Response:
        with tenant.client() as client:
            client.timeout = httpx.Timeout(300)
            return client.post("/api/v1/ingest", json={"project_id": project, "results": _failures(varied=varied)})

    measured = while_attacking(tenant.server.url, other_tenant.read_token, attack)
    response = measured.result
    assert response.status_code == 201, response.text[:500]
    run_id = response.json()["run_id"]
    results = tenant.api.get(f"/api/v1/runs/{run_id}/results", params={"limit": 100}).json()["data"]
    keys = {r["title"]: r["bug_ticket_key"] for r in results}
    expected = {f"attack {i}": "PAY-1" if i % 2 == 0 else None for i in range(20)}
    if all_matched:
        assert keys == expected, keys
    else:
        assert set(keys) == set(expected) and all(keys[t] in (expected[t], None) for t in keys), keys
    measured.assert_nobody_waited()
    return {"run_id": run_id, "attack_seconds": measured.attack_seconds, "worst_probe": measured.worst}


def test_the_attack_pattern_is_refused_naming_pattern(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    problem = assert_problem(_known_issue(tenant, project, ATTACK_PATTERN, "EVIL-1"), 400)
    assert "pattern" in json.dumps(problem.get("errors")) + problem["detail"], problem
    # the same through PATCH, onto an issue that had a harmless pattern
    issue = _known_issue(tenant, project, "harmless", "EVIL-2")
    assert issue.status_code == 201, issue.text
    patched = tenant.api.patch(f"/api/v1/known-issues/{issue.json()['data']['id']}", json={"pattern": ATTACK_PATTERN})
    problem = assert_problem(patched, 400)
    assert "pattern" in json.dumps(problem.get("errors")) + problem["detail"], problem
    assert tenant.api.get(f"/api/v1/known-issues/{issue.json()['data']['id']}").json()["data"]["pattern"] == "harmless"


def test_attack_patterns_stored_before_the_limit_stall_nobody(tenant: Tenant, other_tenant: Tenant) -> None:
    """The issue's attack as it stands in a database written before the limit: five stored attack
    patterns (put there directly), 20 failures of 8 KB, and a normal pattern that still matches."""
    project = tenant.create_project()["id"]
    normal = _known_issue(tenant, project, NORMAL_PATTERN, "PAY-1")
    assert normal.status_code == 201, normal.text
    ids = []
    for n in range(5):
        created = _known_issue(tenant, project, f"placeholder {n}", f"EVIL-{n}")
        assert created.status_code == 201, created.text
        ids.append(created.json()["data"]["id"])
    with connect_db(tenant.server.db_path) as conn:
        for issue_id in ids:
            conn.execute("UPDATE known_issues SET pattern = ? WHERE tenant_id = ? AND id = ?",
                         (ATTACK_PATTERN, tenant.id, issue_id))
    _ingest_under_attack(tenant, other_tenant, project)


def test_the_heaviest_patterns_the_limits_accept_stall_nobody(tenant: Tenant, other_tenant: Tenant) -> None:
    """A project full of the costliest patterns the limits accept, against 20 failures of 8 KB of
    random letters (each text builds new automaton states): the matching budget ends the work, off the
    event loop; the ingest is stored, the normal (oldest) pattern links only its own failures, and the
    audit entry of the ingest counts the failures left unmatched."""
    assert compile_pattern(HEAVIEST_ACCEPTED).programsize > MAX_PROGRAM_SIZE * 0.9
    project = tenant.create_project()["id"]
    normal = _known_issue(tenant, project, NORMAL_PATTERN, "PAY-1")
    assert normal.status_code == 201, normal.text
    for n in range(MAX_PATTERNS_PER_PROJECT - 1):
        created = _known_issue(tenant, project, HEAVIEST_ACCEPTED.replace("Q", f"Q{n}"), f"HEAVY-{n}")
        assert created.status_code == 201, created.text
    outcome = _ingest_under_attack(tenant, other_tenant, project, varied=True, all_matched=False)
    [entry] = [e for e in audit_entries(tenant.server, tenant.id, "run") if e["entity_id"] == outcome["run_id"]]
    changes = json.loads(entry["changes"])
    assert changes["failed"] == 20
    results = tenant.api.get(f"/api/v1/runs/{outcome['run_id']}/results", params={"limit": 100}).json()["data"]
    missed = sum(1 for r in results if int(r["title"].split()[1]) % 2 == 0 and r["bug_ticket_key"] is None)
    # every failure of the normal pattern left unlinked was one the budget left unmatched, and counted
    assert missed <= changes.get("known_issue_matching_skipped", 0), changes


def test_the_heaviest_accepted_pattern_still_matches_correctly(tenant: Tenant, other_tenant: Tenant) -> None:
    """Five of the heaviest accepted patterns (the issue's count) and a normal one: everything is
    matched within the budget, exactly as before."""
    project = tenant.create_project()["id"]
    for n in range(5):
        created = _known_issue(tenant, project, HEAVIEST_ACCEPTED, f"HEAVY-{n}")
        assert created.status_code == 201, created.text
    normal = _known_issue(tenant, project, NORMAL_PATTERN, "PAY-1")
    assert normal.status_code == 201, normal.text
    _ingest_under_attack(tenant, other_tenant, project)


def _problem_names_pattern(response: httpx.Response) -> dict[str, Any]:
    problem = assert_problem(response, 400)
    assert "pattern" in json.dumps(problem.get("errors")) + problem["detail"], problem
    return problem


def test_a_pattern_over_the_program_size_limit_is_400_and_says_the_limit(tenant: Tenant) -> None:
    project = tenant.create_project()["id"]
    problem = _problem_names_pattern(_known_issue(tenant, project, ".{0,300}Q", "BIG-1"))
    assert f"{MAX_PROGRAM_SIZE:,}" in problem["detail"] and "2,705" in problem["detail"], problem
    assert _known_issue(tenant, project, HEAVIEST_ACCEPTED, "BIG-2").status_code == 201


def test_a_project_holds_at_most_the_limit_of_open_patterns(tenant: Tenant) -> None:
    """Open known issues with a pattern count; closed ones and fingerprint-only ones do not. Create,
    PATCH adding a pattern and reopening are refused at the limit with a 400 naming ``pattern``."""
    project = tenant.create_project()["id"]
    with connect_db(tenant.server.db_path) as conn:
        for n in range(MAX_PATTERNS_PER_PROJECT - 1):
            conn.execute(
                "INSERT INTO known_issues (id, tenant_id, project_id, pattern, bug_ticket_key, status, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, 'OPEN', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
                (f"ki-limit-{tenant.id}-{n}", tenant.id, project, f"limit {n}", f"LIM-{n}"))
    last = _known_issue(tenant, project, "the last one", "LIM-LAST")
    assert last.status_code == 201, last.text
    problem = _problem_names_pattern(_known_issue(tenant, project, "one too many", "LIM-OVER"))
    assert f"{MAX_PATTERNS_PER_PROJECT:,}" in problem["detail"], problem
    # another project of the tenant has its own room
    elsewhere = tenant.create_project(name="Elsewhere")["id"]
    assert _known_issue(tenant, elsewhere, "fine here", "ELSE-1").status_code == 201
    # a fingerprint costs nothing to match: not counted
    by_fingerprint = tenant.api.post("/api/v1/known-issues", json={
        "project_id": project, "fingerprint": "0123456789abcdef", "bug_ticket_key": "FP-1"})
    assert by_fingerprint.status_code == 201, by_fingerprint.text
    fp_id = by_fingerprint.json()["data"]["id"]
    _problem_names_pattern(tenant.api.patch(f"/api/v1/known-issues/{fp_id}", json={"pattern": "added"}))
    # editing a counted issue (even its pattern) is fine at the limit
    last_id = last.json()["data"]["id"]
    edited = tenant.api.patch(f"/api/v1/known-issues/{last_id}", json={"pattern": "the last one, edited"})
    assert edited.status_code == 200, edited.text
    # closing one makes room; reopening it when the room is taken is refused
    closed = tenant.api.patch(f"/api/v1/known-issues/{last_id}", json={"status": "CLOSED"})
    assert closed.status_code == 200, closed.text
    added = tenant.api.patch(f"/api/v1/known-issues/{fp_id}", json={"pattern": "added"})
    assert added.status_code == 200, added.text
    _problem_names_pattern(tenant.api.patch(f"/api/v1/known-issues/{last_id}", json={"status": "OPEN"}))
    assert tenant.api.get(f"/api/v1/known-issues/{last_id}").json()["data"]["status"] == "CLOSED"
    # the page's reopen button says why instead of failing
    web = tenant.web()
    reopened = web.post(f"/known-issues/{last_id}/status", data={"status": "OPEN"})
    assert reopened.status_code == 303, reopened.text[:300]
    page = web.get(reopened.headers["location"])
    assert "not reopened" in page.text and f"{MAX_PATTERNS_PER_PROJECT:,}" in page.text
    assert tenant.api.get(f"/api/v1/known-issues/{last_id}").json()["data"]["status"] == "CLOSED"
