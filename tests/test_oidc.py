"""OpenID Connect sign-in against a real OpenID provider on loopback (panva's oidc-provider on Node.js,
tests/oidc/provider.js, installed by `make oidc`): the flow is driven with httpx through the provider's
own login and consent pages, as a browser without JavaScript would."""

from __future__ import annotations

import re
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit, urlunsplit

import httpx
import pytest

from tests.conftest import ServerProcess, Tenant, connect_db, free_port, run_admin
from tests.web_helpers import text_of

OIDC_DIR = Path(__file__).parent / "oidc"
GROUP_ROLES = "tms-admins = admin\ntms-testers = tester"


@dataclass
class Provider:
    issuer: str
    process: subprocess.Popen[str]

    def post(self, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        response = httpx.post(self.issuer + path, json=body or {}, timeout=10)
        assert response.status_code in (200, 201), response.text
        return response.json()  # type: ignore[no-any-return]

    def client_for(self, server: ServerProcess) -> tuple[str, str]:
        client_id, client_secret = f"tms-{secrets.token_hex(6)}", secrets.token_urlsafe(24)
        self.post("/test/clients", {"client_id": client_id, "client_secret": client_secret,
                                    "redirect_uris": [server.url + "/auth/oidc/callback"]})
        return client_id, client_secret

    def account(self, email: str, *, verified: bool = True, groups: list[str] | None = None) -> str:
        self.post("/test/accounts", {"email": email, "email_verified": verified, "groups": groups or []})
        return email

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


def start_provider() -> Provider:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed (make oidc installs it with the provider)")
    assert (OIDC_DIR / "node_modules" / "oidc-provider").is_dir(), "run `make oidc` (npm ci --prefix tests/oidc)"
    process = subprocess.Popen([node, str(OIDC_DIR / "provider.js"), "0"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    for line in process.stdout:  # the script prints "ready <issuer>" once it listens
        if line.startswith("ready "):
            return Provider(line.split()[1], process)
    raise RuntimeError("the OpenID provider did not start")


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    started = start_provider()
    yield started
    started.stop()


def _unique(local: str, domain: str = "acme.test") -> str:
    return f"{local}-{secrets.token_hex(4)}@{domain}"


def configure(tenant: Tenant, provider: Provider, *, issuer: str | None = None, expect: int = 303,
              **fields: Any) -> httpx.Response:
    """Settings -> Sign-in, as the tenant's owner; checkboxes are sent as on/off like a browser does."""
    client_id, client_secret = provider.client_for(tenant.server)
    form: dict[str, Any] = {"name": "Acme ID", "issuer": issuer or provider.issuer, "client_id": client_id,
                            "client_secret": client_secret, "scopes": "openid email profile groups",
                            "allowed_domains": "acme.test", "default_role": "viewer", "groups_claim": "groups",
                            "group_roles": "", "enabled": True, "create_users": True, **fields}
    web = tenant.web()
    data = {key: ("1" if value is True else value) for key, value in form.items() if value is not False}
    response = web.post("/settings/sign-in", data=data)
    assert response.status_code == expect, response.text
    return response


def _login_form(html: str) -> tuple[str, dict[str, str]] | None:
    match = re.search(r'<form[^>]*action="([^"]+)"[^>]*method="post"[^>]*>(.*?)</form>', html, re.S)
    if match is None:
        return None
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', match.group(2)))
    return unescape(match.group(1)), fields


def to_callback(client: httpx.Client, url: str, login: str, *, tamper: Any = None) -> str:
    """Follows the flow from ``url`` (a TMS start URL) through the provider's login and consent pages,
    up to the callback URL, which it returns without opening it. ``tamper`` may rewrite the
    authorization URL on its way to the provider."""
    for _ in range(20):
        if "/auth/oidc/callback" in url:
            return url
        response = client.get(url)
        if response.is_redirect:
            target = urljoin(url, response.headers["location"])
            if tamper is not None and "/auth/oidc/start" in url:
                target = tamper(target)
            url = target
            continue
        form = _login_form(response.text)
        assert response.status_code == 200 and form is not None, f"{url}: {response.status_code} {response.text[:500]}"
        action, fields = form
        if fields.get("prompt") == "login":
            fields.update(login=login, password="any password")
        posted = client.post(urljoin(url, action), data=fields)
        assert posted.is_redirect, posted.text[:500]
        url = urljoin(url, posted.headers["location"])
    raise AssertionError("the sign-in did not reach the callback")


def sign_in(tenant: Tenant, login: str, *, start: str | None = None, tamper: Any = None
            ) -> tuple[httpx.Client, httpx.Response]:
    """A fresh browser signs in through the provider; returns it and the callback's answer."""
    client = httpx.Client(base_url=tenant.server.url, timeout=30, follow_redirects=False)
    callback = to_callback(client, tenant.server.url + (start or f"/auth/oidc/start?tenant={tenant.id}"), login,
                           tamper=tamper)
    return client, client.get(callback)


def member(tenant: Tenant, email: str) -> dict[str, Any] | None:
    users = tenant.api.get("/api/v1/users").json()["data"]
    return next((user for user in users if user["email"] == email), None)


def audit_actions(tenant: Tenant) -> list[tuple[str, Any]]:
    entries = tenant.api.get("/api/v1/audit", params={"limit": 100}).json()["data"]
    return [(entry["action"], entry["changes"]) for entry in entries]


def refused(response: httpx.Response, status: int = 403) -> str:
    assert response.status_code == status, f"{response.status_code}: {response.text[:800]}"
    assert "tms_session=" not in response.headers.get("set-cookie", "")
    return text_of(response.text)


def add_member(tenant: Tenant, email: str, role: str) -> str:
    from tms.team import accounts

    return run_admin(tenant.server.db_path,  # type: ignore[no-any-return]
                     lambda db: accounts.create_user(db, tenant.id, email, "a long password", role))


# ---- settings -------------------------------------------------------------------------------------------------


def test_settings_store_the_secret_encrypted_and_never_show_it(tenant: Tenant, provider: Provider) -> None:
    configure(tenant, provider)
    page = tenant.web().get("/settings/sign-in")
    assert page.status_code == 200 and provider.issuer in page.text
    with connect_db(tenant.server.db_path) as db:
        stored = db.execute("SELECT client_id, client_secret FROM oidc_providers WHERE tenant_id = ?",
                            (tenant.id,)).fetchone()
    assert stored is not None and stored[1].startswith("gAAAA")  # a Fernet token
    # the plain secret is nowhere: not in the page, not in the audit log
    secret_row = stored[1]
    assert secret_row not in page.text
    entry = next(changes for action, changes in audit_actions(tenant) if action == "sso.settings_changed")
    assert entry["client_secret"] == [None, "(changed)"]
    # saved again without a secret: the stored one is kept
    web = tenant.web()
    form = {"name": "Acme ID", "issuer": provider.issuer, "client_id": stored[0], "client_secret": "",
            "scopes": "openid email", "allowed_domains": "acme.test", "default_role": "tester", "enabled": "1"}
    assert web.post("/settings/sign-in", data=form).status_code == 303
    with connect_db(tenant.server.db_path) as db:
        again = db.execute("SELECT client_secret, default_role FROM oidc_providers WHERE tenant_id = ?",
                           (tenant.id,)).fetchone()
    assert again[0] == secret_row and again[1] == "tester"


def test_settings_name_every_wrong_field_and_keep_no_secret_in_the_form(tenant: Tenant, provider: Provider) -> None:
    web = tenant.web()
    response = web.post("/settings/sign-in", data={
        "name": "", "issuer": "ftp://nope", "client_id": "x", "client_secret": "typed-secret-123",
        "scopes": "email profile", "allowed_domains": "not a domain!", "default_role": "owner",
        "group_roles": "tms-admins => boss"})
    assert response.status_code == 400
    for field in ("name", "issuer", "scopes", "allowed_domains", "default_role", "group_roles"):
        assert f'id="f-{field}-error"' in response.text, field
    assert "typed-secret-123" not in response.text
    assert "openid" in text_of(response.text)


def test_settings_are_for_admins_only(tenant: Tenant, provider: Provider) -> None:
    email = _unique("viewer", "example.com")
    add_member(tenant, email, "tester")
    client = httpx.Client(base_url=tenant.server.url, follow_redirects=False)
    client.get("/login")
    token = client.cookies["csrftoken"]
    assert client.post("/login", data={"email": email, "password": "a long password",
                                       "_csrf_token": token}).status_code == 303
    assert client.get("/settings/sign-in").status_code == 403
    assert client.post("/settings/sign-in", data={"name": "x", "_csrf_token": token}).status_code == 403


# ---- signing in -----------------------------------------------------------------------------------------------


def test_sign_in_lands_with_the_role_its_group_maps_to(tenant: Tenant, provider: Provider) -> None:
    configure(tenant, provider, group_roles=GROUP_ROLES, default_role="viewer")
    existing = provider.account(_unique("lead"), groups=["tms-admins", "other"])
    add_member(tenant, existing, "viewer")
    client, response = sign_in(tenant, existing)
    assert response.status_code == 303 and response.headers["location"] == "/", response.text
    home = client.get("/")
    assert home.status_code == 200 and existing in home.text
    assert member(tenant, existing)["role"] == "admin"  # type: ignore[index]
    # the provider now says tester only: the next sign-in follows it
    provider.account(existing, groups=["tms-testers"])
    sign_in(tenant, existing)
    assert member(tenant, existing)["role"] == "tester"  # type: ignore[index]
    actions = audit_actions(tenant)
    assert ("user.role_changed", {"role": ["viewer", "admin"]}) in actions
    assert ("user.role_changed", {"role": ["admin", "tester"]}) in actions
    assert sum(1 for action, _ in actions if action == "sso.signed_in") == 2


def test_first_sign_in_creates_the_user_with_the_default_role(tenant: Tenant, provider: Provider) -> None:
    configure(tenant, provider, default_role="tester", groups_claim="", group_roles="")
    newcomer = provider.account(_unique("newcomer"), groups=["tms-admins"])
    client, response = sign_in(tenant, newcomer, start=f"/auth/oidc/start?tenant={tenant.id}&next=/runs")
    assert response.status_code == 303 and response.headers["location"] == "/runs"
    created = member(tenant, newcomer)
    assert created is not None and created["role"] == "tester"
    assert client.get("/").status_code == 200
    changes = dict(audit_actions(tenant))["sso.user_created"]
    assert changes["email"] == newcomer and changes["role"] == "tester"
    # a new user has no password: it cannot sign in with one
    password = httpx.Client(base_url=tenant.server.url)
    password.get("/login")
    answer = password.post("/login", data={"email": newcomer, "password": "!sso",
                                           "_csrf_token": password.cookies["csrftoken"]})
    assert answer.status_code == 400


def test_new_users_follow_the_groups_mapping(tenant: Tenant, provider: Provider) -> None:
    configure(tenant, provider, group_roles=GROUP_ROLES, default_role="viewer")
    admin = provider.account(_unique("boss"), groups=["tms-testers", "tms-admins"])
    nobody = provider.account(_unique("guest"), groups=["marketing"])
    sign_in(tenant, admin)
    sign_in(tenant, nobody)
    assert member(tenant, admin)["role"] == "admin"  # type: ignore[index]
    assert member(tenant, nobody)["role"] == "viewer"  # type: ignore[index]


def test_without_user_creation_only_members_sign_in(tenant: Tenant, provider: Provider) -> None:
    configure(tenant, provider, create_users=False)
    stranger = provider.account(_unique("stranger"))
    _, response = sign_in(tenant, stranger)
    assert "not a member" in refused(response)
    assert member(tenant, stranger) is None
    assert any(action == "sso.sign_in_refused" and changes["reason"] == "no such member"
               for action, changes in audit_actions(tenant))


def test_the_owner_keeps_the_owner_role_whatever_the_groups(tenant: Tenant, provider: Provider) -> None:
    configure(tenant, provider, allowed_domains="", group_roles=GROUP_ROLES)
    provider.account(tenant.email, groups=["tms-testers"])
    _, response = sign_in(tenant, tenant.email)
    assert response.status_code == 303
    assert member(tenant, tenant.email)["role"] == "owner"  # type: ignore[index]


# ---- what is refused ------------------------------------------------------------------------------------------


def test_a_forged_state_is_refused(tenant: Tenant, provider: Provider) -> None:
    configure(tenant, provider)
    client = httpx.Client(base_url=tenant.server.url, follow_redirects=False)
    answer = client.get("/auth/oidc/callback", params={"state": secrets.token_urlsafe(20), "code": "made-up"})
    assert "unknown, was already used or has expired" in refused(answer)
    assert refused(client.get("/auth/oidc/callback", params={"code": "x"})).count("no state")


def test_a_replayed_state_is_refused(tenant: Tenant, provider: Provider) -> None:
    configure(tenant, provider)
    email = provider.account(_unique("replay"))
    client = httpx.Client(base_url=tenant.server.url, timeout=30, follow_redirects=False)
    callback = to_callback(client, f"{tenant.server.url}/auth/oidc/start?tenant={tenant.id}", email)
    assert client.get(callback).status_code == 303
    again = httpx.Client(base_url=tenant.server.url, cookies=client.cookies, follow_redirects=False)
    assert "already used" in refused(again.get(callback))


def test_a_callback_opened_in_another_browser_is_refused(tenant: Tenant, provider: Provider) -> None:
    configure(tenant, provider)
    email = provider.account(_unique("victim"))
    attacker = httpx.Client(base_url=tenant.server.url, timeout=30, follow_redirects=False)
    callback = to_callback(attacker, f"{tenant.server.url}/auth/oidc/start?tenant={tenant.id}", email)
    victim = httpx.Client(base_url=tenant.server.url, follow_redirects=False)
    assert "another browser" in refused(victim.get(callback))
    assert any(action == "sso.sign_in_refused" and changes["reason"] == "started in another browser"
               for action, changes in audit_actions(tenant))


def _with_param(url: str, name: str, value: str) -> str:
    parts = urlsplit(url)
    query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    query[name] = value
    return urlunsplit(parts._replace(query=urlencode(query)))


def test_a_wrong_nonce_is_refused(tenant: Tenant, provider: Provider) -> None:
    configure(tenant, provider)
    email = provider.account(_unique("nonce"))
    _, response = sign_in(tenant, email, tamper=lambda url: _with_param(url, "nonce", "an-attackers-nonce"))
    assert "nonce" in refused(response)
    assert member(tenant, email) is None


def test_an_unverified_email_is_refused(tenant: Tenant, provider: Provider) -> None:
    configure(tenant, provider)
    email = provider.account(_unique("unverified"), verified=False)
    _, response = sign_in(tenant, email)
    assert "verified addresses only" in refused(response)
    assert member(tenant, email) is None
    assert any(action == "sso.sign_in_refused" and changes["reason"] == "email not verified"
               for action, changes in audit_actions(tenant))


def test_an_email_of_a_domain_not_allowed_is_refused(tenant: Tenant, provider: Provider) -> None:
    configure(tenant, provider, allowed_domains="acme.test")
    email = provider.account(_unique("outsider", "elsewhere.test"))
    _, response = sign_in(tenant, email)
    assert "allowed domains" in refused(response)
    assert member(tenant, email) is None


def test_another_tenants_member_or_id_is_refused(tenant: Tenant, other_tenant: Tenant, provider: Provider) -> None:
    configure(tenant, provider, allowed_domains="")
    # other_tenant's owner signs in through this tenant's provider: the address belongs to another team
    provider.account(other_tenant.email)
    _, response = sign_in(tenant, other_tenant.email)
    assert "belongs to another team" in refused(response)
    assert member(tenant, other_tenant.email) is None
    # a team without single sign-on, and an id that names no team: the same 404 page
    client = httpx.Client(base_url=tenant.server.url, follow_redirects=False)
    for tenant_id in (other_tenant.id, "no-such-tenant"):
        assert "does not sign in with single sign-on" in refused(
            client.get("/auth/oidc/start", params={"tenant": tenant_id}), 404)


def test_a_provider_that_is_down_gets_a_clear_page(tenant: Tenant) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    spare = start_provider()  # only to register a client; the tenant points at a closed port
    try:
        configure(tenant, spare, issuer=down)
    finally:
        spare.stop()
    client = httpx.Client(base_url=tenant.server.url, follow_redirects=False)
    text = refused(client.get("/auth/oidc/start", params={"tenant": tenant.id}), 502)
    assert "cannot be reached" in text and down in text


def test_a_provider_that_goes_down_before_the_callback_gets_a_clear_page(tenant: Tenant) -> None:
    lonely = start_provider()
    try:
        configure(tenant, lonely)
        email = lonely.account(_unique("midway"))
        client = httpx.Client(base_url=tenant.server.url, timeout=30, follow_redirects=False)
        callback = to_callback(client, f"{tenant.server.url}/auth/oidc/start?tenant={tenant.id}", email)
    finally:
        lonely.stop()
    assert "cannot be reached" in refused(client.get(callback), 502)


def test_key_rotation_is_followed_and_a_forged_key_set_refused(tenant: Tenant, other_tenant: Tenant) -> None:
    rotating = start_provider()
    try:
        configure(tenant, rotating)
        first = rotating.account(_unique("before"))
        assert sign_in(tenant, first)[1].status_code == 303  # the server now holds the first key set
        rotating.post("/test/rotate")  # a new signing key; the old one is no longer published
        second = rotating.account(_unique("after"))
        client, response = sign_in(tenant, second)
        assert response.status_code == 303, response.text
        assert client.get("/").status_code == 200
        # the key set now carries other keys under the same key id: the signature cannot verify
        configure(other_tenant, rotating)
        rotating.post("/test/forge-jwks")
        forged = rotating.account(_unique("forged"))
        _, response = sign_in(other_tenant, forged)
        assert "does not verify" in refused(response)
    finally:
        rotating.stop()


# ---- the sign-in page -----------------------------------------------------------------------------------------


def test_the_sign_in_page_offers_each_tenants_provider(tenant: Tenant, other_tenant: Tenant,
                                                       provider: Provider) -> None:
    domain = f"t{secrets.token_hex(4)}.test"
    configure(tenant, provider, name="Acme Okta", allowed_domains=domain)
    configure(other_tenant, provider, name="Globex Keycloak", allowed_domains="")
    client = httpx.Client(base_url=tenant.server.url, follow_redirects=False)
    page = client.get("/login", params={"tenant": tenant.id})
    assert "Sign in with Acme Okta" in text_of(page.text) and "Globex" not in page.text
    assert f'href="/auth/oidc/start?tenant={tenant.id}"' in page.text
    other = client.get("/login", params={"tenant": other_tenant.id, "next": "/runs"})
    assert "Sign in with Globex Keycloak" in text_of(other.text)
    assert f"/auth/oidc/start?tenant={other_tenant.id}&amp;next=/runs" in other.text
    # the work email's domain finds the team
    by_domain = client.get("/login", params={"sso_email": f"someone@{domain}"})
    assert "Sign in with Acme Okta" in text_of(by_domain.text)
    nowhere = client.get("/login", params={"sso_email": "someone@nowhere.test"})
    assert "No team signs in with single sign-on for nowhere.test" in text_of(nowhere.text)
    # the start URL also takes the email, for links from elsewhere
    email = provider.account(_unique("domain", domain))
    _, response = sign_in(tenant, email, start=f"/auth/oidc/start?email={email}")
    assert response.status_code == 303 and member(tenant, email) is not None


# ---- SSO required ---------------------------------------------------------------------------------------------


def test_sso_required_refuses_the_password_of_everyone_but_the_owner(tenant: Tenant, provider: Provider) -> None:
    """The check the password sign-in asks (tms.team.sso.service.password_sign_in_refused)."""
    from tms.team.sso import service

    tester = _unique("checked", "example.com")
    tester_id = add_member(tenant, tester, "tester")
    configure(tenant, provider, sso_required=False)
    assert run_admin(tenant.server.db_path, lambda db: service.password_sign_in_refused(db, tester_id)) is None
    configure(tenant, provider, sso_required=True)
    refusal = run_admin(tenant.server.db_path, lambda db: service.password_sign_in_refused(db, tester_id))
    assert refusal is not None and "Sign in with Acme ID" in refusal
    owner = member(tenant, tenant.email)
    assert owner is not None
    assert run_admin(tenant.server.db_path, lambda db: service.password_sign_in_refused(db, owner["id"])) is None


def test_sso_required_turns_password_sign_in_off_but_for_the_owner(tenant: Tenant, provider: Provider) -> None:
    tester = _unique("tester", "example.com")
    add_member(tenant, tester, "tester")
    configure(tenant, provider, sso_required=True)
    client = httpx.Client(base_url=tenant.server.url, follow_redirects=False)
    client.get("/login")
    answer = client.post("/login", data={"email": tester, "password": "a long password",
                                         "_csrf_token": client.cookies["csrftoken"]})
    assert answer.status_code in (400, 403) and "Sign in with Acme ID" in text_of(answer.text)
    assert client.get("/").status_code == 302  # not signed in
    assert tenant.web().get("/").status_code == 200  # the owner still signs in with the password
    # switched off again: the tester's password works
    configure(tenant, provider, sso_required=False)
    client.get("/login")
    assert client.post("/login", data={"email": tester, "password": "a long password",
                                       "_csrf_token": client.cookies["csrftoken"]}).status_code == 303


def test_nothing_of_the_flow_stays_after_the_callback(tenant: Tenant, provider: Provider) -> None:
    configure(tenant, provider)
    email = provider.account(_unique("tidy"))
    sign_in(tenant, email)
    with connect_db(tenant.server.db_path) as db:
        left = db.execute("SELECT COUNT(*) FROM oidc_logins WHERE tenant_id = ?", (tenant.id,)).fetchone()[0]
    assert left == 0
