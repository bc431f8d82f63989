"""Sign-in, sign-out, CSRF, throttling and first-run setup over HTTP, as a browser would do them, in-process
(tests/inprocess.py). Restarts and the client's own address (another machine's failures) need a server
process: tests/test_web_login_server.py."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import Tenant, connect_db

IN_PROCESS = True


def _login(client: httpx.Client, email: str, password: str, **extra: str) -> httpx.Response:
    client.get("/login")
    return client.post(
        "/login",
        data={"email": email, "password": password, "_csrf_token": client.cookies.get("csrftoken", ""), **extra},
    )


def test_login_sets_a_safe_session_cookie_and_logout_ends_it(tenant: Tenant) -> None:
    client = tenant.server.http_client()
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
    wrong = _login(tenant.server.http_client(), tenant.email, "nope-nope")
    unknown = _login(tenant.server.http_client(), "ghost@example.com", "nope-nope")
    assert wrong.status_code == unknown.status_code == 400
    assert "Wrong email or password" in wrong.text and "Wrong email or password" in unknown.text
    assert "user_id" not in wrong.text


def test_login_without_csrf_token_is_refused(tenant: Tenant) -> None:
    client = tenant.server.http_client()
    client.get("/login")
    response = client.post("/login", data={"email": tenant.email, "password": tenant.password})
    assert response.status_code == 403
    assert client.get("/").status_code == 302


def test_repeated_failures_are_throttled_with_retry_after(tenant: Tenant) -> None:
    client = tenant.server.http_client()
    statuses = [_login(client, tenant.email, "wrong-guess").status_code for _ in range(5)]
    assert statuses == [400] * 5
    blocked = _login(client, tenant.email, tenant.password)
    assert blocked.status_code == 429
    assert int(blocked.headers["retry-after"]) > 0


def test_next_parameter_only_redirects_within_the_site(tenant: Tenant) -> None:
    client = tenant.server.http_client()
    response = _login(client, tenant.email, tenant.password, next="//evil.example/phish")
    assert response.headers["location"] == "/"
    client2 = tenant.server.http_client()
    response = _login(client2, tenant.email, tenant.password, next="/projects")
    assert response.headers["location"] == "/projects"


def test_first_run_setup_creates_tenant_and_admin(start_app) -> None:
    server = start_app()
    client = server.http_client()
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
    assert server.http_client().get("/api/v1/me").status_code == 401


def test_api_answers_as_usual_before_setup(start_app) -> None:
    server = start_app()
    assert server.http_client().get("/api/v1/projects").status_code == 401


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
        client = tenant.server.http_client()
        page = client.get("/login")
        assert page.status_code == 200 and client.cookies.get("csrftoken")
        assert "tms_session" not in client.cookies
        failed = _login(client, tenant.email, "wrong-guess-" + str(_))
        assert failed.status_code == 400 and "tms_session" not in client.cookies
    assert _session_rows(tenant.server) == before


def test_a_session_id_chosen_before_login_is_not_the_one_after(tenant: Tenant, other_tenant: Tenant) -> None:
    """Session fixation: an id planted in the browser before sign-in must not become the session."""
    planted = "a" * 64
    client = tenant.server.http_client()
    client.cookies.set("tms_session", planted, domain="127.0.0.1")
    response = _login(client, tenant.email, tenant.password)
    assert response.status_code == 303
    assert _set_session_id(response) not in (None, "", planted, "null")
    assert client.cookies["tms_session"] == _set_session_id(response)
    assert client.get("/").status_code == 200
    stranger = tenant.server.http_client(cookies={"tms_session": planted})
    assert stranger.get("/").status_code == 302

    # an attacker's own valid session planted in a victim's browser: signing in replaces it
    attacker = other_tenant.web()
    attacker_id = attacker.cookies["tms_session"]
    victim = tenant.server.http_client()
    victim.cookies.set("tms_session", attacker_id, domain="127.0.0.1")
    response = _login(victim, tenant.email, tenant.password)
    assert response.status_code == 303
    assert _set_session_id(response) not in (None, attacker_id)
    assert tenant.email in victim.get("/").text
    # the replaced session is gone, not merely unused
    assert tenant.server.http_client(cookies={"tms_session": attacker_id}).get("/").status_code == 302


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
