"""LDAP / Active Directory sign-in (issue 25) against Debian's real slapd: an admin configures the
tenant's directory in Settings, tests the connection, and members sign in with their directory
password — created on first sign-in with the role their groups map to, refused when none maps."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess, Tenant, connect_db, make_tenant_on
from tests.ldap_server import BASE, SERVICE_DN, SERVICE_PASSWORD, Slapd, missing_reason, start_slapd
from tests.web_helpers import text_of

pytestmark = pytest.mark.skipif(missing_reason() is not None, reason=missing_reason() or "")


@pytest.fixture(scope="module")
def slapd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Slapd]:
    server = start_slapd(Path(tmp_path_factory.mktemp("slapd")))
    yield server
    server.stop()


def configure(tenant: Tenant, web: httpx.Client, **fields: str) -> httpx.Response:
    return web.post("/settings/ldap", data={"_csrf_token": web.cookies.get("csrftoken", ""), **fields})


def template_settings(slapd: Slapd, **overrides: str) -> dict[str, str]:
    return {"enabled": "1", "url": slapd.ldap_url, "start_tls": "1", "ca_cert": slapd.ca_pem,
            "user_dn_template": f"uid={{username}},ou=people,{BASE}", "group_base": f"ou=groups,{BASE}",
            "group_role_map": "tms-admins = admin\ncn=qa,ou=groups,dc=example,dc=org = tester\n",
            "default_role": "", **overrides}


_ADDRESSES = itertools.cycle(range(10, 250))


def sign_in(tenant: Tenant, username: str, password: str) -> tuple[httpx.Client, httpx.Response]:
    # each sign-in from a loopback address of its own (127.0.0.0/8): failed binds count against the
    # client like failed passwords, and must not throttle the shared server's other tests (127.0.0.1)
    client = httpx.Client(base_url=tenant.server.url, timeout=30, follow_redirects=False,
                          transport=httpx.HTTPTransport(local_address=f"127.0.{next(_ADDRESSES)}.1"))
    page = client.get("/auth/ldap", params={"tenant": tenant.id})
    assert page.status_code == 200, page.text
    response = client.post("/auth/ldap", data={"tenant": tenant.id, "username": username, "password": password,
                                              "next": "/", "_csrf_token": client.cookies.get("csrftoken", "")})
    return client, response


def member_by_email(tenant: Tenant, email: str) -> dict[str, Any] | None:
    users = tenant.api.get("/api/v1/users").json()["data"]
    return next((u for u in users if u["email"] == email), None)


def test_starttls_bind_creates_members_with_their_groups_role(tenant: Tenant, slapd: Slapd) -> None:
    web = tenant.web()
    tested = web.post("/settings/ldap/test", data={"_csrf_token": web.cookies.get("csrftoken", ""),
                                                   **template_settings(slapd)})
    assert tested.status_code == 200
    assert "Connected (StartTLS, anonymous bind)." in text_of(tested.text)
    assert configure(tenant, web, **template_settings(slapd)).status_code == 303

    alice, tom = slapd.people["alice"], slapd.people["tom"]
    client, response = sign_in(tenant, "alice", alice.password)
    assert response.status_code == 303, response.text
    assert client.get("/").status_code == 200  # signed in
    account = member_by_email(tenant, alice.email or "")
    assert account is not None and (account["role"], account["name"]) == ("admin", "Alice Admin")
    _, response = sign_in(tenant, "tom", tom.password)
    assert response.status_code == 303
    assert member_by_email(tenant, tom.email or "")["role"] == "tester"  # type: ignore[index]  # matched by DN
    # a second sign-in finds the same account
    _, response = sign_in(tenant, "alice", alice.password)
    assert response.status_code == 303
    assert len([u for u in tenant.api.get("/api/v1/users").json()["data"] if u["email"] == alice.email]) == 1
    # the directory password is not a TMS password
    login = httpx.Client(base_url=tenant.server.url)
    login.get("/login")
    assert login.post("/login", data={"email": alice.email, "password": alice.password,
                                      "_csrf_token": login.cookies.get("csrftoken", "")}).status_code == 400

    entries = tenant.api.get("/api/v1/audit", params={"limit": 100}).json()["data"]
    created = [e for e in entries if e["action"] == "user.created" and e["changes"].get("method") == "ldap"]
    assert {e["changes"]["email"] for e in created} == {alice.email, tom.email}
    assert any(e["action"] == "user.signed_in" for e in entries)


@pytest.mark.parametrize(("username", "password", "status", "message"), [
    ("alice", "wrong password", 400, "Wrong username or password."),
    ("alice", "", 400, "Wrong username or password."),  # an empty password would be an anonymous bind
    ("nobody", "whatever-1", 400, "Wrong username or password."),
    ("nina", "nina-password-1", 403, "None of your directory groups gives access to this team"),
    ("ghost", "ghost-password-1", 403, "Your directory entry has no email address"),
    ("*", "alice-password-1", 400, "Wrong username or password."),
])
def test_refusals_are_clear_and_audited(tenant: Tenant, slapd: Slapd, username: str, password: str, status: int,
                                        message: str) -> None:
    assert configure(tenant, tenant.web(), **template_settings(slapd)).status_code == 303
    client, response = sign_in(tenant, username, password)
    assert response.status_code == status, response.text
    assert message in text_of(response.text)
    assert client.get("/").headers.get("location", "").startswith("/login")  # not signed in
    failures = [e for e in tenant.api.get("/api/v1/audit", params={"action": "user.sign_in_failed"}).json()["data"]]
    assert failures and failures[0]["changes"]["method"] == "ldap"
    assert password not in str(failures) or not password


def test_a_default_role_admits_members_no_group_maps(tenant: Tenant, slapd: Slapd) -> None:
    assert configure(tenant, tenant.web(), **template_settings(slapd, default_role="viewer")).status_code == 303
    _, response = sign_in(tenant, "nina", slapd.people["nina"].password)
    assert response.status_code == 303, response.text
    assert member_by_email(tenant, slapd.people["nina"].email or "")["role"] == "viewer"  # type: ignore[index]


def test_ldaps_with_a_service_bind_search_and_a_write_only_password(tenant: Tenant, slapd: Slapd) -> None:
    web = tenant.web()
    settings = template_settings(slapd, url=slapd.ldaps_url, user_dn_template="", search_base=f"ou=people,{BASE}",
                                 search_filter="(uid={username})", bind_dn=SERVICE_DN, bind_password=SERVICE_PASSWORD)
    assert configure(tenant, web, **settings).status_code == 303
    page = web.get("/settings/ldap")
    assert SERVICE_PASSWORD not in page.text and "A password is stored" in text_of(page.text)
    # the test button uses the stored password when the field is left empty
    tested = web.post("/settings/ldap/test", data={"_csrf_token": web.cookies.get("csrftoken", ""),
                                                   **{**settings, "bind_password": ""}})
    assert "Connected (LDAPS, bound as cn=tms-service,dc=example,dc=org)" in text_of(tested.text)
    _, response = sign_in(tenant, "o'brien", slapd.people["o'brien"].password)  # a quote in the name is escaped
    assert response.status_code == 303, response.text
    assert member_by_email(tenant, slapd.people["o'brien"].email or "")["role"] == "tester"  # type: ignore[index]
    entry = tenant.api.get("/api/v1/audit", params={"action": "ldap.settings_updated"}).json()["data"][0]
    assert entry["changes"]["bind_password"] == "(changed)" and SERVICE_PASSWORD not in str(entry)
    assert SERVICE_PASSWORD not in tenant.server.log()
    # a wrong service password is named by the test button
    tested = web.post("/settings/ldap/test", data={"_csrf_token": web.cookies.get("csrftoken", ""),
                                                   **{**settings, "bind_password": "not it"}})
    assert "The service account's bind DN or password was refused." in text_of(tested.text)


def test_connection_problems_are_named(tenant: Tenant, slapd: Slapd) -> None:
    web = tenant.web()
    token = web.cookies.get("csrftoken", "")
    untrusted = web.post("/settings/ldap/test", data={"_csrf_token": token, **template_settings(slapd, ca_cert="")})
    assert "StartTLS failed" in text_of(untrusted.text) and "certificate verify failed" in text_of(untrusted.text)
    down = web.post("/settings/ldap/test", data={"_csrf_token": token,
                                                 **template_settings(slapd, url="ldap://127.0.0.1:1")})
    assert "Could not connect" in text_of(down.text)
    bad = configure(tenant, web, **template_settings(slapd, url="http://example.org", user_dn_template="uid=x"))
    assert bad.status_code == 400
    assert 'id="f-url-error"' in bad.text and 'id="f-user_dn_template-error"' in bad.text
    # a directory that is down is a clear page at sign-in, not a 500
    assert configure(tenant, web, **template_settings(slapd, url="ldap://127.0.0.1:1")).status_code == 303
    _, response = sign_in(tenant, "alice", slapd.people["alice"].password)
    assert response.status_code == 502 and "cannot be reached" in text_of(response.text)


def test_sign_in_is_per_tenant_and_off_until_enabled(tenant: Tenant, other_tenant: Tenant, slapd: Slapd) -> None:
    assert configure(tenant, tenant.web(), **template_settings(slapd, enabled="")).status_code == 303
    _, response = sign_in(tenant, "alice", slapd.people["alice"].password)
    assert response.status_code == 400 and "does not sign in with LDAP" in text_of(response.text)
    assert configure(other_tenant, other_tenant.web(), **template_settings(slapd)).status_code == 303
    _, response = sign_in(other_tenant, "carol", slapd.people["carol"].password)
    assert response.status_code == 303
    assert member_by_email(tenant, slapd.people["carol"].email or "") is None
    assert member_by_email(other_tenant, slapd.people["carol"].email or "") is not None
    # her address now has an account in the other tenant: this tenant refuses it
    assert configure(tenant, tenant.web(), **template_settings(slapd)).status_code == 303
    _, response = sign_in(tenant, "carol", slapd.people["carol"].password)
    assert response.status_code == 403 and "cannot sign in here" in text_of(response.text)


# ---- the service account's password at rest ---------------------------------------------------------------


def _stored(server: ServerProcess, tenant_id: str) -> tuple[str, str]:
    with connect_db(server.db_path) as db:
        row = db.execute("SELECT bind_password, bind_password_sealed FROM ldap_settings WHERE tenant_id = ?",
                         (tenant_id,)).fetchone()
    return str(row[0]), str(row[1])


def _search_settings(slapd: Slapd, **overrides: str) -> dict[str, str]:
    return template_settings(slapd, **{"url": slapd.ldaps_url, "user_dn_template": "",
                                       "search_base": f"ou=people,{BASE}", "search_filter": "(uid={username})",
                                       "bind_dn": SERVICE_DN, **overrides})


def _password_changes(tenant: Tenant) -> list[Any]:
    entries = tenant.api.get("/api/v1/audit", params={"action": "ldap.settings_updated"}).json()["data"]
    return [entry["changes"].get("bind_password") for entry in entries]  # newest first


def test_the_bind_password_is_stored_encrypted_and_write_only(tenant: Tenant, slapd: Slapd) -> None:
    web = tenant.web()
    assert configure(tenant, web, **_search_settings(slapd, bind_password=SERVICE_PASSWORD)).status_code == 303
    plain, sealed = _stored(tenant.server, tenant.id)
    assert plain == "" and sealed.startswith("gAAAA") and SERVICE_PASSWORD not in sealed  # a Fernet token
    # the test button binds with the stored password, decrypted
    tested = web.post("/settings/ldap/test", data={"_csrf_token": web.cookies.get("csrftoken", ""),
                                                   **_search_settings(slapd, bind_password="")})
    assert "bound as cn=tms-service" in text_of(tested.text)
    # saved again with the field empty: the stored password is kept as it is
    assert configure(tenant, web, **_search_settings(slapd, bind_password="")).status_code == 303
    assert _stored(tenant.server, tenant.id) == ("", sealed)
    # typed again, the same: sealed anew, and not a change in the log
    assert configure(tenant, web, **_search_settings(slapd, bind_password=SERVICE_PASSWORD)).status_code == 303
    assert _stored(tenant.server, tenant.id)[1] not in ("", sealed)
    # a 400 does not echo a typed password back into the page
    bad = configure(tenant, web, **_search_settings(slapd, url="http://nope", bind_password="typed-but-bad-1"))
    assert bad.status_code == 400 and "typed-but-bad-1" not in bad.text
    assert configure(tenant, web, **_search_settings(slapd, clear_bind_password="1")).status_code == 303
    assert _stored(tenant.server, tenant.id) == ("", "")
    assert _password_changes(tenant) == ["(removed)", None, None, "(changed)"]
    assert SERVICE_PASSWORD not in tenant.server.log()


def test_passwords_stored_in_clear_before_are_encrypted_at_start(start_server: Any, slapd: Slapd) -> None:
    server = start_server()
    tenant = make_tenant_on(server)
    assert configure(tenant, tenant.web(), **_search_settings(slapd, bind_password=SERVICE_PASSWORD)
                     ).status_code == 303
    # the row as a release before migration 0042 left it: the password in clear
    with connect_db(server.db_path) as db:
        db.execute("UPDATE ldap_settings SET bind_password = ?, bind_password_sealed = '' WHERE tenant_id = ?",
                   (SERVICE_PASSWORD, tenant.id))
        db.commit()
    assert sign_in(tenant, "o'brien", slapd.people["o'brien"].password)[1].status_code == 303  # read as it is
    assert "A password is stored" in text_of(tenant.web().get("/settings/ldap").text)
    server.stop()
    server.start()
    plain, sealed = _stored(server, tenant.id)
    assert plain == "" and sealed.startswith("gAAAA")
    assert "encrypted 1 LDAP service account password" in server.log()
    assert sign_in(tenant, "o'brien", slapd.people["o'brien"].password)[1].status_code == 303
    server.stop()
    server.start()  # nothing left to do: the sealed value stays as it is
    assert _stored(server, tenant.id) == ("", sealed)
    assert server.log().count("encrypted 1 LDAP service account password") == 1
    assert SERVICE_PASSWORD not in server.log()

    # another master key cannot read it: the admin is told to enter it again, the sign-in is a clear page
    server.stop()
    server.env["TMS_AUTH_SECRET_KEY"] = "another master key than before"
    server.start()
    web = tenant.web()
    tested = web.post("/settings/ldap/test", data={"_csrf_token": web.cookies.get("csrftoken", ""),
                                                   **_search_settings(slapd, bind_password="")})
    assert "cannot be read with this server's key" in text_of(tested.text)
    _, response = sign_in(tenant, "o'brien", slapd.people["o'brien"].password)
    assert response.status_code == 502
    failed = tenant.api.get("/api/v1/audit", params={"action": "user.sign_in_failed"}).json()["data"][0]
    assert "cannot be read with this server's key" in failed["changes"]["reason"]
    # typed again, it works
    assert configure(tenant, web, **_search_settings(slapd, bind_password=SERVICE_PASSWORD)).status_code == 303
    assert sign_in(tenant, "o'brien", slapd.people["o'brien"].password)[1].status_code == 303
