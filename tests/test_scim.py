"""SCIM 2.0 provisioning at /scim/v2 (issue 25) against a real server: the published compliance tester
(scim2-tester), then what TMS makes of it — accounts, deactivation with its revocations, group → role,
tenant scoping, scopes, filters, pages and error bodies, and the audit log."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import Tenant, run_admin
from tests.team_helpers import add_member, owner_id

SCIM_JSON = "application/scim+json"
USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"


def scim_token(tenant: Tenant, scopes: str = "scim") -> str:
    from tms.team.tokens import service as tokens

    async def create(db: Any) -> str:
        return (await tokens.create_token(db, tenant.id, "identity provider", scopes)).token

    return run_admin(tenant.server.db_path, create)  # type: ignore[no-any-return]


def scim_client(tenant: Tenant, token: str | None = None) -> httpx.Client:
    return httpx.Client(base_url=f"{tenant.server.url}/scim/v2", timeout=30,
                        headers={"Authorization": f"Bearer {token or scim_token(tenant)}",
                                 "Content-Type": SCIM_JSON, "Accept": SCIM_JSON})


def assert_scim_error(response: httpx.Response, status: int, scim_type: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(SCIM_JSON)
    body = response.json()
    assert body["schemas"] == [ERROR]
    assert body["status"] == str(status)
    assert body["detail"]
    if scim_type is not None:
        assert body.get("scimType") == scim_type, body
    return body  # type: ignore[no-any-return]


def new_user(scim: httpx.Client, user_name: str, **fields: Any) -> dict[str, Any]:
    body = {"schemas": [USER], "userName": user_name, "name": {"givenName": "Ada", "familyName": "Lovelace"},
            "emails": [{"value": user_name, "primary": True, "type": "work"}], "active": True, **fields}
    response = scim.post("/Users", json=body)
    assert response.status_code == 201, response.text
    assert response.headers["location"].endswith(f"/scim/v2/Users/{response.json()['id']}")
    return response.json()  # type: ignore[no-any-return]


def member(tenant: Tenant, user_id: str) -> dict[str, Any] | None:
    users = tenant.api.get("/api/v1/users").json()["data"]
    return next((u for u in users if u["id"] == user_id), None)


def audit_actions(tenant: Tenant, entity_id: str) -> list[dict[str, Any]]:
    web = tenant.web()
    entries = web.get("/api/v1/audit", params={"entity_id": entity_id}, headers={"Authorization": ""})
    if entries.status_code != 200:  # the audit API takes a token
        entries = tenant.api.get("/api/v1/audit", params={"entity_id": entity_id})
    assert entries.status_code == 200, entries.text
    return entries.json()["data"]  # type: ignore[no-any-return]


def test_the_published_compliance_tester_passes(tenant: Tenant) -> None:
    import httpx2
    from scim2_client.engines.httpx2 import SyncSCIMClient
    from scim2_tester import Status, check_server

    token = scim_token(tenant)
    with httpx2.Client(base_url=f"{tenant.server.url}/scim/v2",
                       headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        results = check_server(SyncSCIMClient(http))
    assert results
    failed = [f"{r.title} [{r.resource_type}]: {r.reason}" for r in results
              if r.status in (Status.ERROR, Status.CRITICAL)]
    assert not failed, "\n".join(failed)
    ran = {r.title for r in results if r.status == Status.SUCCESS}
    # the whole lifecycle ran, not only discovery
    assert {"object_creation", "object_replacement", "object_deletion"} <= ran, ran


def test_provisioning_creates_a_member_who_cannot_sign_in_with_a_password(tenant: Tenant) -> None:
    scim = scim_client(tenant)
    created = new_user(scim, "ada-provisioned@example.com", externalId="okta-00u1", displayName="Ada Lovelace")
    assert created["active"] is True and created["externalId"] == "okta-00u1"
    assert created["meta"]["resourceType"] == "User"
    account = member(tenant, created["id"])
    assert account is not None
    assert (account["email"], account["name"], account["role"]) == ("ada-provisioned@example.com", "Ada Lovelace",
                                                                    "viewer")
    login = httpx.Client(base_url=tenant.server.url)
    login.get("/login")
    refused = login.post("/login", data={"email": "ada-provisioned@example.com", "password": "!provisioned",
                                         "_csrf_token": login.cookies.get("csrftoken", "")})
    assert refused.status_code == 400
    again = scim.post("/Users", json={"schemas": [USER], "userName": "ada-provisioned@example.com"})
    assert_scim_error(again, 409, "uniqueness")
    actions = [e["action"] for e in audit_actions(tenant, created["id"])]
    assert "user.provisioned" in actions
    entry = next(e for e in audit_actions(tenant, created["id"]) if e["action"] == "user.provisioned")
    assert entry["actor"]["type"] == "token" and entry["actor"]["name"] == "identity provider"


def test_deactivation_revokes_like_the_team_page_and_delete_deprovisions(tenant: Tenant) -> None:
    scim = scim_client(tenant)
    created = new_user(scim, "grace@example.com")
    user_id = created["id"]
    admins = scim.post("/Groups", json={"schemas": [GROUP], "displayName": "tms-admins",
                                        "members": [{"value": user_id}]})
    assert admins.status_code == 201, admins.text
    assert member(tenant, user_id)["role"] == "admin"  # type: ignore[index]

    # the admin issues a token; deactivation over SCIM must revoke it
    from tms.team.tokens import service as tokens

    async def issue(db: Any) -> str:
        return (await tokens.create_token(db, tenant.id, "grace's ci", "read", created_by=user_id)).token

    graces_token = run_admin(tenant.server.db_path, issue)
    with httpx.Client(base_url=tenant.server.url, headers={"Authorization": f"Bearer {graces_token}"}) as ci:
        assert ci.get("/api/v1/projects").status_code == 200
        patched = scim.patch(f"/Users/{user_id}", json={"schemas": [PATCH], "Operations": [
            {"op": "replace", "path": "active", "value": False}]})
        assert patched.status_code == 200, patched.text
        assert patched.json()["active"] is False
        assert member(tenant, user_id)["active"] is False  # type: ignore[index]
        assert ci.get("/api/v1/projects").status_code == 401
    actions = [e["action"] for e in tenant.api.get("/api/v1/audit", params={"limit": 50}).json()["data"]]
    assert "user.deactivated" in actions and "token.revoked" in actions

    reactivated = scim.put(f"/Users/{user_id}", json={"schemas": [USER], "userName": "grace@example.com",
                                                       "active": True, "displayName": "Grace Hopper"})
    assert reactivated.status_code == 200, reactivated.text
    account = member(tenant, user_id)
    assert account["active"] is True and account["name"] == "Grace Hopper"  # type: ignore[index]

    assert scim.delete(f"/Users/{user_id}").status_code == 204
    assert_scim_error(scim.get(f"/Users/{user_id}"), 404)
    assert member(tenant, user_id)["active"] is False  # type: ignore[index]
    group = scim.get(f"/Groups/{admins.json()['id']}").json()
    assert not group.get("members")
    assert "user.deprovisioned" in [e["action"] for e in audit_actions(tenant, user_id)]


def test_groups_map_to_roles_and_the_mapping_is_a_tenant_setting(tenant: Tenant) -> None:
    scim = scim_client(tenant)
    ada = new_user(scim, "ada-roles@example.com")["id"]
    bob = new_user(scim, "bob-roles@example.com")["id"]
    testers = scim.post("/Groups", json={"schemas": [GROUP], "displayName": "tms-testers",
                                         "members": [{"value": ada}, {"value": bob}]}).json()
    assert member(tenant, ada)["role"] == "tester" and member(tenant, bob)["role"] == "tester"  # type: ignore[index]
    admins = scim.post("/Groups", json={"schemas": [GROUP], "displayName": "tms-admins", "members": [
        {"value": ada}]}).json()
    assert member(tenant, ada)["role"] == "admin"  # the highest mapped role wins
    removed = scim.patch(f"/Groups/{testers['id']}", json={"schemas": [PATCH], "Operations": [
        {"op": "remove", "path": f'members[value eq "{bob}"]'}]})
    assert removed.status_code == 200, removed.text
    assert member(tenant, bob)["role"] == "viewer"  # type: ignore[index]
    added = scim.patch(f"/Groups/{admins['id']}", json={"schemas": [PATCH], "Operations": [
        {"op": "add", "path": "members", "value": [{"value": bob}]}]})
    assert added.status_code == 200, added.text
    assert member(tenant, bob)["role"] == "admin"  # type: ignore[index]
    user = scim.get(f"/Users/{bob}").json()
    assert [g["display"] for g in user["groups"]] == ["tms-admins"]



def test_filter_pages_and_errors(tenant: Tenant) -> None:
    scim = scim_client(tenant)
    for number in range(5):
        new_user(scim, f"page{number}@example.com")
    found = scim.get("/Users", params={"filter": 'userName eq "PAGE3@example.com"'})
    assert found.status_code == 200 and found.headers["content-type"].startswith(SCIM_JSON)
    body = found.json()
    assert body["totalResults"] == 1 and body["Resources"][0]["userName"] == "page3@example.com"
    sw = scim.get("/Users", params={"filter": 'userName sw "page"', "startIndex": 2, "count": 2}).json()
    assert (sw["totalResults"], sw["startIndex"], sw["itemsPerPage"]) == (5, 2, 2)
    assert [r["userName"] for r in sw["Resources"]] == ["page1@example.com", "page2@example.com"]
    assert scim.get("/Users", params={"filter": 'userName eq "nobody@example.com"'}).json()["totalResults"] == 0
    assert_scim_error(scim.get("/Users", params={"filter": 'userName eq'}), 400, "invalidFilter")
    assert_scim_error(scim.post("/Users", json={"schemas": [USER]}), 400)
    assert_scim_error(scim.post("/Users", content=b"{not json"), 400, "invalidSyntax")
    assert_scim_error(scim.post("/Users", json={"schemas": [USER], "userName": "no-address", "emails": [
        {"value": "not an address"}]}), 400, "invalidValue")
    # RFC 7643 makes emails optional: such a user gets a placeholder no mail or sign-in matches
    bare = new_user(scim, "bare-name", emails=None)
    assert member(tenant, bare["id"])["email"].endswith("@provisioned.invalid")  # type: ignore[index]
    assert_scim_error(scim.get("/Users/does-not-exist"), 404)
    assert_scim_error(scim.get("/NoSuchEndpoint"), 404)
    config = scim.get("/ServiceProviderConfig").json()
    assert config["patch"]["supported"] is True and config["filter"]["maxResults"] == 200
    assert {r["name"] for r in scim.get("/ResourceTypes").json()["Resources"]} == {"User", "Group"}
    assert len(scim.get("/Schemas").json()["Resources"]) == 3


def test_only_a_scim_token_gets_in_and_only_to_its_tenant(tenant: Tenant, other_tenant: Tenant) -> None:
    scim = scim_client(tenant)
    user = new_user(scim, "scoped@example.com")
    group = scim.post("/Groups", json={"schemas": [GROUP], "displayName": "tms-viewers",
                                       "members": [{"value": user["id"]}]}).json()
    for token in (tenant.write_token, tenant.read_token):
        with scim_client(tenant, token) as wrong_scope:
            assert_scim_error(wrong_scope.get("/Users"), 403)
            assert_scim_error(wrong_scope.post("/Users", json={"schemas": [USER], "userName": "x@example.com"}), 403)
    refused = tenant.api.get("/api/v1/audit", params={"action": "scim.request_refused"}).json()["data"]
    assert sorted((entry["actor"]["name"], entry["changes"]["request"]) for entry in refused) == [
        (name, request) for name in ("ci", "reporting") for request in ("GET /scim/v2/Users", "POST /scim/v2/Users")]
    assert all(entry["changes"]["reason"] == "token without the scim scope" for entry in refused)
    with httpx.Client(base_url=f"{tenant.server.url}/scim/v2") as anonymous:
        assert_scim_error(anonymous.get("/Users"), 401)
    # the scim scope does not reach /api/v1
    with httpx.Client(base_url=tenant.server.url, headers={"Authorization": scim.headers["Authorization"]}) as api:
        assert api.get("/api/v1/projects").status_code == 403

    other = scim_client(other_tenant)
    assert other.get("/Users").json()["totalResults"] == 0
    assert_scim_error(other.get(f"/Users/{user['id']}"), 404)
    assert_scim_error(other.put(f"/Users/{user['id']}", json={"schemas": [USER], "userName": "x@example.com"}), 404)
    assert_scim_error(other.patch(f"/Users/{user['id']}", json={"schemas": [PATCH], "Operations": [
        {"op": "replace", "path": "active", "value": False}]}), 404)
    assert_scim_error(other.delete(f"/Users/{user['id']}"), 404)
    assert_scim_error(other.get(f"/Groups/{group['id']}"), 404)
    assert_scim_error(other.put(f"/Groups/{group['id']}", json={"schemas": [GROUP], "displayName": "x"}), 404)
    assert_scim_error(other.patch(f"/Groups/{group['id']}", json={"schemas": [PATCH], "Operations": [
        {"op": "replace", "path": "displayName", "value": "x"}]}), 404)
    assert_scim_error(other.delete(f"/Groups/{group['id']}"), 404)
    assert scim.get(f"/Groups/{group['id']}").json()["displayName"] == "tms-viewers"
    # the writes naming another team's ids are audit entries of the team that tried (the reads are not)
    tried = other_tenant.api.get("/api/v1/audit", params={"action": "scim.request_refused"}).json()["data"]
    assert sorted(entry["changes"]["request"].split(" /scim/v2/")[0] for entry in tried) == [
        "DELETE", "DELETE", "PATCH", "PATCH", "PUT", "PUT"]
    assert {entry["changes"]["reason"] for entry in tried} == {"no such resource in this team"}
    # another tenant's user cannot be made a member of one's groups
    assert_scim_error(other.post("/Groups", json={"schemas": [GROUP], "displayName": "tms-admins",
                                                  "members": [{"value": user["id"]}]}), 400, "invalidValue")
    assert member(tenant, user["id"])["active"] is True  # type: ignore[index]
    # an address of another tenant's account is taken
    assert_scim_error(other.post("/Users", json={"schemas": [USER], "userName": "scoped@example.com"}), 409)


def test_an_invited_member_is_adopted_and_the_owner_cannot_be_deprovisioned(tenant: Tenant) -> None:
    scim = scim_client(tenant)
    tester = add_member(tenant, "tester")
    adopted = new_user(scim, tester.email)
    assert adopted["id"] == tester.id
    assert member(tenant, tester.id)["role"] == "tester"  # type: ignore[index]  # adoption keeps the role
    owner = new_user(scim, tenant.email)
    assert owner["id"] == owner_id(tenant)
    assert_scim_error(scim.delete(f"/Users/{owner['id']}"), 400, "mutability")
    assert_scim_error(scim.patch(f"/Users/{owner['id']}", json={"schemas": [PATCH], "Operations": [
        {"op": "replace", "path": "active", "value": False}]}), 400, "mutability")
    admins = scim.post("/Groups", json={"schemas": [GROUP], "displayName": "tms-viewers",
                                        "members": [{"value": owner["id"]}]})
    assert admins.status_code == 201
    assert member(tenant, owner["id"])["role"] == "owner"  # type: ignore[index]


def test_the_group_mapping_is_set_on_the_directory_settings_page(tenant: Tenant) -> None:
    scim = scim_client(tenant)
    ada = new_user(scim, "ada-mapping@example.com")["id"]
    web = tenant.web()
    token = web.cookies.get("csrftoken", "")
    page = web.get("/settings/ldap")
    assert page.status_code == 200 and "tms-admins = admin" in page.text
    refused = web.post("/settings/ldap/scim", data={"group_role_map": "QA = owner", "default_role": "viewer",
                                                    "_csrf_token": token})
    assert refused.status_code == 400 and "role must be one of admin, tester, viewer" in refused.text
    saved = web.post("/settings/ldap/scim", data={"group_role_map": "QA Leads = admin\nQA = tester\n",
                                                  "default_role": "viewer", "_csrf_token": token})
    assert saved.status_code == 303, saved.text
    qa = scim.post("/Groups", json={"schemas": [GROUP], "displayName": "qa", "members": [{"value": ada}]})
    assert qa.status_code == 201
    assert member(tenant, ada)["role"] == "tester"  # type: ignore[index]  # names compare without case
    leads = scim.post("/Groups", json={"schemas": [GROUP], "displayName": "QA Leads", "members": [{"value": ada}]})
    assert member(tenant, ada)["role"] == "admin"  # type: ignore[index]
    assert scim.delete(f"/Groups/{leads.json()['id']}").status_code == 204
    assert member(tenant, ada)["role"] == "tester"  # type: ignore[index]
    old_default = scim.post("/Groups", json={"schemas": [GROUP], "displayName": "tms-admins",
                                             "members": [{"value": ada}]})
    assert old_default.status_code == 201
    assert member(tenant, ada)["role"] == "tester"  # type: ignore[index]  # tms-admins no longer maps
    entry = tenant.api.get("/api/v1/audit", params={"action": "scim.settings_updated"}).json()["data"][0]
    assert entry["changes"]["group_role_map"][1] == {"QA Leads": "admin", "QA": "tester"}
