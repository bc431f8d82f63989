"""Scheduled mail reports (issue 27): /api/v1/report-schedules, the page under a project, "Send now", the
scheduler that mails due schedules through a real SMTP server on loopback (aiosmtpd), and the claim that
lets one replica alone mail an occurrence. Both databases."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from typing import Any

import httpx
import pytest
from aiosmtpd.controller import Controller
from cronsim import CronSim
from pypdf import PdfReader

from tests.conftest import ServerProcess, Tenant, assert_problem, connect_db, free_port, make_tenant_on, open_database
from tests.test_password_reset import Inbox
from tests.web_helpers import every_post_form_has_csrf, field_error, flashes, follow
from tms.ids import iso

MILESTONE_NAME = "Release 7 sign-off"
GHERKIN = "Feature: F\n  Scenario: S\n    Given a step\n"


@pytest.fixture(scope="module")
def inbox() -> Iterator[tuple[Inbox, int]]:
    handler = Inbox()
    controller = Controller(handler, hostname="127.0.0.1", port=free_port())
    controller.start()
    yield handler, controller.port
    controller.stop()


@pytest.fixture(scope="module")
def mail_server(inbox: tuple[Inbox, int], tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    env = {"TMS_SMTP_HOST": "127.0.0.1", "TMS_SMTP_PORT": str(inbox[1]), "TMS_SMTP_STARTTLS": "false",
           "TMS_SMTP_FROM": "reports@example.com", "TMS_REPORTS_SCHEDULE_POLL_SECONDS": "1"}
    server = ServerProcess(tmp_path_factory.mktemp("schedule-data"), env).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def team(mail_server: ServerProcess) -> Tenant:
    return make_tenant_on(mail_server, "Scheduled")


def _project_with_results(tenant: Tenant) -> tuple[str, str]:
    """A project with a milestone whose run has a pass and a failure: (project id, milestone id)."""
    api = tenant.api
    project = tenant.create_project("Shop")["id"]
    milestone = api.post("/api/v1/milestones", json={"project_id": project, "name": MILESTONE_NAME}
                         ).json()["data"]["id"]
    run = api.post("/api/v1/runs", json={"project_id": project, "name": "Nightly", "milestone_id": milestone})
    assert run.status_code == 201, run.text
    codes = [api.post("/api/v1/cases", json={"project_id": project, "title": title, "bdd_content": GHERKIN}
                      ).json()["data"]["code"] for title in ("checkout works", "refund works")]
    posted = api.post(f"/api/v1/runs/{run.json()['data']['id']}/results", json={"results": [
        {"test_case_code": codes[0], "status": "PASSED"},
        {"test_case_code": codes[1], "status": "FAILED", "error_message": "refund total is off by one cent"}]})
    assert posted.status_code in (200, 201, 207), posted.text
    return project, milestone


def _schedule(api: httpx.Client, **body: Any) -> httpx.Response:
    return api.post("/api/v1/report-schedules", json=body)


def _problem_field(response: httpx.Response) -> str:
    body = assert_problem(response, 400)
    fields = [error.get("field", "") for error in body.get("errors", [])]
    return " ".join(fields) + " " + str(body.get("detail", ""))


def _attachment(message: EmailMessage) -> tuple[str, bytes]:
    for part in message.iter_attachments():
        content = part.get_content()
        return str(part.get_filename()), content if isinstance(content, bytes) else content.encode()
    raise AssertionError("no attachment")


def _html(message: EmailMessage) -> str:
    body = message.get_body(("html",))
    assert body is not None
    return str(body.get_content())


def _pdf_text(data: bytes) -> str:
    return "\n".join(page.extract_text() or "" for page in PdfReader(io.BytesIO(data)).pages)


# ------------------------------------------------------------------------------------------------ the API

def test_create_read_change_and_delete_a_schedule(team: Tenant) -> None:
    project, milestone = _project_with_results(team)
    created = _schedule(team.api, project_id=project, kind="milestone", target_id=milestone, cron="0  7 * * 1",
                        recipients=["qa@example.com", "QA@example.com", "lead@example.com"])
    assert created.status_code == 201, created.text
    schedule = created.json()["data"]
    assert schedule["cron"] == "0 7 * * 1" and schedule["kind"] == "milestone" and schedule["target_id"] == milestone
    assert schedule["recipients"] == ["qa@example.com", "lead@example.com"]  # the same address once
    assert schedule["attachment"] == "pdf" and schedule["last_sent_at"] is None and schedule["last_error"] is None
    expected = next(CronSim("0 7 * * 1", datetime.now(UTC) - timedelta(minutes=1)))
    assert schedule["next_run_at"] == iso(expected)  # the next Monday 07:00 UTC

    listed = team.api.get("/api/v1/report-schedules", params={"project_id": project}).json()["data"]
    assert [s["id"] for s in listed] == [schedule["id"]]
    assert team.client("read").get(f"/api/v1/report-schedules/{schedule['id']}").status_code == 200

    changed = team.api.patch(f"/api/v1/report-schedules/{schedule['id']}",
                             json={"kind": "project", "cron": "30 18 * * *", "attachment": "html"})
    assert changed.status_code == 200, changed.text
    data = changed.json()["data"]
    assert data["kind"] == "project" and data["target_id"] is None and data["attachment"] == "html"
    assert data["next_run_at"].endswith("T18:30:00.000Z")
    assert team.client("read").patch(f"/api/v1/report-schedules/{schedule['id']}", json={"cron": "0 1 * * *"}
                                     ).status_code == 403
    audit = team.api.get("/api/v1/audit").json()["data"]
    assert {"report_schedule.created", "report_schedule.updated"} <= {entry["action"] for entry in audit}

    assert team.api.delete(f"/api/v1/report-schedules/{schedule['id']}").status_code == 204
    assert team.api.get(f"/api/v1/report-schedules/{schedule['id']}").status_code == 404


@pytest.mark.parametrize(("body", "field"), [
    ({"cron": "61 * * * *"}, "cron"),
    ({"cron": "0 0 30 2 *"}, "cron"),  # 30 February never comes
    ({"cron": "@daily"}, "cron"),
    ({"cron": "* * * *"}, "cron"),
    ({"recipients": [f"user{n}@example.com" for n in range(10_000)]}, "recipients"),
    ({"recipients": []}, "recipients"),
    ({"recipients": ["not an address"]}, "recipients"),
    ({"kind": "weekly"}, "kind"),
    ({"kind": "milestone"}, "target_id"),
    ({"surprise": 1}, "surprise"),
    ({"cron": 5}, "cron"),
    ({"cron": "0 7 * * 1\u0000"}, "cron"),
])
def test_bad_input_is_a_400_naming_the_field(team: Tenant, body: dict[str, Any], field: str) -> None:
    project = team.create_project("Bad input")["id"]
    full = {"project_id": project, "kind": "project", "cron": "0 7 * * 1", "recipients": ["a@example.com"], **body}
    response = _schedule(team.api, **full)
    assert field in _problem_field(response), response.text


def test_a_milestone_of_another_project_or_tenant_is_refused(team: Tenant, mail_server: ServerProcess) -> None:
    project, milestone = _project_with_results(team)
    other = team.create_project("Other")["id"]
    refused = _schedule(team.api, project_id=other, kind="milestone", target_id=milestone, cron="0 7 * * *",
                        recipients=["a@example.com"])
    assert "target_id" in _problem_field(refused)
    stranger = make_tenant_on(mail_server, "Stranger")
    theirs = stranger.create_project("Theirs")["id"]
    assert _schedule(stranger.api, project_id=theirs, kind="milestone", target_id=milestone, cron="0 7 * * *",
                     recipients=["a@example.com"]).status_code == 404
    assert _schedule(stranger.api, project_id=project, kind="project", cron="0 7 * * *",
                     recipients=["a@example.com"]).status_code == 404
    assert stranger.api.get("/api/v1/report-schedules", params={"project_id": project}).status_code == 404


# -------------------------------------------------------------------------------------------- the mail

def test_send_now_mails_the_milestone_report_with_its_pdf(team: Tenant, inbox: tuple[Inbox, int]) -> None:
    mails, _ = inbox
    project, milestone = _project_with_results(team)
    address = f"send-now-{time.time_ns()}@example.com"
    schedule = _schedule(team.api, project_id=project, kind="milestone", target_id=milestone, cron="0 7 1 1 *",
                         recipients=[address]).json()["data"]
    sent = team.api.post(f"/api/v1/report-schedules/{schedule['id']}/send")
    assert sent.status_code == 200, sent.text
    assert sent.json()["data"] == {"sent": True, "recipients": 1, "error": None}

    message = mails.wait_for(address)
    assert message["From"] == "reports@example.com" and MILESTONE_NAME in message["Subject"]
    html = _html(message)
    assert MILESTONE_NAME in html and "refund total is off by one cent" in html
    plain = message.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert "2 results: 1 passed, 1 failed" in plain
    filename, pdf = _attachment(message)
    assert filename == f"milestone-{milestone}-report.pdf" and pdf.startswith(b"%PDF")
    assert MILESTONE_NAME in _pdf_text(pdf)

    after = team.api.get(f"/api/v1/report-schedules/{schedule['id']}").json()["data"]
    assert after["last_sent_at"] is not None and after["last_error"] is None
    assert after["next_run_at"] == schedule["next_run_at"]  # "send now" leaves the schedule as it was


def test_a_project_report_attaches_html(team: Tenant, inbox: tuple[Inbox, int]) -> None:
    mails, _ = inbox
    project, _ = _project_with_results(team)
    address = f"project-{time.time_ns()}@example.com"
    schedule = _schedule(team.api, project_id=project, kind="project", cron="0 7 1 1 *", recipients=[address],
                         attachment="html").json()["data"]
    assert team.api.post(f"/api/v1/report-schedules/{schedule['id']}/send").json()["data"]["sent"] is True
    message = mails.wait_for(address)
    filename, body = _attachment(message)
    assert filename == f"project-{project}-report.html"
    assert b"Project report" in body and b"Nightly" in body and b"refund total is off by one cent" in body


def test_a_due_schedule_is_mailed_once_and_moves_on(team: Tenant, inbox: tuple[Inbox, int]) -> None:
    mails, _ = inbox
    project, milestone = _project_with_results(team)
    address = f"due-{time.time_ns()}@example.com"
    schedule = _schedule(team.api, project_id=project, kind="milestone", target_id=milestone, cron="0 0 1 1 *",
                         recipients=[address]).json()["data"]
    # several occurrences missed: mailed once. Yearly, so no occurrence falls due while the test runs (with
    # "*/5" a slow run crossing a five-minute mark was rightly mailed a second time)
    overdue = iso(datetime.now(UTC) - timedelta(days=800))
    conn = connect_db(team.server.db_path)
    with conn:
        conn.execute("UPDATE report_schedules SET next_run_at = ? WHERE id = ?", (overdue, schedule["id"]))
    conn.close()
    message = mails.wait_for(address)
    assert MILESTONE_NAME in message["Subject"]
    deadline = time.monotonic() + 30
    while True:
        now = team.api.get(f"/api/v1/report-schedules/{schedule['id']}").json()["data"]
        if now["last_sent_at"] is not None or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert now["last_sent_at"] is not None and now["next_run_at"] > iso(datetime.now(UTC))
    assert now["next_run_at"][4:16] == "-01-01T00:00"
    time.sleep(3)  # three more polls
    assert len(mails.to(address)) == 1


def test_an_smtp_failure_is_kept_as_last_error(start_server) -> None:
    dead_port = free_port()  # nothing listens there
    server = start_server(env={"TMS_SMTP_HOST": "127.0.0.1", "TMS_SMTP_PORT": str(dead_port),
                               "TMS_SMTP_STARTTLS": "false"})
    tenant = make_tenant_on(server)
    project = tenant.create_project()["id"]
    schedule = _schedule(tenant.api, project_id=project, kind="project", cron="0 7 * * *",
                         recipients=["a@example.com"]).json()["data"]
    sent = tenant.api.post(f"/api/v1/report-schedules/{schedule['id']}/send").json()["data"]
    assert sent["sent"] is False and "ConnectionRefused" in sent["error"]
    stored = tenant.api.get(f"/api/v1/report-schedules/{schedule['id']}").json()["data"]
    assert stored["last_error"] == sent["error"] and stored["last_sent_at"] is None
    page = tenant.web().get(f"/projects/{project}/report-schedules")
    assert "Last attempt failed" in page.text and "ConnectionRefused" in page.text


def test_two_replicas_claiming_at_once_claim_each_occurrence_once(team: Tenant) -> None:
    from tms.reports.schedules import service

    project, _ = _project_with_results(team)
    ids = [_schedule(team.api, project_id=project, kind="project", cron="0 3 * * *",
                     recipients=["a@example.com"]).json()["data"]["id"] for _ in range(5)]
    # due a year ahead: the server's own scheduler (polling now) leaves them alone
    moment = datetime.now(UTC) + timedelta(days=366)
    conn = connect_db(team.server.db_path)
    with conn:
        for schedule_id in ids:
            conn.execute("UPDATE report_schedules SET next_run_at = ? WHERE id = ?",
                         (iso(moment - timedelta(minutes=1)), schedule_id))
    conn.close()

    async def race() -> list[list[str]]:
        replicas = [open_database(team.server.db_path) for _ in range(2)]
        for db in replicas:
            await db.open()
        try:
            claimed = await asyncio.gather(*(service.claim_due(db, moment, limit=10_000) for db in replicas))
        finally:
            for db in replicas:
                await db.close()
        return [[row["id"] for row in rows if row["id"] in ids] for rows in claimed]

    first, second = asyncio.run(race())
    assert sorted(first + second) == sorted(ids)  # every schedule claimed, none twice
    conn = connect_db(team.server.db_path)
    rows = conn.execute("SELECT next_run_at FROM report_schedules WHERE id IN (?, ?, ?, ?, ?)", ids).fetchall()
    conn.close()
    assert {row[0] for row in rows} == {iso(next(CronSim("0 3 * * *", moment)))}

    async def again() -> list[Any]:
        db = open_database(team.server.db_path)
        await db.open()
        try:
            return await service.claim_due(db, moment, limit=10_000)
        finally:
            await db.close()

    assert not [row for row in asyncio.run(again()) if row["id"] in ids]  # moved on: nothing left to claim


# ------------------------------------------------------------------------------------------- the page

def test_the_page_adds_keeps_bad_input_and_sends_now(team: Tenant, inbox: tuple[Inbox, int]) -> None:
    mails, _ = inbox
    project, milestone = _project_with_results(team)
    web = team.web()
    settings = web.get(f"/projects/{project}/edit")
    assert f'href="/projects/{project}/report-schedules"' in settings.text
    page = web.get(f"/projects/{project}/report-schedules")
    assert page.status_code == 200 and every_post_form_has_csrf(page.text) and "No report schedules yet" in page.text
    assert MILESTONE_NAME in page.text  # offered as a target

    address = f"page-{time.time_ns()}@example.com"
    token = web.cookies.get("csrftoken", "")
    bad = web.post(f"/projects/{project}/report-schedules", data={
        "_csrf_token": token, "kind": "milestone", "target_id": milestone, "cron": "every monday",
        "recipients": address})
    assert bad.status_code == 400
    assert "cron" in (field_error(bad.text, "cron") or "")
    assert 'value="every monday"' in bad.text and address in bad.text  # the input is kept
    many = web.post(f"/projects/{project}/report-schedules", data={
        "_csrf_token": token, "kind": "project", "cron": "0 7 * * 1",
        "recipients": ",".join(f"u{n}@example.com" for n in range(51))})
    assert many.status_code == 400
    assert field_error(many.text, "recipients") == ("Give 1 to 50 e-mail addresses, each like name@example.com, "
                                                    "separated by commas or lines.")
    odd_cron = web.post(f"/projects/{project}/report-schedules", data={
        "_csrf_token": token, "kind": "project", "cron": "0 7 * * 1!", "recipients": address})
    assert odd_cron.status_code == 400 and "e.g. 0 7 * * 1" in (field_error(odd_cron.text, "cron") or "")
    odd_address = web.post(f"/projects/{project}/report-schedules", data={
        "_csrf_token": token, "kind": "project", "cron": "0 7 * * 1", "recipients": "bob"})
    assert odd_address.status_code == 400
    assert "name@example.com" in (field_error(odd_address.text, "recipients") or "")

    added = web.post(f"/projects/{project}/report-schedules", data={
        "_csrf_token": token, "kind": "milestone", "target_id": milestone, "cron": "0 7 * * 1",
        "recipients": f"{address}\nsecond-{address}", "attachment": "pdf"})
    listing = follow(web, added)
    assert "Report schedule added." in flashes(listing.text)
    assert f"Milestone: {MILESTONE_NAME}" in listing.text and f"second-{address}" in listing.text
    schedule = team.api.get("/api/v1/report-schedules", params={"project_id": project}).json()["data"][0]
    assert schedule["recipients"] == [address, f"second-{address}"]

    bad_edit = web.post(f"/report-schedules/{schedule['id']}/edit", data={
        "_csrf_token": token, "kind": "milestone", "target_id": milestone, "cron": "0 25 * * *",
        "recipients": address})
    assert bad_edit.status_code == 400 and 'value="0 25 * * *"' in bad_edit.text
    assert "cron" in bad_edit.text and f'id="e-{schedule["id"]}-cron-error"' in bad_edit.text

    sent = follow(web, web.post(f"/report-schedules/{schedule['id']}/send", data={"_csrf_token": token}))
    assert "Report mailed to 2 recipients." in flashes(sent.text)
    with mails.arrived:  # one message to both addresses
        assert mails.arrived.wait_for(lambda: any(m["To"] == f"{address}, second-{address}" for m in mails.messages),
                                      timeout=60)

    edited = follow(web, web.post(f"/report-schedules/{schedule['id']}/edit", data={
        "_csrf_token": token, "kind": "project", "cron": "15 6 * * *", "recipients": address, "attachment": "html"}))
    assert "Report schedule saved." in flashes(edited.text) and "Project summary" in edited.text
    removed = follow(web, web.post(f"/report-schedules/{schedule['id']}/delete", data={"_csrf_token": token}))
    assert "Report schedule removed." in flashes(removed.text) and "No report schedules yet" in removed.text
