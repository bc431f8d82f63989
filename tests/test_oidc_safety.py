"""OpenID Connect's "bad input and safety" list (issue 25) beyond tests/test_oidc.py: an expired ID token,
a slow provider, another team's domain, and that every refusal is an audit entry with no secret in it
or in the server's log. Against the same real provider (tests/oidc/provider.js)."""

from __future__ import annotations

import secrets
import socket
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.conftest import Tenant
from tests.test_oidc import (
    Provider,
    _with_param,
    audit_actions,
    configure,
    member,
    refused,
    sign_in,
    start_provider,
    to_callback,
)


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    started = start_provider()
    yield started
    started.stop()


def _unique(local: str, domain: str = "acme.test") -> str:
    return f"{local}-{secrets.token_hex(4)}@{domain}"


def _refusals(tenant: Tenant) -> list[str]:
    return [str(changes["reason"]) for action, changes in audit_actions(tenant) if action == "sso.sign_in_refused"]


def test_an_expired_id_token_is_refused_and_audited(tenant: Tenant) -> None:
    late = start_provider()  # its clock is moved: a provider of its own
    try:
        configure(tenant, late)
        email = late.account(_unique("late"))
        client = httpx.Client(base_url=tenant.server.url, timeout=30, follow_redirects=False)
        callback = to_callback(client, f"{tenant.server.url}/auth/oidc/start?tenant={tenant.id}", email)
        # the provider's clock two hours behind: the ID token it issues now expired an hour ago
        late.post("/test/clock", {"offset_seconds": -7200})
        text = refused(client.get(callback))
    finally:
        late.stop()
    assert "does not verify" in text and "expired" in text.lower()
    assert member(tenant, email) is None
    assert any(reason.startswith("the ID token does not verify") for reason in _refusals(tenant))


class _Silent:
    """A provider that accepts connections and never answers."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.held: list[socket.socket] = []
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.held.append(connection)

    def close(self) -> None:
        self.socket.close()
        for connection in self.held:
            connection.close()


def test_a_slow_provider_times_out_with_a_clear_page(tenant: Tenant, provider: Provider) -> None:
    silent = _Silent()
    try:
        configure(tenant, provider, issuer=silent.url)
        client = httpx.Client(base_url=tenant.server.url, timeout=60, follow_redirects=False)
        # the server gives up after its 10 s per request to the provider, and says so
        text = refused(client.get("/auth/oidc/start", params={"tenant": tenant.id}), 502)
        # meanwhile the server kept answering others (the wait is an await, not a blocked loop)
        assert httpx.get(f"{tenant.server.url}/healthz", timeout=5).status_code == 200
    finally:
        silent.close()
    assert "cannot be reached" in text and "Timeout" in text
    assert "provider unavailable" in _refusals(tenant)


def test_a_first_sign_in_with_another_teams_domain_creates_no_account(tenant: Tenant, other_tenant: Tenant,
                                                                      provider: Provider) -> None:
    domain = f"globex-{secrets.token_hex(4)}.test"
    configure(other_tenant, provider, allowed_domains=domain)
    configure(tenant, provider, allowed_domains="")  # any verified address... that no other team lists
    outsider = provider.account(_unique("outsider", domain))
    _, response = sign_in(tenant, outsider)
    assert "belong to another team" in refused(response)
    assert member(tenant, outsider) is None
    assert "email domain of another team" in _refusals(tenant)
    # the team that lists the domain signs the same person in
    assert sign_in(other_tenant, outsider)[1].status_code == 303
    assert member(other_tenant, outsider) is not None
    # and an address of a domain nobody lists still signs in to the team that takes any address
    anyone = provider.account(_unique("anyone", f"free-{secrets.token_hex(4)}.test"))
    assert sign_in(tenant, anyone)[1].status_code == 303


def test_refusals_are_audited_and_no_secret_is_logged(tenant: Tenant, provider: Provider) -> None:
    client_id, client_secret = provider.client_for(tenant.server)
    web = tenant.web()
    assert web.post("/settings/sign-in", data={
        "name": "Acme ID", "issuer": provider.issuer, "client_id": client_id, "client_secret": client_secret,
        "scopes": "openid email profile groups", "allowed_domains": "acme.test", "default_role": "viewer",
        "enabled": "1", "create_users": "1"}).status_code == 303
    codes: list[str] = []
    # a wrong nonce, an address of a domain not allowed, a good sign-in: each callback's code noted
    for login, tamper in ((provider.account(_unique("nonce")), lambda url: _with_param(url, "nonce", "forged")),
                          (provider.account(_unique("outside", "elsewhere.test")), None),
                          (provider.account(_unique("fine")), None)):
        client = httpx.Client(base_url=tenant.server.url, timeout=30, follow_redirects=False)
        callback = to_callback(client, f"{tenant.server.url}/auth/oidc/start?tenant={tenant.id}", login,
                               tamper=tamper)
        codes.append(parse_qs(urlsplit(callback).query)["code"][0])
        client.get(callback)
    reasons = _refusals(tenant)
    assert any(reason.startswith("the ID token does not verify") and "nonce" in reason for reason in reasons)
    assert "email domain not allowed" in reasons
    # neither the client secret nor a code reaches the log, the audit log or a page
    entries: Any = tenant.api.get("/api/v1/audit", params={"limit": 100}).json()["data"]
    log = tenant.server.log()
    for secret in (client_secret, *codes):
        assert secret not in log and secret not in str(entries)
    assert client_secret not in web.get("/settings/sign-in").text
