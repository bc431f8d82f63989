"""Combined filters answered by the full-text index's facet tokens, and the tree's kept counts (migration 0023).

Two filters or more, tags, or words go through ONE FTS5 query whose facet tokens are kept by triggers;
these tests change cases every way a writer can (PATCH, bulk actions, import, section and case deletes)
and check that the combined filters and the tree counts follow, exactly as the plain SQL filters would.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from tests.conftest import Tenant

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)

FEATURE = "Feature: F\n  Scenario: s\n    Given a step\n    Then it passes\n"


def case(tenant: Tenant, **fields: Any) -> dict:
    response = tenant.api.post("/api/v1/cases", json={"title": "A case", "bdd_content": FEATURE, **fields})
    assert response.status_code == 201, response.text
    return response.json()["data"]


def section(tenant: Tenant, project_id: str, name: str, parent_id: str | None = None) -> dict:
    body: dict[str, Any] = {"project_id": project_id, "name": name}
    if parent_id:
        body["parent_id"] = parent_id
    response = tenant.api.post("/api/v1/sections", json=body)
    assert response.status_code == 201, response.text
    return response.json()["data"]


def page(tenant: Tenant, **params: Any) -> dict:
    response = tenant.api.get("/api/v1/cases", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def codes(tenant: Tenant, **params: Any) -> list[str]:
    return [c["code"] for c in page(tenant, **params)["data"]]


def counts(tenant: Tenant, project_id: str) -> dict[str, tuple[int, int]]:
    response = tenant.api.get("/api/v1/sections", params={"project_id": project_id})
    assert response.status_code == 200, response.text
    return {s["name"]: (s["case_count"], s["subtree_case_count"]) for s in response.json()["data"]}


def test_combined_filters_follow_every_change_of_a_case(tenant: Tenant) -> None:
    project = tenant.create_project()
    p = project["id"]
    one = case(tenant, project_id=p, code="F-1", priority="HIGH", layer="UI", automation_status="MANUAL",
               status="READY", tags=["smoke"])
    case(tenant, project_id=p, code="F-2", priority="HIGH", layer="API", automation_status="MANUAL", tags=["smoke"])
    case(tenant, project_id=p, code="F-3", priority="LOW", layer="UI", automation_status="AUTOMATED")
    assert codes(tenant, project_id=p, priority="HIGH", layer="UI", automation_status="MANUAL") == ["F-1"]
    assert codes(tenant, project_id=p, priority="HIGH", status="READY") == ["F-1"]
    assert codes(tenant, project_id=p, priority="HIGH", tag="smoke") == ["F-1", "F-2"]
    # each filtered field changed alone by a PATCH: the old combination no longer finds it, the new one does
    steps = [("priority", "LOW", {"priority": "HIGH", "layer": "UI"}, {"priority": "LOW", "layer": "UI"}),
             ("layer", "API", {"priority": "LOW", "layer": "UI"}, {"priority": "LOW", "layer": "API"}),
             ("automation_status", "FLAKY", {"layer": "API", "automation_status": "MANUAL"},
              {"layer": "API", "automation_status": "FLAKY"}),
             ("status", "DEPRECATED", {"layer": "API", "status": "READY"}, {"layer": "API", "status": "DEPRECATED"}),
             ("tags", ["nightly"], {"layer": "API", "tag": "smoke"}, {"layer": "API", "tag": "nightly"})]
    for field, value, before, after in steps:
        assert "F-1" in codes(tenant, project_id=p, **before), field
        patched = tenant.api.patch(f"/api/v1/cases/{one['id']}", json={field: value})
        assert patched.status_code == 200, patched.text
        assert "F-1" not in codes(tenant, project_id=p, **before), field
        assert "F-1" in codes(tenant, project_id=p, **after), field
    assert codes(tenant, project_id=p, priority="HIGH", tag="smoke") == ["F-2"]
    assert codes(tenant, project_id=p, priority="LOW", layer="API", automation_status="FLAKY",
                 status="DEPRECATED", tag="nightly") == ["F-1"]
    # a layer taken away: the combination with another layer stops matching
    tenant.api.patch(f"/api/v1/cases/{one['id']}", json={"layer": None})
    assert codes(tenant, project_id=p, priority="LOW", layer="API") == []
    assert codes(tenant, project_id=p, priority="LOW", automation_status="FLAKY") == ["F-1"]
    # moved to another project: gone from this one's combined filters, found in the other's
    other = tenant.create_project("Other")
    tenant.api.patch(f"/api/v1/cases/{one['id']}", json={"project_id": other["id"]})
    assert codes(tenant, project_id=p, priority="LOW", automation_status="FLAKY") == []
    assert codes(tenant, project_id=other["id"], priority="LOW", automation_status="FLAKY") == ["F-1"]
    # without a project: the whole tenant
    assert codes(tenant, priority="HIGH", tag="smoke") == ["F-2"]
    tenant.api.delete("/api/v1/cases/F-2")
    assert codes(tenant, priority="HIGH", tag="smoke") == []


def test_tags_match_exactly_whatever_their_characters(tenant: Tenant) -> None:
    p = tenant.create_project()["id"]
    case(tenant, project_id=p, code="T-1", tags=["Smoke Test"])
    case(tenant, project_id=p, code="T-2", tags=["smoke"])
    case(tenant, project_id=p, code="T-3", tags=["smoke-test", "äpfel"])
    case(tenant, project_id=p, code="T-4", tags=["test"])
    assert codes(tenant, project_id=p, tag="Smoke Test") == ["T-1"]
    assert codes(tenant, project_id=p, tag="smoke") == ["T-2"]
    assert codes(tenant, project_id=p, tag="smoke-test") == ["T-3"]
    assert codes(tenant, project_id=p, tag="äpfel") == ["T-3"]
    assert codes(tenant, project_id=p, tag="smok") == []
    assert codes(tenant, project_id=p, tag=["test", "Smoke Test"]) == ["T-1", "T-4"]
    assert codes(tenant, project_id=p, tag='" OR *') == []
    # a word search still sees tags as words (the text columns), facets never answer words
    assert sorted(codes(tenant, project_id=p, q="smoke")) == ["T-1", "T-2", "T-3"]


def test_combined_filters_never_cross_tenants(tenant: Tenant, other_tenant: Tenant) -> None:
    mine = tenant.create_project()["id"]
    theirs = other_tenant.create_project()["id"]
    case(tenant, project_id=mine, code="M-1", priority="HIGH", tags=["shared"])
    case(other_tenant, project_id=theirs, code="O-1", priority="HIGH", tags=["shared"])
    assert codes(tenant, tag="shared") == ["M-1"]
    assert codes(tenant, tag="shared", priority="HIGH") == ["M-1"]
    assert codes(tenant, project_id=theirs, tag="shared", priority="HIGH") == []
    assert codes(other_tenant, tag="shared", priority="HIGH", q="case") == ["O-1"]


def test_sections_in_combined_filters_and_kept_counts(tenant: Tenant) -> None:
    p = tenant.create_project()["id"]
    top = section(tenant, p, "Top")
    mid = section(tenant, p, "Mid", top["id"])
    leaf = section(tenant, p, "Leaf", mid["id"])
    a = case(tenant, code="S-1", section_id=leaf["id"], priority="HIGH", title="Walrus one")
    case(tenant, code="S-2", section_id=mid["id"], priority="HIGH", title="Walrus two")
    case(tenant, code="S-3", section_id=top["id"], priority="LOW", title="Walrus three")
    case(tenant, code="S-4", project_id=p, priority="HIGH", title="Walrus four")
    assert counts(tenant, p) == {"Top": (1, 3), "Mid": (1, 2), "Leaf": (1, 1)}
    sub = {"section_id": mid["id"], "include_subsections": "true"}
    assert codes(tenant, project_id=p, priority="HIGH", **sub) == ["S-1", "S-2"]
    assert codes(tenant, project_id=p, q="walrus", priority="HIGH", **sub) == ["S-1", "S-2"]
    assert codes(tenant, project_id=p, q="walrus", section_id=mid["id"]) == ["S-2"]
    assert codes(tenant, project_id=p, priority="HIGH", section_id="none") == ["S-4"]
    assert codes(tenant, project_id=p, q="walrus", section_id="none") == ["S-4"]
    # a case re-filed: filters and counts follow
    tenant.api.patch(f"/api/v1/cases/{a['id']}", json={"section_id": top["id"]})
    assert codes(tenant, project_id=p, priority="HIGH", **sub) == ["S-2"]
    assert counts(tenant, p) == {"Top": (2, 3), "Mid": (1, 1), "Leaf": (0, 0)}
    # a section deleted: its cases go to the parent (and, for a root section, to no section)
    assert tenant.api.delete(f"/api/v1/sections/{mid['id']}").status_code == 204
    assert counts(tenant, p) == {"Top": (3, 3), "Leaf": (0, 0)}
    assert codes(tenant, project_id=p, priority="HIGH", section_id=top["id"]) == ["S-1", "S-2"]
    assert tenant.api.delete(f"/api/v1/sections/{top['id']}").status_code == 204
    assert codes(tenant, project_id=p, priority="HIGH", section_id="none") == ["S-1", "S-2", "S-4"]
    assert codes(tenant, project_id=p, priority="LOW", section_id="none") == ["S-3"]
    tenant.api.delete("/api/v1/cases/S-3")
    assert codes(tenant, project_id=p, section_id="none", q="walrus") == ["S-1", "S-2", "S-4"]


def test_totals_of_short_pages_and_pages_past_the_end(tenant: Tenant) -> None:
    p = tenant.create_project()["id"]
    for n in range(5):
        case(tenant, project_id=p, code=f"P-{n}", priority="HIGH", layer="UI", tags=["t"])
    for params in ({"priority": "HIGH", "layer": "UI"}, {"tag": "t"}, {"q": "case"}, {}):
        for limit, offset, rows in ((10, 0, 5), (2, 0, 2), (2, 4, 1), (2, 5, 0), (2, 50, 0), (5, 0, 5)):
            body = page(tenant, project_id=p, limit=limit, offset=offset, **params)
            assert body["pagination"]["total"] == 5, (params, limit, offset)
            assert len(body["data"]) == rows, (params, limit, offset)


def _import(tenant: Tenant, project_id: str, rows: list[list[str]]) -> dict:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(["code", "title", "priority", "layer", "tags", "bdd_content"])
    writer.writerows(rows)
    response = tenant.api.post("/api/v1/cases/import", params={"project_id": project_id},
                               files={"file": ("cases.csv", buffer.getvalue().encode(), "text/csv")})
    assert response.status_code == 201, response.text
    return response.json()


def test_sorted_filtered_pages_of_a_big_project_match_a_plain_sort(tenant: Tenant) -> None:
    """Over 2,000 matches a sorted page walks the sort's index; it must page exactly like a sort would."""
    p = tenant.create_project()["id"]
    priorities = ("LOW", "MEDIUM", "HIGH", "CRITICAL")
    rows = [[f"B-{n}", f"Title {(n * 7919) % 2600:05d}", priorities[n % 4], "UI" if n % 3 else "API",
             "big" if n % 10 else "big;rare", FEATURE] for n in range(2600)]
    assert _import(tenant, p, rows)["created"] == 2600
    by_code = {r[0]: r for r in rows}
    rank = {name: i for i, name in enumerate(priorities)}
    for params, key in (
        ({"tag": "big", "sort": "title"}, lambda r: (r[1].lower(), int(r[0][2:]))),
        ({"tag": "big", "sort": "priority", "order": "desc"}, lambda r: (rank[r[2]], int(r[0][2:]))),
        ({"tag": "big", "layer": "UI", "sort": "priority"}, lambda r: (rank[r[2]], int(r[0][2:]))),
        ({"tag": "rare", "sort": "title", "order": "desc"}, lambda r: (r[1].lower(), int(r[0][2:]))),
    ):
        matching = [r for r in rows if params["tag"] in r[4].split(";") and r[3] == params.get("layer", r[3])]
        # ORDER BY x DESC, rowid DESC is the ascending order reversed (rowids follow the file's rows)
        expected = [r[0] for r in sorted(matching, key=key, reverse=params.get("order") == "desc")]
        for offset in (0, 100, len(expected) - 50):
            body = page(tenant, project_id=p, limit=100, offset=offset, **params)
            assert body["pagination"]["total"] == len(expected), params
            assert [c["code"] for c in body["data"]] == expected[offset : offset + 100], (params, offset)
            assert all(by_code[c["code"]][2] == c["priority"] for c in body["data"])
    # an import that changes cases (one UPDATE per 500 rows) keeps the facets and words right
    changed = [[f"B-{n}", f"Renamed walrus {n}", "CRITICAL", "API", "big", FEATURE] for n in range(0, 2600, 2)]
    assert _import(tenant, p, changed)["updated"] == 1300
    assert page(tenant, project_id=p, q="walrus", priority="CRITICAL", layer="API")["pagination"]["total"] == 1300
    assert page(tenant, project_id=p, tag="rare", layer="UI")["pagination"]["total"] == len(
        [n for n in range(1, 2600, 2) if n % 10 == 0 and n % 3])
