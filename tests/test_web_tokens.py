"""Web interface: Settings → Developer → API Tokens."""

from __future__ import annotations

import re

from tests.conftest import Tenant
from tests.web_helpers import HTML, field_error, follow, text_of

IN_PROCESS = True  # behaviour of the API/web only: runs in the in-process app (tests/inprocess.py)


def _new_token(html: str) -> str | None:
    match = re.search(r'id="new-token-value"[^>]*>(svc_[a-z0-9]{8}_[A-Za-z0-9]+)<', html)
    return match.group(1) if match else None


def test_create_token_shown_once_and_works(tenant: Tenant) -> None:
    web = tenant.web()
    response = web.post("/settings/tokens", data={"name": "GitLab CI", "scopes": ["read", "write"]})
    page = follow(web, response)
    token = _new_token(page.text)
    assert token, page.text
    assert page.headers.get("cache-control") == "no-store"
    assert 'data-copy="new-token-value"' in page.text
    # shown once: the next view has no full token anywhere
    again = web.get("/settings/tokens", headers=HTML)
    assert _new_token(again.text) is None and token not in again.text
    assert f"svc_{token.split('_')[1]}_" in again.text
    row = text_of(again.text)
    assert "GitLab CI" in row and "never" in row
    me = tenant.server.http_client().get("/api/v1/me", headers={"Authorization": f"Bearer {token}"})
    assert me.status_code == 200 and me.json()["scopes"] == ["read", "write"]


def test_token_validation(tenant: Tenant) -> None:
    web = tenant.web()
    no_scope = web.post("/settings/tokens", data={"name": "keep me"})
    assert no_scope.status_code == 400
    assert "scope" in (field_error(no_scope.text, "scopes") or "")
    assert 'value="keep me"' in no_scope.text
    no_name = web.post("/settings/tokens", data={"name": "", "scopes": "read"})
    assert no_name.status_code == 400 and field_error(no_name.text, "name")
    assert re.search(r'value="read"\s+checked', no_name.text)


def test_revoke_stops_token_immediately(tenant: Tenant) -> None:
    web = tenant.web()
    token = _new_token(follow(web, web.post("/settings/tokens", data={"name": "temp", "scopes": "read"})).text)
    assert token
    headers = {"Authorization": f"Bearer {token}"}
    assert tenant.server.http_client().get("/api/v1/me", headers=headers).status_code == 200
    page = web.get("/settings/tokens", headers=HTML)
    token_id = re.search(r'action="/settings/tokens/([^/"]+)/revoke"[^>]*data-confirm="Revoke “temp”', page.text)
    assert token_id
    revoked = follow(web, web.post(f"/settings/tokens/{token_id.group(1)}/revoke"))
    assert "Token revoked" in revoked.text and "Revoked" in revoked.text
    assert tenant.server.http_client().get("/api/v1/me", headers=headers).status_code == 401


def test_cannot_revoke_other_tenants_token(tenant: Tenant, other_tenant: Tenant) -> None:
    theirs = other_tenant.web().get("/settings/tokens", headers=HTML)
    token_id = re.search(r'action="/settings/tokens/([^/"]+)/revoke"', theirs.text)
    assert token_id
    response = tenant.web().post(f"/settings/tokens/{token_id.group(1)}/revoke", headers=HTML)
    assert response.status_code == 404
    assert other_tenant.api.get("/api/v1/me").status_code == 200
