"""Sign-in, sign-out, CSRF, throttling and first-run setup over HTTP, as a browser would do them."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import Tenant, connect_db


def _login(client: httpx.Client, email: str, password: str, **extra: str) -> httpx.Response:
    client.get("/login")
    return client.post(
        "/login",
        data={"email": email, "password": password, "_csrf_token": client.cookies.get("csrftoken", ""), **extra},
    )


def test_login_sets_a_safe_session_cookie_and_logout_ends_it(tenant: Tenant) -> None:
    client = httpx.Client(base_url=tenant.server.url)
    assert client.get("/").status_code == 302
    response = _login(client, tenant.email, tenant.password)
    assert response.status_code == 303 and response.headers["location"] == "/"
    cookie = next(h for h in response.headers.get_list("set-cookie") if h.startswith("tms_session="))
    assert "httponly" in cookie.lower() and "samesite=lax" in cookie.lower()
    home = client.get("/")
    assert home.status_code == 200 and tenant.email in home.text
    out = client.post("/logout", data={"_csrf_token": client.cookies["csrftoken"]})
    assert out.status_code == 303
    assert client.get("/").status_code == 302


def test_wrong_password_and_unknown_email_look_the_same(tenant: Tenant) -> None:
    wrong = _login(httpx.Client(base_url=tenant.server.url), tenant.email, "nope-nope")
    unknown = _login(httpx.Client(base_url=tenant.server.url), "ghost@example.com", "nope-nope")
    assert wrong.status_code == unknown.status_code == 400
    assert "Wrong email or password" in wrong.text and "Wrong email or password" in unknown.text
    assert "user_id" not in wrong.text


def test_login_without_csrf_token_is_refused(tenant: Tenant) -> None:
    client = httpx.Client(base_url=tenant.server.url)
    client.get("/login")
    response = client.post("/login", data={"email": tenant.email, "password": tenant.password})
    assert response.status_code == 403
    assert client.get("/").status_code == 302


def test_repeated_failures_are_throttled_with_retry_after(tenant: Tenant) -> None:
    client = httpx.Client(base_url=tenant.server.url)
    statuses = [_login(client, tenant.email, "wrong-guess").status_code for _ in range(5)]
    assert statuses == [400] * 5
    blocked = _login(client, tenant.email, tenant.password)
    assert blocked.status_code == 429
    assert int(blocked.headers["retry-after"]) > 0


def test_next_parameter_only_redirects_within_the_site(tenant: Tenant) -> None:
    client = httpx.Client(base_url=tenant.server.url)
    response = _login(client, tenant.email, tenant.password, next="//evil.example/phish")
    assert response.headers["location"] == "/"
    client2 = httpx.Client(base_url=tenant.server.url)
    response = _login(client2, tenant.email, tenant.password, next="/projects")
    assert response.headers["location"] == "/projects"


def test_session_survives_a_server_restart(start_server) -> None:
    from tests.conftest import make_tenant_on

    server = start_server()
    tenant = make_tenant_on(server)
    client = tenant.web()
    assert client.get("/").status_code == 200
    server.stop()
    server.start()
    assert client.get("/").status_code == 200


def test_first_run_setup_creates_tenant_and_admin(start_server) -> None:
    server = start_server()
    client = httpx.Client(base_url=server.url)
    assert client.get("/").headers["location"] == "/setup"
    assert client.get("/login").headers["location"] == "/setup"
    token = server.setup_token()
    assert token, server.log()
    page = client.get("/setup")
    assert "setup link" in page.text  # without the token: explains where to find it
    csrf = client.cookies["csrftoken"]
    refused = client.post("/setup", data={"token": "wrong", "tenant_name": "QA", "email": "a@b.co",
                                          "password": "longenough", "_csrf_token": csrf})
    assert refused.status_code == 403
    invalid = client.post("/setup", data={"token": token, "tenant_name": "QA", "email": "a@b.co",
                                          "password": "short", "_csrf_token": csrf})
    assert invalid.status_code == 400 and "at least 8" in invalid.text and 'value="a@b.co"' in invalid.text
    done = client.post("/setup", data={"token": token, "tenant_name": "QA Team", "email": "lead@qa.test",
                                       "password": "longenough", "_csrf_token": csrf})
    assert done.status_code == 303 and done.headers["location"] == "/"
    assert "QA Team" in client.get("/").text
    # setup is over: the link no longer works and the API answers as usual
    assert client.get(f"/setup?token={token}").headers["location"] == "/login"
    assert httpx.get(f"{server.url}/api/v1/me").status_code == 401


def test_api_answers_as_usual_before_setup(start_server) -> None:
    server = start_server()
    assert httpx.get(f"{server.url}/api/v1/projects").status_code == 401


def _session_rows(server: Any) -> int:
    with connect_db(server.db_path) as conn:
        count = conn.execute("SELECT COUNT(*) FROM web_sessions").fetchone()[0]
    conn.close()
    return int(count)


def _set_session_id(response: httpx.Response) -> str | None:
    for header in response.headers.get_list("set-cookie"):
        if header.startswith("tms_session="):
            return header.split(";", 1)[0].split("=", 1)[1]
    return None


def test_anonymous_visits_store_no_session(tenant: Tenant) -> None:
    """Every anonymous GET /login wrote a 14-day row into web_sessions; CSRF has its own cookie."""
    before = _session_rows(tenant.server)
    for _ in range(3):
        client = httpx.Client(base_url=tenant.server.url)
        page = client.get("/login")
        assert page.status_code == 200 and client.cookies.get("csrftoken")
        assert "tms_session" not in client.cookies
        failed = _login(client, tenant.email, "wrong-guess-" + str(_))
        assert failed.status_code == 400 and "tms_session" not in client.cookies
    assert _session_rows(tenant.server) == before


def test_a_session_id_chosen_before_login_is_not_the_one_after(tenant: Tenant, other_tenant: Tenant) -> None:
    """Session fixation: an id planted in the browser before sign-in must not become the session."""
    planted = "a" * 64
    client = httpx.Client(base_url=tenant.server.url)
    client.cookies.set("tms_session", planted, domain="127.0.0.1")
    response = _login(client, tenant.email, tenant.password)
    assert response.status_code == 303
    assert _set_session_id(response) not in (None, "", planted, "null")
    assert client.cookies["tms_session"] == _set_session_id(response)
    assert client.get("/").status_code == 200
    stranger = httpx.Client(base_url=tenant.server.url, cookies={"tms_session": planted})
    assert stranger.get("/").status_code == 302

    # an attacker's own valid session planted in a victim's browser: signing in replaces it
    attacker = other_tenant.web()
    attacker_id = attacker.cookies["tms_session"]
    victim = httpx.Client(base_url=tenant.server.url)
    victim.cookies.set("tms_session", attacker_id, domain="127.0.0.1")
    response = _login(victim, tenant.email, tenant.password)
    assert response.status_code == 303
    assert _set_session_id(response) not in (None, attacker_id)
    assert tenant.email in victim.get("/").text
    # the replaced session is gone, not merely unused
    assert httpx.Client(base_url=tenant.server.url, cookies={"tms_session": attacker_id}).get("/").status_code == 302


def test_signing_in_again_issues_a_new_session_id(tenant: Tenant) -> None:
    client = tenant.web()
    first = client.cookies["tms_session"]
    # /login redirects a signed-in user; POST /login still signs in afresh
    response = client.post("/login", data={"email": tenant.email, "password": tenant.password,
                                           "_csrf_token": client.cookies.get("csrftoken", "")})
    assert response.status_code == 303
    assert _set_session_id(response) not in (None, first)
    assert client.get("/").status_code == 200


def test_page_views_do_not_rewrite_the_session(tenant: Tenant) -> None:
    client = tenant.web()
    for _ in range(3):
        page = client.get("/")
        assert page.status_code == 200
        assert not any(h.startswith("tms_session=") for h in page.headers.get_list("set-cookie"))


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
