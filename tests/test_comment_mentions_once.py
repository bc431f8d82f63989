"""A comment's mention notifies a person once over all the comment's edits: removing a mention and
adding it back, or editing around it, tells nobody twice; a person newly mentioned by an edit is told."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import Tenant
from tests.team_helpers import add_member, web_as


def _mentions(client: httpx.Client) -> list[dict[str, Any]]:
    response = client.get("/api/v1/notifications")
    assert response.status_code == 200, response.text
    return [note for note in response.json()["data"] if note["kind"] == "mention"]


def test_a_mention_removed_and_added_back_notifies_once(tenant: Tenant) -> None:
    ann, bob = add_member(tenant, "tester"), add_member(tenant, "tester")
    case = tenant.api.post("/api/v1/cases", json={"title": "Pay", "bdd_content": "Feature: F\n  Scenario: S\n"
                                                  "    Given x\n"}).json()["data"]
    made = tenant.api.post(f"/api/v1/cases/{case['id']}/comments", json={"body": f"@{ann.email} look"})
    assert made.status_code == 201, made.text
    comment = made.json()["data"]["id"]

    def edit(body: str) -> dict[str, Any]:
        response = tenant.api.patch(f"/api/v1/comments/{comment}", json={"body": body})
        assert response.status_code == 200, response.text
        return response.json()["data"]  # type: ignore[no-any-return]

    ann_client, bob_client = web_as(tenant, ann.email, ann.password), web_as(tenant, bob.email, bob.password)
    assert len(_mentions(ann_client)) == 1
    assert edit("no one now")["mentions"] == []
    assert edit(f"@{ann.email} back again")["mentions"] == [ann.id]
    assert edit(f"@{ann.email} back again, typo fixed")["mentions"] == [ann.id]
    assert len(_mentions(ann_client)) == 1  # told once, whatever the edits
    assert _mentions(bob_client) == []
    assert edit(f"@{ann.email} and @{bob.email}")["mentions"] == [ann.id, bob.id]
    [told] = _mentions(bob_client)
    assert told["link"].endswith(f"#comment-{comment}")
    assert len(_mentions(ann_client)) == 1
