"""Role checks, route by route: every unsafe web route (forms and the session JSON API) refuses the
roles below the one it needs with 403, even for a crafted post with a valid CSRF token; admin pages
refuse testers even to read. The table must name every such route (a test enforces it), like the
tenant-isolation table does for path parameters.
"""

from __future__ import annotations

import re
import warnings

import httpx
import pytest

from tests.conftest import ServerProcess, Tenant, make_tenant_on
from tests.team_helpers import Member, add_member, web_as

ROLES = ("viewer", "tester", "admin", "owner")

# (method, path, least role). Ids in paths need not exist: the role check runs before the handler.
UNSAFE_ROUTES = [
    ("POST", "/projects", "tester"),
    ("POST", "/account/sessions", "viewer"),
    ("POST", "/projects/{id}/activate", "tester"),
    ("POST", "/cases/new", "tester"),
    ("POST", "/cases/{id}/edit", "tester"),
    ("POST", "/cases/{id}/status", "tester"),
    ("POST", "/cases/{id}/retest", "tester"),
    ("POST", "/cases/{id}/review", "tester"),
    ("POST", "/cases/{id}/review/approve", "tester"),
    ("POST", "/cases/{id}/review/reject", "tester"),
    ("POST", "/projects/{id}/review", "admin"),
    ("POST", "/runs/{id}/edit", "tester"),
    ("POST", "/runs/{id}/rerun", "tester"),
    ("POST", "/runs/new", "tester"),
    ("POST", "/runs/{id}/complete", "tester"),
    ("POST", "/runs/{id}/add", "tester"),
    ("POST", "/runs/{id}/bulk", "tester"),
    ("POST", "/results/{id}/execute", "tester"),
    ("POST", "/api/results/{id}/attachments", "tester"),
    ("POST", "/api/cases/{id}/attachments", "tester"),
    ("POST", "/cases/{id}/attachments/{id}/delete", "tester"),
    ("POST", "/ai/generate", "tester"),
    ("POST", "/ai/generations/{id}", "tester"),
    ("POST", "/settings/tokens", "admin"),
    ("POST", "/settings/ldap", "admin"),
    ("POST", "/settings/ldap/test", "admin"),
    ("POST", "/settings/ldap/scim", "admin"),
    ("POST", "/settings/tokens/{id}/revoke", "admin"),
    ("POST", "/settings/webhooks", "admin"),
    ("POST", "/settings/webhooks/{id}", "admin"),
    ("POST", "/settings/webhooks/{id}/pause", "admin"),
    ("POST", "/settings/webhooks/{id}/resume", "admin"),
    ("POST", "/settings/webhooks/{id}/delete", "admin"),
    ("POST", "/settings/webhooks/{id}/ping", "admin"),
    ("POST", "/settings/webhooks/{id}/deliveries/{id}/redeliver", "admin"),
    ("POST", "/settings/integrations", "admin"),
    ("POST", "/settings/integrations/{id}/secret", "admin"),
    ("POST", "/settings/integrations/{id}/delete", "admin"),
    ("POST", "/settings/integrations/{id}/outbound", "admin"),
    ("POST", "/results/{id}/defect", "tester"),
    ("POST", "/traceability/refresh", "tester"),
    ("POST", "/settings/team/invite", "admin"),
    ("POST", "/settings/team/invitations/{id}/revoke", "admin"),
    ("POST", "/settings/team/{id}/role", "admin"),
    ("POST", "/settings/team/{id}/active", "admin"),
    ("POST", "/settings/team/{id}/reset", "admin"),
    ("POST", "/settings/sign-in", "admin"),
    ("POST", "/settings/sign-in/remove", "admin"),
    ("POST", "/api/webhooks", "admin"),
    ("PATCH", "/api/webhooks/{id}", "admin"),
    ("DELETE", "/api/webhooks/{id}", "admin"),
    ("POST", "/api/webhooks/{id}/ping", "admin"),
    ("POST", "/api/webhooks/{id}/deliveries/{id}/redeliver", "admin"),
    ("POST", "/account", "viewer"),
    # two-factor (issue 25)
    ("POST", "/account/2fa/start", "viewer"),
    ("POST", "/account/2fa/confirm", "viewer"),
    ("POST", "/account/2fa/cancel", "viewer"),
    ("POST", "/account/2fa/recovery-codes", "viewer"),
    ("POST", "/account/2fa/disable", "viewer"),
    ("POST", "/settings/two-factor", "admin"),
    ("POST", "/settings/two-factor/{id}/reset", "admin"),
    # the library and planning pages (issues 14, 15)
    ("POST", "/projects/{id}/edit", "tester"),
    ("POST", "/projects/{id}/archive", "tester"),
    ("POST", "/projects/{id}/unarchive", "tester"),
    ("POST", "/projects/{id}/delete", "admin"),
    ("POST", "/cases/sections", "tester"),
    ("POST", "/cases/sections/{id}", "tester"),
    ("POST", "/cases/sections/{id}/delete", "tester"),
    ("POST", "/cases/bulk", "tester"),
    ("POST", "/cases/import", "tester"),
    ("POST", "/cases/import/confirm", "tester"),
    ("POST", "/cases/{id}/move", "tester"),
    ("POST", "/milestones", "tester"),
    ("POST", "/milestones/{id}/edit", "tester"),
    ("POST", "/milestones/{id}/status", "tester"),
    ("POST", "/milestones/{id}/delete", "tester"),
    ("POST", "/plans/new", "tester"),
    ("POST", "/plans/{id}/edit", "tester"),
    ("POST", "/plans/{id}/delete", "tester"),
    # failure intelligence pages (issue 15)
    ("POST", "/known-issues", "tester"),
    ("POST", "/known-issues/{id}/status", "tester"),
    ("POST", "/known-issues/{id}/delete", "tester"),
    ("POST", "/quarantine", "tester"),
    ("POST", "/quarantine/{id}/delete", "tester"),
    # custom fields in the project's settings (issue 26): admins manage fields
    ("POST", "/custom-fields", "admin"),
    ("POST", "/custom-fields/{id}", "admin"),
    ("POST", "/custom-fields/{id}/move", "admin"),
    ("POST", "/custom-fields/{id}/retire", "admin"),
    ("POST", "/custom-fields/{id}/restore", "admin"),
    # comments and the inbox (issue 26): viewers read comments but write none; everyone has an inbox
    ("POST", "/cases/{id}/comments", "tester"),
    ("POST", "/results/{id}/comments", "tester"),
    ("POST", "/comments/{id}/edit", "tester"),
    ("POST", "/comments/{id}/delete", "tester"),
    ("POST", "/notifications/read-all", "viewer"),
    ("POST", "/notifications/{id}/read", "viewer"),
    ("POST", "/account/notifications", "viewer"),
    # shared steps (issue 26): testers write them
    ("POST", "/projects/{id}/shared-steps", "tester"),
    ("POST", "/shared-steps/{id}", "tester"),
    ("POST", "/shared-steps/{id}/delete", "tester"),
    # report schedules (issue 27): admins manage them (a schedule mails results to outside addresses)
    ("POST", "/projects/{id}/report-schedules", "admin"),
    ("POST", "/report-schedules/{id}/edit", "admin"),
    ("POST", "/report-schedules/{id}/delete", "admin"),
    ("POST", "/report-schedules/{id}/send", "admin"),
]
ADMIN_PAGES = ["/settings/tokens", "/settings/webhooks", "/settings/integrations", "/settings/team",
               "/settings/audit", "/settings/two-factor", "/api/webhooks", "/api/webhooks/{id}/deliveries",
               "/settings/webhooks/{id}", "/settings/integrations/{id}", "/settings/ldap", "/settings/sign-in",
               "/projects/{id}/report-schedules"]
# unsafe routes outside the role model, with the reason
NOT_ROLE_CHECKED = {
    "/login": "signing in", "/logout": "signing out", "/setup": "first run, guarded by the setup token",
    "/invitations/{secret:str}": "the invitation link is the credential",
    "/password-reset/{secret:str}": "the reset link is the credential",
    "/password-reset": "forgot password: anyone may ask, the answer is the same for every address",
    "/login/two-factor": "signing in: the second step of a session past its password",
    "/api/integrations/{integration_id:str}": "tracker webhooks, signed with the integration's secret",
    "/auth/ldap": "signing in with LDAP",
    **{f"/scim/v2{path}": "SCIM: a scim-scoped token, no session (tested in test_scim.py)" for path in (
        "/Users", "/Users/.search", "/Users/{user_id:str}", "/Groups", "/Groups/.search", "/Groups/{group_id:str}",
        "/.search", "/{rest:path}")},
}


@pytest.fixture(scope="module")
def team(app_server: ServerProcess) -> tuple[Tenant, dict[str, Member]]:
    tenant = make_tenant_on(app_server, "Roles")  # in-process (tests/inprocess.py)
    return tenant, {role: add_member(tenant, role) for role in ("viewer", "tester", "admin")}


def _denied(least: str) -> list[str]:
    return [role for role in ROLES[:ROLES.index(least)] if role != "owner"]


def _client(tenant: Tenant, member: Member) -> httpx.Client:
    return web_as(tenant, member.email, member.password)


def _send(client: httpx.Client, method: str, path: str) -> httpx.Response:
    url = path.replace("{id}", "cxxxxxxxxxxxxxxxxxxxxxxxx")
    token = client.cookies.get("csrftoken", "")
    if path.startswith("/api/"):
        return client.request(method, url, json={} if method != "DELETE" else None)
    return client.request(method, url, data={"_csrf_token": token, "role": "owner", "active": "0",
                                             "name": "x", "status": "PASSED"})


@pytest.mark.parametrize(("method", "path", "least"), UNSAFE_ROUTES, ids=lambda v: str(v))
def test_roles_below_the_route_get_403(team, method: str, path: str, least: str) -> None:
    tenant, members = team
    for role in _denied(least):
        response = _send(_client(tenant, members[role]), method, path)
        assert response.status_code == 403, f"{role} {method} {path}: {response.status_code} {response.text[:200]}"


@pytest.mark.parametrize("path", ADMIN_PAGES)
def test_admin_pages_refuse_testers_even_to_read(team, path: str) -> None:
    tenant, members = team
    for role in ("viewer", "tester"):
        response = _client(tenant, members[role]).get(path.replace("{id}", "cxxxxxxxxxxxxxxxxxxxxxxxx"))
        assert response.status_code == 403, f"{role} GET {path}: {response.status_code}"


def test_a_viewer_reads_every_work_page(team) -> None:
    tenant, members = team
    viewer = _client(tenant, members["viewer"])
    for path in ("/", "/projects", "/cases", "/runs", "/runs/new", "/my-work", "/account", "/ai"):
        assert viewer.get(path).status_code == 200, path


def test_every_unsafe_web_route_is_in_the_table() -> None:
    from litestar.exceptions import LitestarDeprecationWarning

    from tms.app import create_app
    from tms.config import load_config

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LitestarDeprecationWarning)
        app = create_app(load_config(None, {}))
    covered = {(m, _generic(p)) for m, p, _ in UNSAFE_ROUTES}
    missing = []
    for route in app.routes:
        if route.path.startswith(("/api/v1", "/static", "/schema")) or route.path in NOT_ROLE_CHECKED:
            continue
        for method in sorted(getattr(route, "methods", set()) - {"GET", "HEAD", "OPTIONS"}):
            if (method, _generic(route.path)) not in covered:
                missing.append(f"{method} {route.path}")
    assert not missing, f"unsafe routes without a role check row: {missing}"


def _generic(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path).rstrip("/") or "/"
