"""Forgot password (issue 25): POST /password-reset mails a one-hour, single-use link through a real SMTP
server on loopback (aiosmtpd), which the tests read; the answer is the same for every address; requests
are throttled per address and per client; a reset ends every session and never skips two-factor."""

from __future__ import annotations

import email
import re
import threading
from collections.abc import Iterator
from email import policy
from email.message import EmailMessage
from typing import Any

import httpx
import pytest
from aiosmtpd.controller import Controller

from tests.conftest import ServerProcess, Tenant, connect_db, free_port, make_tenant_on
from tests.team_helpers import Member, add_member
from tests.test_two_factor import enrol, next_code
from tests.web_helpers import text_of


class Inbox:
    """What the loopback SMTP server received, by recipient."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self.arrived = threading.Condition()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # the name aiosmtpd calls
        message = email.message_from_bytes(envelope.content, policy=policy.default)
        with self.arrived:
            self.messages.append(message)  # type: ignore[arg-type]
            self.arrived.notify_all()
        return "250 OK"

    def to(self, address: str) -> list[EmailMessage]:
        with self.arrived:
            return [m for m in self.messages if m["To"] == address]

    def wait_for(self, address: str, count: int = 1) -> EmailMessage:
        """The ``count``-th mail to ``address``, once it has arrived (the server mails after answering)."""
        with self.arrived:
            assert self.arrived.wait_for(lambda: len(self.to(address)) >= count, timeout=60), address
            return self.to(address)[count - 1]


@pytest.fixture(scope="module")
def inbox() -> Iterator[tuple[Inbox, int]]:
    handler = Inbox()
    controller = Controller(handler, hostname="127.0.0.1", port=free_port())
    controller.start()
    yield handler, controller.port
    controller.stop()


def _mail_env(port: int) -> dict[str, str]:
    return {"TMS_SMTP_HOST": "127.0.0.1", "TMS_SMTP_PORT": str(port), "TMS_SMTP_STARTTLS": "false",
            "TMS_SMTP_FROM": "tms@example.com"}


@pytest.fixture(scope="module")
def mail_server(inbox: tuple[Inbox, int], tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path_factory.mktemp("mail-data"), _mail_env(inbox[1])).start()
    yield server
    server.stop()


def browser(server: ServerProcess) -> httpx.Client:
    client = httpx.Client(base_url=server.url, timeout=30, follow_redirects=False)
    client.get("/login")
    client.headers["x-csrftoken"] = client.cookies.get("csrftoken") or ""
    return client


def sign_in(server: ServerProcess, address: str, password: str) -> httpx.Response:
    return browser(server).post("/login", data={"email": address, "password": password})


def link_in(message: EmailMessage) -> str:
    body = message.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    match = re.search(r"https?://\S+/password-reset/([A-Za-z0-9_-]{43})\b", body)
    assert match, body
    return f"/password-reset/{match.group(1)}"


def ask(server: ServerProcess, address: str) -> httpx.Response:
    return browser(server).post("/password-reset", data={"email": address})


def test_a_forgotten_password_is_reset_from_the_mailed_link(mail_server: ServerProcess, inbox) -> None:
    mails, _ = inbox
    tenant = make_tenant_on(mail_server)
    member = add_member(tenant, "tester")
    open_session = browser(mail_server)
    assert open_session.post("/login", data={"email": member.email, "password": member.password}).status_code == 303

    visitor = browser(mail_server)
    login = visitor.get("/login")
    assert 'href="/password-reset"' in login.text and "Forgot password?" in login.text
    assert visitor.get("/password-reset").status_code == 200
    asked = visitor.post("/password-reset", data={"email": member.email.upper()})  # any case
    assert asked.status_code == 303 and asked.headers["location"] == "/password-reset?sent=1"
    assert "a link to set a new password is on its way" in text_of(visitor.get(asked.headers["location"]).text)

    message = mails.wait_for(member.email)
    assert message["From"] == "tms@example.com" and "password" in message["Subject"].lower()
    link = link_in(message)
    page = visitor.get(link)
    assert page.status_code == 200 and member.email in page.text
    assert page.headers["cache-control"] == "no-store"
    mismatch = visitor.post(link, data={"password": "brand new password", "password_confirm": "other one!"})
    assert mismatch.status_code == 400
    done = visitor.post(link, data={"password": "brand new password", "password_confirm": "brand new password"})
    assert done.status_code == 303
    assert visitor.get("/runs").status_code == 200  # this browser is signed in afresh

    ended = open_session.get("/runs")  # every other session of the user ended
    assert ended.status_code in (302, 303) and ended.headers["location"].startswith("/login")
    assert sign_in(mail_server, member.email, member.password).status_code == 400
    assert sign_in(mail_server, member.email, "brand new password").status_code == 303
    reused = browser(mail_server).get(link)  # single use
    assert reused.status_code == 404

    actions = [e["action"] for e in tenant.api.get("/api/v1/audit").json()["data"]]
    assert "user.reset_mailed" in actions and "user.password_reset" in actions and "user.sessions_ended" in actions
    assert link.rsplit("/", 1)[1] not in mail_server.log()  # the secret is never logged


def test_the_answer_is_the_same_for_an_unknown_address(mail_server: ServerProcess, inbox) -> None:
    mails, _ = inbox
    tenant = make_tenant_on(mail_server)
    member = add_member(tenant, "viewer")
    unknown = f"nobody-{member.email}"
    answers = [ask(mail_server, address) for address in (unknown, member.email)]
    assert [(a.status_code, a.headers["location"], a.text) for a in answers] == [
        (303, "/password-reset?sent=1", answers[0].text)] * 2
    as_json = [browser(mail_server).post("/password-reset", json={"email": address})
               for address in (unknown, member.email)]
    assert [(a.status_code, a.json()) for a in as_json] == [(202, as_json[0].json())] * 2
    assert "on its way" in as_json[0].json()["data"]["detail"]
    mails.wait_for(member.email, count=2)  # both of the member's requests were mailed; the unknown's asked first
    assert mails.to(unknown) == []


def test_a_reset_link_expires_after_an_hour(mail_server: ServerProcess, inbox) -> None:
    mails, _ = inbox
    tenant = make_tenant_on(mail_server)
    member = add_member(tenant, "tester")
    assert ask(mail_server, member.email).status_code == 303
    link = link_in(mails.wait_for(member.email))
    db = connect_db(mail_server.db_path)
    try:  # an hour later
        row = db.execute("SELECT created_at, expires_at FROM user_links WHERE email = ? AND kind = 'reset'",
                         (member.email,)).fetchone()
        db.execute("UPDATE user_links SET expires_at = '2001-01-01T00:00:00.000Z' WHERE email = ?", (member.email,))
        db.commit()
    finally:
        db.close()
    assert row[1] > row[0]
    expired = browser(mail_server).get(link)
    assert expired.status_code == 404 and "expired" in text_of(expired.text)
    refused = browser(mail_server).post(link, data={"password": "brand new password",
                                                    "password_confirm": "brand new password"})
    assert refused.status_code == 404
    assert sign_in(mail_server, member.email, member.password).status_code == 303


def test_a_reset_does_not_skip_two_factor(mail_server: ServerProcess, inbox) -> None:
    mails, _ = inbox
    tenant = make_tenant_on(mail_server)
    member: Member = add_member(tenant, "tester")
    web = browser(mail_server)
    assert web.post("/login", data={"email": member.email, "password": member.password}).status_code == 303
    seed, _ = enrol(web)
    assert ask(mail_server, member.email).status_code == 303
    link = link_in(mails.wait_for(member.email))
    visitor = browser(mail_server)
    assert visitor.post(link, data={"password": "brand new password",
                                    "password_confirm": "brand new password"}).status_code == 303
    held = visitor.get("/runs")  # the mailbox alone is not enough: the code is still asked for
    assert held.status_code in (302, 303) and held.headers["location"].startswith("/login/two-factor")
    assert visitor.post("/login/two-factor", data={"code": next_code(seed), "next": "/runs"}).status_code == 303
    assert visitor.get("/runs").status_code == 200


def test_bad_input_is_a_400_naming_the_field(mail_server: ServerProcess) -> None:
    assert ask(mail_server, "not an address").status_code == 400
    problem = browser(mail_server).post("/password-reset", json={"mail": "x@example.com"})
    assert problem.status_code == 400 and problem.json()["errors"][0]["field"] == "email"


def test_requests_are_throttled_per_address_and_per_client(start_server, inbox) -> None:
    mails, port = inbox
    server = start_server(env=_mail_env(port))
    tenant: Tenant = make_tenant_on(server)
    for _ in range(3):
        assert ask(server, tenant.email).status_code == 303
    throttled = ask(server, tenant.email)
    assert throttled.status_code == 429 and 0 < int(throttled.headers["retry-after"]) <= 900
    problem = browser(server).post("/password-reset", json={"email": tenant.email})
    assert problem.status_code == 429 and problem.headers["content-type"].startswith("application/problem+json")
    assert "retry-after" in problem.headers
    mails.wait_for(tenant.email, count=3)
    # the client: ten requests (refused ones not counted) for any addresses within the window, then it waits
    for number in range(7):
        assert ask(server, f"someone{number}@example.com").status_code == 303
    spraying = ask(server, "one-too-many@example.com")
    assert spraying.status_code == 429 and int(spraying.headers["retry-after"]) > 0
