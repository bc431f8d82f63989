"""The tracker, outbound: integration settings with a write-only token, and "Create issue" from a failed
result, against fake GitHub, GitLab and Jira servers on loopback (real HTTP, the endpoints TMS calls).

The fake implements issue create and issue read of each tracker as documented; ``mode`` makes it answer
401, 404, 422, 500 or hang, so each refusal is seen exactly as a client sees it.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx
import pytest

from tests.conftest import ServerProcess, Tenant, assert_problem, connect_db
from tests.team_helpers import add_member, web_as
from tests.test_integrations import GHERKIN, deliver, edited, sign  # noqa: F401 - sign: the webhook's helper
from tests.webhook_receiver import POLL

TOKEN = "ghp_TopSecretToken0123456789"

IN_PROCESS = True  # tests/inprocess.py


@pytest.fixture
def server(app_server: ServerProcess) -> ServerProcess:
    """The app the tenants live on (in-process here): its database, its log."""
    return app_server


# --- a fake tracker -------------------------------------------------------------------------------


class FakeTracker(ThreadingHTTPServer):
    """GitHub, GitLab and Jira issue endpoints on one loopback server; issues live in ``issues``."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.mode: int | str = "ok"   # "ok", "hang", or the status to answer
        self.requests: list[dict[str, Any]] = []
        self.issues: dict[str, dict[str, Any]] = {}  # key -> {title, state, body}
        self.numbers = 0
        self.release = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"

    def add(self, key: str, title: str, state: str) -> None:
        self.issues[key] = {"title": title, "state": state, "body": ""}


class _Handler(BaseHTTPRequestHandler):
    server: FakeTracker

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        tracker = self.server
        headers = {name.lower(): value for name, value in self.headers.items()}
        tracker.requests.append({"method": method, "path": self.path, "headers": headers, "body": body})
        if tracker.mode == "hang":
            tracker.release.wait(10)
            return
        if tracker.mode != "ok":
            status = int(tracker.mode)
            self._answer(status, {"message": {401: "Bad credentials", 404: "Not Found", 422: "Validation Failed",
                                              500: "Internal error"}.get(status, "error")})
            return
        path = urlsplit(self.path).path
        base = tracker.url
        if method == "POST":
            tracker.numbers += 1
            number = tracker.numbers
            if match := re.fullmatch(r"/repos/([^/]+/[^/]+)/issues", path):
                key = f"{match[1]}#{number}"
                tracker.issues[key] = {"title": body["title"], "state": "open", "body": body["body"]}
                self._answer(201, {"number": number, "html_url": f"{base}/{match[1]}/issues/{number}",
                                   "title": body["title"], "state": "open"})
            elif match := re.fullmatch(r"/api/v4/projects/([^/]+)/issues", path):
                project = unquote(match[1])
                key = f"{project}#{number}"
                tracker.issues[key] = {"title": body["title"], "state": "opened", "body": body["description"]}
                self._answer(201, {"iid": number, "web_url": f"{base}/{project}/-/issues/{number}",
                                   "title": body["title"], "state": "opened", "references": {"full": key}})
            elif path == "/rest/api/2/issue":
                fields = body["fields"]
                key = f"{fields['project']['key']}-{number}"
                tracker.issues[key] = {"title": fields["summary"], "state": "To Do", "body": fields["description"],
                                       "issuetype": fields["issuetype"]["name"]}
                self._answer(201, {"id": str(10000 + number), "key": key, "self": f"{base}/rest/api/2/issue/{key}"})
            else:
                self._answer(404, {"message": "Not Found"})
            return
        if match := re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/(\d+)", path):
            issue = tracker.issues.get(f"{match[1]}#{match[2]}")
            if issue is None:
                self._answer(404, {"message": "Not Found"})
            else:
                self._answer(200, {"number": int(match[2]), "title": issue["title"], "state": issue["state"],
                                   "html_url": f"{base}/{match[1]}/issues/{match[2]}"})
        elif match := re.fullmatch(r"/api/v4/projects/([^/]+)/issues/(\d+)", path):
            project = unquote(match[1])
            issue = tracker.issues.get(f"{project}#{match[2]}")
            if issue is None:
                self._answer(404, {"message": "404 Not found"})
            else:
                self._answer(200, {"iid": int(match[2]), "title": issue["title"], "state": issue["state"],
                                   "web_url": f"{base}/{project}/-/issues/{match[2]}",
                                   "references": {"full": f"{project}#{match[2]}"}})
        elif match := re.fullmatch(r"/rest/api/2/issue/([^/]+)", path):
            key = unquote(match[1]).upper()
            issue = tracker.issues.get(key)
            if issue is None:
                self._answer(404, {"errorMessages": ["Issue does not exist or you do not have permission to see it."]})
            else:
                self._answer(200, {"key": key, "fields": {"summary": issue["title"],
                                                          "status": {"name": issue["state"]}}})
        else:
            self._answer(404, {"message": "Not Found"})

    def do_POST(self) -> None:
        self._handle("POST")

    def do_GET(self) -> None:
        self._handle("GET")


@pytest.fixture
def tracker() -> Iterator[FakeTracker]:
    fake = FakeTracker()
    thread = threading.Thread(target=fake.serve_forever, kwargs=POLL, daemon=True)
    thread.start()
    yield fake
    fake.release.set()
    fake.shutdown()
    fake.server_close()


# --- helpers --------------------------------------------------------------------------------------


def settings_for(kind: str, tracker: FakeTracker) -> dict[str, Any]:
    common = {"kind": kind, "name": f"{kind.title()} tracker", "api_url": tracker.url, "api_token": TOKEN}
    if kind == "GITHUB":
        return {**common, "repository": "acme/shop"}
    if kind == "GITLAB":
        return {**common, "project_path": "acme/shop"}
    return {**common, "api_user": "qa@example.com", "project_key": "SHOP"}


def connect(tenant: Tenant, kind: str, tracker: FakeTracker) -> dict[str, Any]:
    response = tenant.api.post("/api/v1/integrations", json=settings_for(kind, tracker))
    assert response.status_code == 201, response.text
    return response.json()["data"]  # type: ignore[no-any-return]


def failed_result(tenant: Tenant, status: str = "FAILED", *, environment: str = "staging",
                  **fields: Any) -> dict[str, Any]:
    """A project, a case and a run holding one result of that case; returns ids and codes."""
    project = tenant.create_project()
    case = tenant.api.post("/api/v1/cases", json={"title": "Pay with a <b>card</b>", "bdd_content": GHERKIN,
                                                  "project_id": project["id"]}).json()["data"]
    run = tenant.api.post("/api/v1/runs", json={"name": "nightly", "project_id": project["id"],
                                                "environment": environment}).json()["data"]
    item = {"test_case_code": case["code"], "status": status, "error_message": "AssertionError: total is 0",
            "error_stack": "Traceback (most recent call last):\n  File \"pay.py\", line 3\nAssertionError", **fields}
    posted = tenant.api.post(f"/api/v1/runs/{run['id']}/results", json={"results": [item]})
    assert posted.status_code in (200, 201), posted.text
    results = tenant.api.get(f"/api/v1/runs/{run['id']}/results").json()["data"]
    return {"project": project, "case": case, "run": run, "result": results[0]}


def result_of(tenant: Tenant, result_id: str) -> dict[str, Any]:
    return tenant.api.get(f"/api/v1/results/{result_id}").json()["data"]  # type: ignore[no-any-return]


# --- settings -------------------------------------------------------------------------------------


def test_the_token_is_write_only_and_encrypted_at_rest(server: ServerProcess, tenant: Tenant,
                                                       tracker: FakeTracker) -> None:
    created = connect(tenant, "GITHUB", tracker)
    assert created["api_token_set"] is True and created["outbound"] is True
    assert created["secret"], "the webhook secret is shown once, in the answer to POST"
    assert "api_token" not in created and TOKEN not in json.dumps(created)
    shown = tenant.api.get(f"/api/v1/integrations/{created['id']}").json()["data"]
    assert "secret" not in shown and "api_token" not in shown
    assert shown["repository"] == "acme/shop" and shown["api_url"] == tracker.url
    listed = tenant.api.get("/api/v1/integrations").json()["data"]
    assert [i["id"] for i in listed] == [created["id"]] and TOKEN not in json.dumps(listed)
    with connect_db(server.db_path) as conn:
        stored = conn.execute("SELECT api_token_encrypted FROM integrations WHERE id = ?",
                              (created["id"],)).fetchone()[0]
    assert stored and TOKEN not in stored
    page = tenant.web().get(f"/settings/integrations/{created['id']}")
    assert page.status_code == 200 and TOKEN not in page.text and "A token is stored" in page.text

    cleared = tenant.api.patch(f"/api/v1/integrations/{created['id']}", json={"api_token": None})
    assert cleared.status_code == 200, cleared.text
    assert cleared.json()["data"]["api_token_set"] is False and cleared.json()["data"]["outbound"] is False
    assert TOKEN not in server.log()


@pytest.mark.parametrize(("body", "field"), [
    ({"kind": "GITHUB", "name": "x", "project_key": "SHOP"}, "project_key"),
    ({"kind": "JIRA", "name": "x", "project_path": "a/b"}, "project_path"),
    ({"kind": "JIRA", "name": "x", "project_key": "not a key"}, "project_key"),
    ({"kind": "JIRA", "name": "x", "api_user": "nobody"}, "api_user"),
    ({"kind": "GITLAB", "name": "x", "api_url": "ftp://gitlab.example.com"}, "api_url"),
    ({"kind": "GITLAB", "name": "x", "api_url": "https://me:pw@gitlab.example.com"}, "api_url"),
    ({"kind": "GITHUB", "name": "x", "api_token": "x" * 2001}, "api_token"),
    ({"kind": "GITHUB", "name": "x", "api_token": "two words"}, "api_token"),
])
def test_bad_settings_are_400_naming_the_field(tenant: Tenant, body: dict[str, Any], field: str) -> None:
    problem = assert_problem(tenant.api.post("/api/v1/integrations", json=body), 400)
    assert field in json.dumps(problem)


def test_settings_need_write_and_stay_in_their_tenant(tenant: Tenant, other_tenant: Tenant,
                                                      tracker: FakeTracker) -> None:
    reader = tenant.client("read")
    assert_problem(reader.post("/api/v1/integrations", json=settings_for("GITHUB", tracker)), 403)
    created = connect(tenant, "GITHUB", tracker)
    assert_problem(reader.patch(f"/api/v1/integrations/{created['id']}", json={"name": "y"}), 403)
    assert_problem(reader.delete(f"/api/v1/integrations/{created['id']}"), 403)
    assert reader.get(f"/api/v1/integrations/{created['id']}").status_code == 200
    for method in ("GET", "PATCH", "DELETE"):
        kwargs: dict[str, Any] = {"json": {"name": "y"}} if method == "PATCH" else {}
        assert_problem(other_tenant.api.request(method, f"/api/v1/integrations/{created['id']}", **kwargs), 404)
    assert other_tenant.api.get("/api/v1/integrations").json()["data"] == []
    assert tenant.api.delete(f"/api/v1/integrations/{created['id']}").status_code == 204
    assert_problem(tenant.api.get(f"/api/v1/integrations/{created['id']}"), 404)


def test_the_settings_page_saves_the_outbound_settings(tenant: Tenant, tracker: FakeTracker) -> None:
    web = tenant.web()
    created = web.post("/settings/integrations", data={"kind": "JIRA", "name": "Shop Jira"})
    location = created.headers["location"]
    integration_id = location.rsplit("/", 1)[1]
    bad = web.post(f"{location}/outbound", data={"api_url": "javascript:alert(1)", "project_key": "SHOP"})
    assert bad.status_code == 400 and 'id="f-api_url-error"' in bad.text
    saved = web.post(f"{location}/outbound", data={"api_url": tracker.url, "api_user": "qa@example.com",
                                                   "project_key": "shop", "api_token": TOKEN})
    assert saved.status_code == 303, saved.text
    shown = tenant.api.get(f"/api/v1/integrations/{integration_id}").json()["data"]
    assert shown["project_key"] == "SHOP" and shown["api_token_set"] and shown["outbound"]
    # a blank token keeps the stored one
    web.post(f"{location}/outbound", data={"api_url": tracker.url, "api_user": "qa@example.com",
                                           "project_key": "SHOP", "api_token": ""})
    assert tenant.api.get(f"/api/v1/integrations/{integration_id}").json()["data"]["api_token_set"] is True


# --- create a defect ------------------------------------------------------------------------------


def test_github_issue_from_a_failed_result_then_the_closed_webhook_queues_the_retest(
        server: ServerProcess, tenant: Tenant, tracker: FakeTracker) -> None:
    integration = connect(tenant, "GITHUB", tracker)
    made = failed_result(tenant)
    result = made["result"]
    marked = tenant.api.patch(f"/api/v1/results/{result['id']}", json={
        "step_results": [{"index": 1, "status": "PASSED"}, {"index": 2, "status": "FAILED", "comment": "spinner"}]})
    assert marked.status_code == 200, marked.text
    response = tenant.api.post(f"/api/v1/results/{result['id']}/defect", json={"integration_id": integration["id"]})
    assert response.status_code == 201, response.text
    defect = response.json()["data"]
    assert defect["bug_ticket_key"] == "acme/shop#1"
    assert defect["bug_ticket_url"] == f"{tracker.url}/acme/shop/issues/1"
    linked = result_of(tenant, result["id"])
    assert (linked["bug_ticket_key"], linked["bug_ticket_url"]) == (defect["bug_ticket_key"], defect["bug_ticket_url"])

    call = tracker.requests[-1]
    assert call["path"] == "/repos/acme/shop/issues"
    assert call["headers"]["authorization"] == f"Bearer {TOKEN}"
    body = call["body"]["body"]
    code = made["case"]["code"]
    assert call["body"]["title"].startswith(f"{code} Pay with a <b>card</b> fails (staging)")
    for expected in (code, "AssertionError: total is 0", 'File "pay.py", line 3', "Environment: staging",
                     f"/results/{result['id']}/execute", "Run: nightly",
                     "Failed step: 2. When I pay — spinner"):
        assert expected in body, expected

    # the tracker closes it: the existing bug loop puts the case in the retest queue
    hook = tenant.api.post("/api/v1/integrations", json={"kind": "GITHUB", "name": "hooks",
                                                         "repository": "acme/shop"}).json()["data"]
    payload = edited("github_issue_closed_completed.json", issue__number=1)
    delivered = deliver(server, hook["id"], "GITHUB", hook["secret"], payload)
    assert delivered.status_code == 200, delivered.text
    queue = tenant.api.get("/api/v1/cases", params={"needs_retest": "true"}).json()["data"]
    assert [c["code"] for c in queue] == [code]
    assert TOKEN not in server.log()


@pytest.mark.parametrize(("kind", "key", "path"), [
    ("GITLAB", "acme/shop#1", "/api/v4/projects/acme%2Fshop/issues"),
    ("JIRA", "SHOP-1", "/rest/api/2/issue"),
])
def test_gitlab_and_jira_issues(tenant: Tenant, tracker: FakeTracker, kind: str, key: str, path: str) -> None:
    integration = connect(tenant, kind, tracker)
    made = failed_result(tenant, "BROKEN")
    response = tenant.api.post(f"/api/v1/results/{made['result']['id']}/defect",
                               json={"integration_id": integration["id"], "title": "Checkout is down",
                                     "body": "See the run."})
    assert response.status_code == 201, response.text
    assert response.json()["data"]["bug_ticket_key"] == key
    call = tracker.requests[-1]
    assert call["path"] == path
    if kind == "GITLAB":
        assert call["headers"]["private-token"] == TOKEN
        assert call["body"] == {"title": "Checkout is down", "description": "See the run."}
    else:
        pair = base64.b64decode(call["headers"]["authorization"].split()[1]).decode()
        assert pair == f"qa@example.com:{TOKEN}"
        assert call["body"]["fields"]["project"] == {"key": "SHOP"}
        assert call["body"]["fields"]["issuetype"] == {"name": "Bug"}
        assert response.json()["data"]["bug_ticket_url"] == f"{tracker.url}/browse/SHOP-1"
    assert result_of(tenant, made["result"]["id"])["bug_ticket_key"] == key


@pytest.mark.parametrize(("mode", "words"), [
    (401, "refused the credentials (401)"),
    (404, "(404)"),
    (422, "rejected the issue (422)"),
    (500, "answered 500"),
    ("hang", "did not answer within"),
])
def test_a_tracker_that_refuses_or_hangs_links_nothing_and_a_retry_works(
        tenant: Tenant, tracker: FakeTracker, mode: int | str, words: str) -> None:
    integration = connect(tenant, "GITHUB", tracker)
    result = failed_result(tenant)["result"]
    tracker.mode = mode
    problem = assert_problem(tenant.api.post(f"/api/v1/results/{result['id']}/defect",
                                             json={"integration_id": integration["id"]}), 502)
    assert words in problem["detail"] and "Nothing was linked" in problem["detail"]
    assert TOKEN not in problem["detail"]
    unchanged = result_of(tenant, result["id"])
    assert unchanged["bug_ticket_key"] is None and unchanged["bug_ticket_url"] is None
    tracker.release.set()
    tracker.mode = "ok"
    retried = tenant.api.post(f"/api/v1/results/{result['id']}/defect", json={"integration_id": integration["id"]})
    assert retried.status_code == 201, retried.text
    assert result_of(tenant, result["id"])["bug_ticket_key"] == retried.json()["data"]["bug_ticket_key"]


def test_only_failed_unlinked_results_and_only_ready_integrations(tenant: Tenant, tracker: FakeTracker) -> None:
    integration = connect(tenant, "GITHUB", tracker)
    passed = failed_result(tenant, "PASSED")["result"]
    assert_problem(tenant.api.post(f"/api/v1/results/{passed['id']}/defect",
                                   json={"integration_id": integration["id"]}), 409)
    linked = failed_result(tenant, bug_ticket_key="SHOP-9")["result"]
    problem = assert_problem(tenant.api.post(f"/api/v1/results/{linked['id']}/defect",
                                             json={"integration_id": integration["id"]}), 409)
    assert "SHOP-9" in problem["detail"]
    inbound_only = tenant.api.post("/api/v1/integrations", json={"kind": "GITHUB", "name": "hooks"}).json()["data"]
    failing = failed_result(tenant)["result"]
    problem = assert_problem(tenant.api.post(f"/api/v1/results/{failing['id']}/defect",
                                             json={"integration_id": inbound_only["id"]}), 400)
    assert "api_token" in problem["detail"]
    assert tracker.requests == []


def test_other_tenants_and_read_tokens(tenant: Tenant, other_tenant: Tenant, tracker: FakeTracker) -> None:
    mine = connect(tenant, "GITHUB", tracker)
    theirs = connect(other_tenant, "GITHUB", tracker)
    result = failed_result(tenant)["result"]
    assert_problem(tenant.client("read").post(f"/api/v1/results/{result['id']}/defect",
                                              json={"integration_id": mine["id"]}), 403)
    assert_problem(other_tenant.api.post(f"/api/v1/results/{result['id']}/defect",
                                         json={"integration_id": theirs["id"]}), 404)
    assert_problem(tenant.api.post(f"/api/v1/results/{result['id']}/defect",
                                   json={"integration_id": theirs["id"]}), 404)
    assert_problem(tenant.api.post("/api/v1/results/nope/defect", json={"integration_id": mine["id"]}), 404)
    assert tracker.requests == []
    assert result_of(tenant, result["id"])["bug_ticket_key"] is None


def test_the_create_issue_page(tenant: Tenant, tracker: FakeTracker) -> None:
    integration = connect(tenant, "GITHUB", tracker)
    made = failed_result(tenant)
    result_id = made["result"]["id"]
    web = tenant.web()
    page = web.get(f"/results/{result_id}/defect")
    assert page.status_code == 200
    assert "AssertionError: total is 0" in page.text and integration["id"] in page.text
    assert "Pay with a &lt;b&gt;card&lt;/b&gt;" in page.text  # escaped, as everywhere
    form = {"integration_id": integration["id"], "title": "Card payment fails", "body": "steps…",
            "back": f"/runs/{made['run']['id']}"}
    tracker.mode = 500
    refused = web.post(f"/results/{result_id}/defect", data=form)
    assert refused.status_code == 502 and "answered 500" in refused.text and "Card payment fails" in refused.text
    tracker.mode = "ok"
    created = web.post(f"/results/{result_id}/defect", data=form)
    assert created.status_code == 303 and created.headers["location"] == f"/runs/{made['run']['id']}"
    assert result_of(tenant, result_id)["bug_ticket_key"] == "acme/shop#1"
    assert tracker.issues["acme/shop#1"]["title"] == "Card payment fails"
    assert "already linked" in web.get(f"/results/{result_id}/defect").text
    other = failed_result(tenant)["result"]["id"]
    assert web.get("/results/nope/defect").status_code == 404
    assert web.get(f"/results/{other}/defect").status_code == 200


def test_two_clicks_create_one_issue(tenant: Tenant, tracker: FakeTracker) -> None:
    integration = connect(tenant, "GITHUB", tracker)
    result = failed_result(tenant)["result"]
    tracker.mode = "hang"
    url = f"/api/v1/results/{result['id']}/defect"
    headers = {"Authorization": f"Bearer {tenant.write_token}"}
    answers: list[httpx.Response] = []
    first = threading.Thread(target=lambda: answers.append(
        tenant.server.http_client().post(url, json={"integration_id": integration["id"]}, headers=headers, timeout=30)))
    first.start()
    deadline = time.monotonic() + 10
    while not tracker.requests and time.monotonic() < deadline:
        time.sleep(0.02)
    second = tenant.server.http_client().post(url, json={"integration_id": integration["id"]}, headers=headers,
                                              timeout=30)
    assert_problem(second, 409)
    first.join()
    assert len(tracker.requests) == 1


def test_create_issue_is_offered_where_a_failure_is_read(tenant: Tenant, tracker: FakeTracker) -> None:
    """From the run page's failure cluster and row, and from the execution view, once a tracker can take it."""
    made = failed_result(tenant, "BROKEN")
    result_id, run_id = made["result"]["id"], made["run"]["id"]
    web, link = tenant.web(), f'href="/results/{result_id}/defect'
    assert link not in web.get(f"/runs/{run_id}").text  # no integration with outbound credentials yet
    assert link not in web.get(f"/results/{result_id}/execute").text
    connect(tenant, "GITHUB", tracker)
    page = web.get(f"/runs/{run_id}").text
    assert link in page.split('id="clusters"', 1)[1].split("</section>", 1)[0]
    assert link in page.split('id="results-title"', 1)[1]
    view = web.get(f"/results/{result_id}/execute").text
    assert link in view and "Blocked" in view
    viewer = add_member(tenant, "viewer")
    assert link not in web_as(tenant, viewer.email, viewer.password).get(f"/results/{result_id}/execute").text
