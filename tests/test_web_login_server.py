"""Sign-in on real servers: a session and a client's throttle survive a restart, and throttling follows the
client's own address (loopback is a /8: 127.0.0.N is another machine), which only a real socket carries.
The rest of sign-in runs in-process (tests/test_web_login.py)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import Tenant
from tests.test_web_login import _login


def test_session_survives_a_server_restart(start_server) -> None:
    from tests.conftest import make_tenant_on

    server = start_server()
    tenant = make_tenant_on(server)
    client = tenant.web()
    assert client.get("/").status_code == 200
    server.stop()
    server.start()
    assert client.get("/").status_code == 200


def _client_from(server: Any, address: str) -> httpx.Client:
    """A browser on another machine: loopback is a /8, so 127.0.0.N is another client address."""
    return httpx.Client(base_url=server.url, transport=httpx.HTTPTransport(local_address=address))


def test_wrong_passwords_do_not_lock_the_account_for_other_clients(tenant: Tenant) -> None:
    """Five wrong passwords locked the account for everyone: now only that client waits."""
    attacker = _client_from(tenant.server, "127.0.0.2")
    for _ in range(5):
        assert _login(attacker, tenant.email, "wrong-guess").status_code == 400
    assert _login(attacker, tenant.email, tenant.password).status_code == 429
    owner = _client_from(tenant.server, "127.0.0.3")
    assert _login(owner, tenant.email, tenant.password).status_code == 303
    assert tenant.email in owner.get("/").text


@pytest.mark.parametrize("limit", [None, 3])
def test_one_client_failing_on_many_accounts_is_throttled_for_all(start_server: Any, limit: int | None) -> None:
    """The default (20) and a setting (auth.login_failures_per_client), on a server of their own: the
    shared one raises the limit so that tests failing on purpose do not throttle the others."""
    from tests.conftest import make_tenant_on

    server = start_server(env={} if limit is None else {"TMS_AUTH_LOGIN_FAILURES_PER_CLIENT": str(limit)})
    tenant = make_tenant_on(server)
    sprayer = _client_from(server, "127.0.0.4")
    for number in range(limit or 20):
        assert _login(sprayer, f"guess{number}@example.com", "wrong-guess").status_code == 400
    blocked = _login(sprayer, tenant.email, tenant.password)
    assert blocked.status_code == 429 and int(blocked.headers["retry-after"]) > 0
    assert _login(_client_from(server, "127.0.0.5"), tenant.email, tenant.password).status_code == 303


def test_admin_unlock_user_lifts_the_throttle_and_it_survives_a_restart(start_server: Any, tmp_path: Any) -> None:
    from tests.conftest import make_tenant_on, storage_env
    from tests.test_config_cli import tms

    server = start_server()
    tenant = make_tenant_on(server)
    client = _client_from(server, "127.0.0.6")
    for _ in range(5):
        assert _login(client, tenant.email, "wrong-guess").status_code == 400
    server.stop()
    server.start()  # kept in the database: a restart does not reset it
    assert _login(client, tenant.email, tenant.password).status_code == 429
    result = tms("admin", "unlock-user", "--email", tenant.email.upper(), cwd=tmp_path,
                 env=storage_env(server.data_dir))
    assert result.returncode == 0, result.stderr
    assert "5 failed attempts forgotten" in result.stdout
    assert _login(client, tenant.email, tenant.password).status_code == 303
