"""Two-factor sign-in (issue 25): TOTP enrolment with a QR code, sign-in with a code computed by pyotp
from the seed the page shows, replay refused, recovery codes single use, brute force throttled, the
tenant switch, the admin reset (audited), the seed encrypted at rest; and the [auth] session settings."""

from __future__ import annotations

import re
import stat
import time
from html import unescape
from typing import Any

import httpx
import pyotp
import pytest

from tests import postgres_cluster
from tests.conftest import ServerProcess, Tenant, connect_db, make_tenant_on
from tests.inprocess import InProcessServer
from tests.team_helpers import add_member
from tests.web_helpers import every_post_form_has_csrf, text_of

IN_PROCESS = True  # tests/inprocess.py; the [auth] settings get a module app of their own


def _client(tenant: Tenant) -> httpx.Client:
    client = tenant.server.http_client(timeout=30, follow_redirects=False)
    client.get("/login")
    client.headers["x-csrftoken"] = client.cookies.get("csrftoken") or ""
    return client


def password_step(tenant: Tenant, email: str, password: str) -> tuple[httpx.Client, str]:
    """A browser past the password step, and where that step sent it."""
    client = _client(tenant)
    response = client.post("/login", data={"email": email, "password": password})
    assert response.status_code == 303, response.text
    return client, response.headers["location"]


def enrol(web: httpx.Client) -> tuple[str, list[str]]:
    """Turns two-factor on through the pages; returns the seed (as shown) and the recovery codes."""
    assert web.post("/account/2fa/start").status_code == 303
    page = web.get("/account/2fa")
    assert page.status_code == 200
    seed = re.search(r'id="totp-seed">([A-Z2-7]+)<', page.text).group(1)
    uri = unescape(re.search(r'id="totp-uri">([^<]+)<', page.text).group(1))
    assert uri.startswith("otpauth://totp/") and f"secret={seed}" in uri and "issuer=TMS" in uri
    assert "<svg" in page.text and "<img" not in page.text  # the QR code is inline SVG, no external asset
    assert page.headers["cache-control"] == "no-store"
    code = pyotp.TOTP(seed).now()
    confirmed = web.post("/account/2fa/confirm", data={"code": code})
    assert confirmed.status_code == 200, confirmed.text
    codes = re.findall(r"<li><code>([a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4})</code></li>", confirmed.text)
    assert len(codes) == 10 and len(set(codes)) == 10
    assert confirmed.headers["cache-control"] == "no-store"
    CONFIRMED_WITH[seed] = code
    return seed, codes


# seed -> the code that confirmed it (a replay test sends it again: the time step may have moved on since)
CONFIRMED_WITH: dict[str, str] = {}


def next_code(seed: str) -> str:
    """A code of the next time step: accepted (one step of drift either side), and never the one just used."""
    return pyotp.TOTP(seed).at(time.time(), counter_offset=1)


def wrong_code(seed: str) -> str:
    totp, now = pyotp.TOTP(seed), time.time()
    valid = {totp.at(now, counter_offset=offset) for offset in range(-2, 3)}
    return next(f"{n:06d}" for n in range(1000000) if f"{n:06d}" not in valid)


def second_step(client: httpx.Client, code: str) -> httpx.Response:
    return client.post("/login/two-factor", data={"code": code, "next": "/runs"})


def audit(tenant: Tenant, action: str) -> list[dict[str, Any]]:
    response = tenant.api.get("/api/v1/audit", params={"action": action})
    assert response.status_code == 200, response.text
    return response.json()["data"]


def test_enrol_then_sign_in_asks_for_the_code_and_refuses_a_replay(tenant: Tenant) -> None:
    web = tenant.web()
    page = web.get("/account/2fa")
    assert "Two-factor is off" in text_of(page.text) and every_post_form_has_csrf(page.text)
    assert web.post("/account/2fa/start").status_code == 303
    wrong = web.post("/account/2fa/confirm", data={"code": "12345"})
    assert wrong.status_code == 400 and "not right" in text_of(wrong.text)
    seed, _ = enrol(web)
    assert "Two-factor is on" in text_of(web.get("/account/2fa").text)  # the enrolling session stays signed in

    # the password alone signs nothing in: every page sends the session to the second step
    half, half_went = password_step(tenant, tenant.email, tenant.password)
    assert half_went.startswith("/login/two-factor")
    for path in ("/", "/runs", "/account", "/settings/team"):
        response = half.get(path)
        assert response.status_code in (302, 303) and response.headers["location"].startswith("/login/two-factor")
    assert half.get("/login/two-factor").status_code == 200

    # the confirmation's code cannot sign in again: a replay (within its drift window; asking for the
    # current step's code instead passed the check whenever a slow run crossed a 30-second step)
    replayed = second_step(half, CONFIRMED_WITH[seed])
    assert replayed.status_code == 400 and "already used" in text_of(replayed.text)
    code = next_code(seed)
    done = second_step(half, code)
    assert done.status_code == 303 and done.headers["location"] == "/runs"
    assert half.get("/runs").status_code == 200

    # the same code from another browser, within its window: refused
    other, _ = password_step(tenant, tenant.email, tenant.password)
    again = second_step(other, code)
    assert again.status_code == 400 and "already used" in text_of(again.text)
    assert other.get("/runs").status_code in (302, 303)

    assert [e["changes"]["method"] for e in audit(tenant, "user.two_factor_enrolled")] == ["totp"]
    failures = audit(tenant, "user.two_factor_failed")
    assert sorted(e["changes"]["reason"] for e in failures) == ["code already used", "code already used"]
    assert not any(seed in str(e) or code in str(e) for e in failures)


def test_a_recovery_code_signs_in_once(tenant: Tenant) -> None:
    _, codes = enrol(tenant.web())
    first, _ = password_step(tenant, tenant.email, tenant.password)
    response = second_step(first, codes[3].upper().replace("-", " "))  # typed loosely
    assert response.status_code == 303
    assert "9 left" in text_of(first.get("/runs").text)
    second, _ = password_step(tenant, tenant.email, tenant.password)
    reused = second_step(second, codes[3])
    assert reused.status_code == 400
    assert second.get("/runs").status_code in (302, 303)
    assert [e["changes"]["codes_left"] for e in audit(tenant, "user.two_factor_recovery_used")] == [9]


def test_new_recovery_codes_replace_the_old_ones(tenant: Tenant) -> None:
    web = tenant.web()
    seed, old = enrol(web)
    made = web.post("/account/2fa/recovery-codes", data={"code": next_code(seed)})
    assert made.status_code == 200
    new = re.findall(r"<li><code>([a-z2-7-]{19})</code></li>", made.text)
    assert len(new) == 10 and not set(new) & set(old)
    client, _ = password_step(tenant, tenant.email, tenant.password)
    assert second_step(client, old[0]).status_code == 400
    assert second_step(client, new[0]).status_code == 303


def test_guessing_codes_is_throttled_with_retry_after(tenant: Tenant) -> None:
    seed, _ = enrol(tenant.web())
    client, _ = password_step(tenant, tenant.email, tenant.password)
    wrong = wrong_code(seed)
    for _ in range(5):
        assert second_step(client, wrong).status_code == 400
    throttled = second_step(client, next_code(seed))  # even the right code waits now
    assert throttled.status_code == 429
    assert 0 < int(throttled.headers["retry-after"]) <= 900
    assert client.get("/runs").status_code in (302, 303)
    assert len(audit(tenant, "user.two_factor_failed")) == 5


def test_the_seed_and_recovery_codes_are_not_stored_in_clear(tenant: Tenant) -> None:
    seed, codes = enrol(tenant.web())
    db = connect_db(tenant.server.db_path)
    try:
        row = db.execute("SELECT f.seed_encrypted FROM user_two_factor f JOIN users u ON u.id = f.user_id "
                         "WHERE u.email = ?", (tenant.email,)).fetchone()
        stored = db.execute("SELECT c.code_sha256 FROM two_factor_recovery_codes c JOIN users u ON u.id = c.user_id "
                            "WHERE u.email = ?", (tenant.email,)).fetchall()
    finally:
        db.close()
    assert row[0].startswith("gAAAA") and seed not in row[0]  # a Fernet token
    assert len(stored) == 10
    assert not any(code.encode() in bytes(digest) for digest, in stored for code in codes)
    key = tenant.server.data_dir / "secret.key"
    if postgres_cluster.selected():  # auth.secret_key is required there: nothing on the replica's disk
        assert not key.exists()
    else:
        assert key.is_file() and stat.S_IMODE(key.stat().st_mode) == 0o600
    assert seed not in tenant.server.log() and codes[0] not in tenant.server.log()


def test_turning_off_needs_a_code(tenant: Tenant) -> None:
    web = tenant.web()
    seed, _ = enrol(web)
    refused = web.post("/account/2fa/disable", data={"off_code": wrong_code(seed)})
    assert refused.status_code == 400
    assert web.post("/account/2fa/disable", data={"off_code": next_code(seed)}).status_code == 303
    assert "Two-factor is off" in text_of(web.get("/account/2fa").text)
    _, client_went = password_step(tenant, tenant.email, tenant.password)
    assert client_went == "/"
    assert audit(tenant, "user.two_factor_disabled")


def test_the_tenant_switch_sends_members_to_enrolment(tenant: Tenant) -> None:
    owner = tenant.web()
    refused = owner.post("/settings/two-factor", data={"required": "1"})
    assert refused.status_code == 409 and "for yourself first" in text_of(refused.text)
    enrol(owner)
    assert owner.post("/settings/two-factor", data={"required": "1"}).status_code == 303
    assert audit(tenant, "tenant.two_factor_required")[0]["changes"] == {"required": [False, True]}

    member = add_member(tenant, "tester")
    client, client_went = password_step(tenant, member.email, member.password)
    assert client_went == "/account/2fa"
    for path in ("/", "/runs", "/account/sessions"):
        response = client.get(path)
        assert response.status_code in (302, 303) and response.headers["location"] == "/account/2fa", path
    assert "requires two-factor" in text_of(client.get("/account/2fa").text)
    seed, _ = enrol(client)
    assert client.get("/runs").status_code == 200
    # turning it off is refused while the tenant requires it
    assert client.post("/account/2fa/disable", data={"off_code": next_code(seed)}).status_code == 400

    # a session already open when the switch is turned on is sent to enrolment at its next page
    late = add_member(tenant, "viewer")
    assert owner.post("/settings/two-factor", data={"required": "0"}).status_code == 303
    open_session, _ = password_step(tenant, late.email, late.password)
    assert open_session.get("/runs").status_code == 200
    assert owner.post("/settings/two-factor", data={"required": "1"}).status_code == 303
    assert open_session.get("/runs").headers["location"] == "/account/2fa"


def test_an_admin_resets_a_lost_device_and_it_is_audited(tenant: Tenant) -> None:
    member = add_member(tenant, "tester")
    member_web, _ = password_step(tenant, member.email, member.password)
    seed, _ = enrol(member_web)
    admin = add_member(tenant, "admin")
    admin_web, _ = password_step(tenant, admin.email, admin.password)
    page = admin_web.get("/settings/two-factor")
    assert page.status_code == 200 and every_post_form_has_csrf(page.text)
    row = re.search(rf'data-member="{re.escape(member.email)}".*?</tr>', page.text, flags=re.S).group(0)
    assert "on · 10 recovery codes left" in text_of(row)
    reset = admin_web.post(f"/settings/two-factor/{member.id}/reset")
    assert reset.status_code == 303
    assert member_web.get("/runs").status_code in (302, 303)  # the member's sessions ended
    entry = audit(tenant, "user.two_factor_reset")[0]
    assert entry["entity_id"] == member.id and entry["actor"]["id"] == admin.id
    assert audit(tenant, "user.sessions_ended")[0]["changes"]["reason"] == "two-factor reset"
    # the password alone signs in again; the old seed is gone
    again, again_went = password_step(tenant, member.email, member.password)
    assert again_went == "/" and again.get("/runs").status_code == 200
    assert seed not in again.get("/account/2fa").text
    # nobody but the owner resets the owner's two-factor
    enrol(tenant.web())
    owner_id = tenant.api.get("/api/v1/users").json()["data"][0]["id"]
    admin_web.post(f"/settings/two-factor/{owner_id}/reset")
    assert len(audit(tenant, "user.two_factor_reset")) == 1
    assert admin_web.post("/settings/two-factor/cxxxxxxxxxxxxxxxxxxxxxxxx/reset").status_code == 404


def test_a_renewed_session_keeps_its_second_factor(tenant: Tenant) -> None:
    web = tenant.web()
    seed, _ = enrol(web)
    changed = web.post("/account", data={"name": "Me", "old_password": tenant.password,
                                         "new_password": "another long password", "confirm": "another long password"})
    assert changed.status_code == 303
    assert web.get("/runs").status_code == 200  # a fresh id for the same user, still past the second step
    client, client_went = password_step(tenant, tenant.email, "another long password")
    assert client_went.startswith("/login/two-factor")
    assert second_step(client, next_code(seed)).status_code == 303


# --- [auth] settings ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    server = InProcessServer(tmp_path_factory.mktemp("auth-data"), {
        "TMS_AUTH_SESSION_DAYS": "2", "TMS_AUTH_SESSION_IDLE_MINUTES": "10", "TMS_AUTH_PASSWORD_LOGIN": "false",
    }).start()
    yield server
    server.stop()


def test_session_days_and_idle_timeout(auth_server: ServerProcess) -> None:
    tenant = make_tenant_on(auth_server)  # its user is the owner: password sign-in stays open to owners
    client = _client(tenant)
    response = client.post("/login", data={"email": tenant.email, "password": tenant.password})
    assert response.status_code == 303
    cookie = next(h for h in response.headers.get_list("set-cookie") if h.startswith("tms_session="))
    assert "Max-Age=172800" in cookie
    assert client.get("/runs").status_code == 200
    db = connect_db(auth_server.db_path)
    try:
        key = client.cookies["tms_session"]
        db.execute("UPDATE web_sessions SET last_seen_at = '2020-01-01T00:00:00.000Z' WHERE key = ?", (key,))
        db.commit()
    finally:
        db.close()
    idle = client.get("/runs")
    assert idle.status_code in (302, 303) and idle.headers["location"].startswith("/login")


def test_password_login_off_leaves_the_owner_as_the_way_back(auth_server: ServerProcess) -> None:
    tenant = make_tenant_on(auth_server)
    member = add_member(tenant, "admin")
    page = _client(tenant).get("/login")
    assert "Password sign-in is off" in text_of(page.text)
    refused = _client(tenant).post("/login", data={"email": member.email, "password": member.password})
    assert refused.status_code == 400 and "Password sign-in is off" in text_of(refused.text)
    assert _client(tenant).post("/login", data={"email": tenant.email, "password": tenant.password}).status_code == 303
