"""Trust that outlives a change (issue 22, items 5, 6 and 11): what a removed or demoted admin issued,
sessions after a password change, a reset or a reactivation, `/account/sessions`, and the audit log
(retest flags recorded, DELETE refused, who an actor is, lists shown as lists)."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tests.conftest import Tenant, connect_db
from tests.team_helpers import Member, add_member
from tests.test_integrations import BUG_KEYS, DONE_FIXTURES, create_case, create_integration, deliver, fixture
from tests.web_helpers import every_post_form_has_csrf, text_of


def _path(url: str) -> str:
    return "/" + url.split("://", 1)[1].split("/", 1)[1]


def signed_in(tenant: Tenant, email: str, password: str, agent: str = "pytest-browser/1.0") -> httpx.Client:
    client = httpx.Client(base_url=tenant.server.url, timeout=30, follow_redirects=False,
                          headers={"User-Agent": agent})
    client.get("/login")
    token = client.cookies.get("csrftoken") or ""
    response = client.post("/login", data={"email": email, "password": password, "_csrf_token": token})
    assert response.status_code == 303, response.text
    client.headers["x-csrftoken"] = token
    return client


def anonymous(tenant: Tenant) -> httpx.Client:
    client = httpx.Client(base_url=tenant.server.url, timeout=30, follow_redirects=False)
    client.get("/login")
    client.headers["x-csrftoken"] = client.cookies.get("csrftoken") or ""
    return client


def is_signed_out(client: httpx.Client) -> bool:
    response = client.get("/account")
    return response.status_code in (302, 303, 307) and response.headers["location"].startswith("/login")


def _issued_link(web: httpx.Client, response: httpx.Response) -> str:
    assert response.status_code == 303, response.text
    match = re.search(r'id="issued-link"[^>]*>([^<]+)</code>', web.get("/settings/team").text)
    assert match
    return _path(match.group(1).strip())


def _new_token(web: httpx.Client, name: str) -> str:
    created = web.post("/settings/tokens", data={"name": name, "scopes": ["read", "write"]})
    assert created.status_code == 303, created.text
    match = re.search(r'id="new-token-value"[^>]*>(svc_[a-z0-9]{8}_[A-Za-z0-9]+)<', web.get("/settings/tokens").text)
    assert match
    return match.group(1)


def admin_issues_everything(tenant: Tenant, admin: Member, victim: Member) -> dict[str, str]:
    """The admin creates an API token, invites someone as admin and issues a reset link for ``victim``."""
    web = signed_in(tenant, admin.email, admin.password)
    invited = f"friend-{admin.id}@example.com"
    return {
        "token": _new_token(web, f"token of {admin.id}"),
        "invitation": _issued_link(web, web.post("/settings/team/invite", data={"email": invited, "role": "admin"})),
        "invited": invited,
        "reset": _issued_link(web, web.post(f"/settings/team/{victim.id}/reset")),
    }


def assert_all_revoked(tenant: Tenant, issued: dict[str, str]) -> None:
    visitor = anonymous(tenant)
    assert visitor.get(issued["invitation"]).status_code == 404
    assert visitor.post(issued["invitation"], data={"name": "Mallory", "password": "a long password",
                                                    "password_confirm": "a long password"}).status_code == 404
    assert visitor.get(issued["reset"]).status_code == 404
    assert visitor.post(issued["reset"], data={"password": "taken over!", "password_confirm": "taken over!"}
                        ).status_code == 404
    bearer = {"Authorization": f"Bearer {issued['token']}"}
    assert httpx.get(f"{tenant.server.url}/api/v1/me", headers=bearer, timeout=30).status_code == 401
    assert httpx.post(f"{tenant.server.url}/api/v1/cases", headers=bearer, timeout=30,
                      json={"title": "x", "bdd_content": "Feature: x\n  Scenario: y\n    Given z\n"}
                      ).status_code == 401


def audit_actions(tenant: Tenant, **params: Any) -> list[dict[str, Any]]:
    response = tenant.api.get("/api/v1/audit", params={"limit": 500, **params})
    assert response.status_code == 200, response.text
    return list(response.json()["data"])


# --- item 5: what a removed or demoted admin issued -----------------------------------------------------

def test_deactivating_an_admin_revokes_their_invitations_reset_links_and_tokens(tenant: Tenant) -> None:
    owner = tenant.web()
    admin, tester = add_member(tenant, "admin"), add_member(tenant, "tester")
    issued = admin_issues_everything(tenant, admin, tester)
    # the confirm page lists what deactivation revokes
    confirm = owner.get(f"/settings/team/{admin.id}/deactivate")
    assert confirm.status_code == 200 and every_post_form_has_csrf(confirm.text)
    page = text_of(confirm.text)
    assert f"token of {admin.id}" in page and issued["invited"] in page and tester.email in page
    done = owner.post(f"/settings/team/{admin.id}/active", data={"active": "0", "confirmed": "1"})
    assert done.status_code == 303
    assert_all_revoked(tenant, issued)
    actions = [e["action"] for e in audit_actions(tenant)]
    assert {"user.deactivated", "token.revoked", "invitation.revoked", "reset.revoked"} <= set(actions)


def test_demoting_an_admin_below_admin_revokes_what_they_issued(tenant: Tenant) -> None:
    owner = tenant.web()
    admin, viewer = add_member(tenant, "admin"), add_member(tenant, "viewer")
    issued = admin_issues_everything(tenant, admin, viewer)
    # without confirmation the demotion only shows what it would revoke
    asked = owner.post(f"/settings/team/{admin.id}/role", data={"role": "tester"})
    assert asked.status_code == 200
    assert f"token of {admin.id}" in text_of(asked.text) and issued["invited"] in text_of(asked.text)
    assert next(u for u in tenant.api.get("/api/v1/users").json()["data"] if u["id"] == admin.id)["role"] == "admin"
    done = owner.post(f"/settings/team/{admin.id}/role", data={"role": "tester", "confirmed": "1"})
    assert done.status_code == 303
    assert_all_revoked(tenant, issued)
    entries = audit_actions(tenant)
    assert {"user.role_changed", "token.revoked", "invitation.revoked", "reset.revoked"} <= {
        e["action"] for e in entries}


# --- item 6: sessions -----------------------------------------------------------------------------------

def test_a_password_change_ends_the_other_sessions_and_keeps_this_one(tenant: Tenant) -> None:
    member = add_member(tenant, "tester")
    here, elsewhere = (signed_in(tenant, member.email, member.password, agent) for agent in ("laptop", "phone"))
    changed = here.post("/account", data={"name": "T", "old_password": member.password,
                                          "new_password": "a brand new one", "confirm": "a brand new one"})
    assert changed.status_code == 303
    assert here.get("/account").status_code == 200
    assert is_signed_out(elsewhere)


def test_a_password_reset_ends_every_session(tenant: Tenant) -> None:
    owner = tenant.web()
    member = add_member(tenant, "viewer")
    theirs = signed_in(tenant, member.email, member.password)
    link = _issued_link(owner, owner.post(f"/settings/team/{member.id}/reset"))
    used = anonymous(tenant).post(link, data={"password": "reset password", "password_confirm": "reset password"})
    assert used.status_code == 303
    assert is_signed_out(theirs)


def test_reactivating_a_user_does_not_revive_their_old_sessions(tenant: Tenant) -> None:
    owner = tenant.web()
    member = add_member(tenant, "tester")
    theirs = signed_in(tenant, member.email, member.password)
    assert owner.post(f"/settings/team/{member.id}/active", data={"active": "0", "confirmed": "1"}).status_code == 303
    assert owner.post(f"/settings/team/{member.id}/active", data={"active": "1"}).status_code == 303
    assert is_signed_out(theirs)
    signed_in(tenant, member.email, member.password)  # a new sign-in works


def test_a_demotion_below_admin_ends_the_sessions(tenant: Tenant) -> None:
    owner = tenant.web()
    admin = add_member(tenant, "admin")
    theirs = signed_in(tenant, admin.email, admin.password)
    assert owner.post(f"/settings/team/{admin.id}/role", data={"role": "viewer", "confirmed": "1"}).status_code == 303
    assert is_signed_out(theirs)


def test_account_sessions_lists_and_ends_sessions(tenant: Tenant) -> None:
    member = add_member(tenant, "viewer")
    laptop = signed_in(tenant, member.email, member.password, "Laptop Browser/1")
    phone = signed_in(tenant, member.email, member.password, "Phone Browser/2")
    tablet = signed_in(tenant, member.email, member.password, "Tablet Browser/3")
    page = laptop.get("/account/sessions")
    assert page.status_code == 200 and every_post_form_has_csrf(page.text)
    text = text_of(page.text)
    assert "Laptop Browser/1" in text and "Phone Browser/2" in text and "Tablet Browser/3" in text
    assert "127.0.0.1" in text and "this session" in text.lower()
    # end one
    handles = dict(re.findall(r'data-agent="([^"]+)"[^>]*data-session="([^"]+)"', page.text))
    assert set(handles) >= {"Phone Browser/2", "Tablet Browser/3"}
    assert laptop.post("/account/sessions", data={"end": handles["Phone Browser/2"]}).status_code == 303
    assert is_signed_out(phone)
    assert tablet.get("/account").status_code == 200
    # another user's session handle ends nothing
    other = add_member(tenant, "viewer")
    other_web = signed_in(tenant, other.email, other.password)
    other_web.post("/account/sessions", data={"end": handles["Tablet Browser/3"]})
    assert tablet.get("/account").status_code == 200
    # end every other one
    assert laptop.post("/account/sessions", data={"end": "others"}).status_code == 303
    assert is_signed_out(tablet)
    assert laptop.get("/account").status_code == 200
    assert "Tablet Browser/3" not in text_of(laptop.get("/account/sessions").text)
    # the header's user menu leads there
    assert 'href="/account/sessions"' in laptop.get("/account").text


def test_last_seen_is_written_at_most_every_few_minutes(tenant: Tenant) -> None:
    member = add_member(tenant, "viewer")
    web = signed_in(tenant, member.email, member.password)

    def last_seen() -> list[str]:
        with connect_db(tenant.server.db_path) as conn:
            return [row[0] for row in conn.execute("SELECT last_seen_at FROM web_sessions WHERE user_id = ?",
                                                   (member.id,)).fetchall()]

    [first] = last_seen()
    assert first
    web.get("/account")
    web.get("/runs")
    assert last_seen() == [first]  # no write per request
    with connect_db(tenant.server.db_path) as conn:
        conn.execute("UPDATE web_sessions SET last_seen_at = ? WHERE user_id = ?", ("2000-01-01T00:00:00.000Z",
                                                                                   member.id))
        conn.commit()
    web.get("/account")
    [later] = last_seen()
    assert later > "2000-01-01T00:00:00.000Z"


# --- item 11: the audit log -------------------------------------------------------------------------------

def test_the_web_retest_flag_and_its_clearing_are_audited(tenant: Tenant) -> None:
    project = tenant.create_project()
    case = create_case(tenant, project["id"])
    web = tenant.web()
    assert web.post(f"/cases/{case['code']}/retest", data={"needs_retest": "true", "reason": "flaky"}
                    ).status_code == 303
    assert web.post(f"/cases/{case['code']}/retest", data={"needs_retest": "false"}).status_code == 303
    entries = audit_actions(tenant, entity_type="case", entity_id=case["id"])
    actions = [e["action"] for e in entries]
    assert actions[:2] == ["case.retest_cleared", "case.retest_flagged"], actions
    assert all(e["actor"]["type"] == "user" for e in entries[:2])
    assert entries[1]["changes"]["reason"] == "flaky"


def test_a_tracker_driven_retest_flag_is_audited(tenant: Tenant) -> None:
    kind = "GITHUB"
    project = tenant.create_project()
    case = create_case(tenant, project["id"], tickets=[{"key": BUG_KEYS[kind], "source": kind}])
    integration_id, secret = create_integration(tenant, kind)
    assert deliver(tenant.server, integration_id, kind, secret, fixture(DONE_FIXTURES[kind])).status_code == 200
    [entry] = [e for e in audit_actions(tenant) if e["action"] == "case.retest_flagged"]
    assert entry["entity_id"] == case["id"] and entry["actor"]["type"] == "system"
    assert entry["changes"]["bug_ticket_key"] == BUG_KEYS[kind]


def test_the_database_refuses_to_delete_audit_entries(tenant: Tenant) -> None:
    tenant.create_project()
    with connect_db(tenant.server.db_path) as conn:
        before = conn.execute("SELECT COUNT(*) FROM audit_log WHERE tenant_id = ?", (tenant.id,)).fetchone()[0]
        assert before > 0
        with pytest.raises(Exception, match="append-only"):
            conn.execute("DELETE FROM audit_log WHERE tenant_id = ?", (tenant.id,))
        after = conn.execute("SELECT COUNT(*) FROM audit_log WHERE tenant_id = ?", (tenant.id,)).fetchone()[0]
    assert after == before


def test_a_deleted_tenant_still_takes_its_audit_log_with_it(tenant: Tenant) -> None:
    from tests import postgres_cluster

    tenant.create_project()
    with connect_db(tenant.server.db_path) as conn:
        if not postgres_cluster.selected():
            conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("DELETE FROM tenants WHERE id = ?", (tenant.id,))
        conn.commit()
        assert conn.execute("SELECT COUNT(*) FROM audit_log WHERE tenant_id = ?", (tenant.id,)).fetchone()[0] == 0


def test_the_audit_page_shows_who_an_actor_is_beside_their_name(tenant: Tenant) -> None:
    owner = tenant.web()
    impostor = add_member(tenant, "tester")
    impostor_web = signed_in(tenant, impostor.email, impostor.password)
    assert impostor_web.post("/account", data={"name": tenant.email}).status_code == 303  # named like the owner
    project = tenant.create_project()
    assert impostor_web.post(f"/projects/{project['id']}/edit", data={"name": "Renamed by the impostor"}
                             ).status_code == 303
    page = owner.get("/settings/audit", params={"action": "project.updated"})
    assert page.status_code == 200
    [row] = [text_of(r) for r in re.findall(r"<tr>(.*?)</tr>", page.text, flags=re.S) if "impostor" in r]
    assert tenant.email in row and impostor.email in row, row  # the name they chose, and who they are


def test_lists_in_audit_changes_render_as_lists(tenant: Tenant) -> None:
    owner = tenant.web()
    _new_token(owner, "two scopes")
    page = owner.get("/settings/audit", params={"action": "token.created"})
    row = next(text_of(r) for r in re.findall(r"<tr>(.*?)</tr>", page.text, flags=re.S) if "two scopes" in r)
    assert "read, write" in row and "→" not in row, row
