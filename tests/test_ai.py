"""AI drafts against a real OpenAI-compatible server on loopback, driven through the web pages (in-process:
tests/test_ai_pages.py, which imports the fake and the helpers here; the browser journey is here).

The fake provider answers POST /v1/chat/completions from a script (good JSON, fenced JSON, raw Gherkin,
invalid Gherkin, prose, HTTP errors, slow answers) and records every request it gets, so the tests
can also prove when *no* request was sent (quota exhausted, provider ``none``).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from tests.browser_support import browser, no_horizontal_overflow, page, shot  # noqa: F401 (fixtures)
from tests.conftest import ServerProcess, Tenant, connect_db, make_tenant_on
from tests.web_helpers import HTML, text_of
from tests.webhook_receiver import POLL

API_KEY = "sk-secret-test"
TIMEOUT = 1.0


# --- the fake OpenAI-compatible provider ---------------------------------------------------------------

def chat(content: str) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}


def scenarios(*pairs: tuple[str, str]) -> str:
    return json.dumps({"scenarios": [{"title": t, "gherkin": g} for t, g in pairs]})


GOOD_1 = ("Sign in with a valid password",
          "Feature: Sign in\n  Scenario: Valid password\n    Given a registered user\n"
          "    When they sign in with the right password\n    Then they see the dashboard\n")
GOOD_2 = ("Wrong password is refused <script>alert(1)</script>",
          "Feature: Sign in\n  Scenario: Wrong password\n    Given a registered user\n"
          "    When they sign in with a wrong password\n    Then they see \"Wrong email or password\"\n")
BAD = ("Locked account", "Feature: Sign in\n  Scenario: Locked\n    Given a locked user\n    Blah they try\n")


class FakeProvider:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.answers: deque[tuple[int, Any, dict[str, str], float]] = deque()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                fake.requests.append({"path": self.path, "headers": dict(self.headers), "json": json.loads(body)})
                if self.path != "/v1/chat/completions":
                    self._send(404, {"error": {"message": "no such route"}}, {})
                    return
                status, payload, headers, delay = (
                    fake.answers.popleft() if fake.answers else (200, chat(scenarios(GOOD_1)), {}, 0.0))
                if delay:
                    time.sleep(delay)
                self._send(status, payload, headers)

            def _send(self, status: int, payload: Any, headers: dict[str, str]) -> None:
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (the timeout test): nothing to answer

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs=POLL, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def answer(self, status: int = 200, payload: Any = None, headers: dict[str, str] | None = None,
               delay: float = 0.0) -> None:
        self.answers.append((status, payload, headers or {}, delay))

    def answer_content(self, content: str) -> None:
        self.answer(200, chat(content))

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    provider = FakeProvider()
    yield provider
    provider.close()


@pytest.fixture(autouse=True)
def _fresh_script(request: pytest.FixtureRequest) -> None:
    if "fake" in request.fixturenames:
        provider = request.getfixturevalue("fake")
        provider.answers.clear()


def off_loop(function: Callable[..., Any], *args: Any) -> Any:
    """Runs ``function`` in a thread: Playwright's sync API keeps an event loop running in this one,
    and the admin helpers call ``asyncio.run``."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(function, *args).result()


def tenant_on(server: ServerProcess) -> Tenant:
    return off_loop(make_tenant_on, server)  # type: ignore[no-any-return]


def ai_env(base_url: str, **extra: str) -> dict[str, str]:
    return {"TMS_AI_PROVIDER": "openai", "TMS_AI_BASE_URL": base_url, "TMS_AI_MODEL": "test-model",
            "TMS_AI_API_KEY": API_KEY, "TMS_AI_MONTHLY_QUOTA": "2", "TMS_AI_TIMEOUT_SECONDS": str(TIMEOUT),
            **extra}


@pytest.fixture(scope="module")
def ai_server(fake: FakeProvider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path_factory.mktemp("ai-data"), ai_env(fake.url)).start()
    yield server
    server.stop()
    assert API_KEY not in server.log(), "the API key leaked into the server log"


@pytest.fixture
def team(ai_server: ServerProcess) -> Tenant:
    return team_on(ai_server)


def team_on(server: Any) -> Tenant:
    """A tenant on an AI-enabled server (or in-process app) with an active project."""
    tenant = tenant_on(server)
    project = tenant.create_project("Shop")
    web = tenant.web()
    assert web.post(f"/projects/{project['id']}/activate").status_code == 303
    tenant.project_id = project["id"]  # type: ignore[attr-defined]
    return tenant


def no_key(response: httpx.Response) -> httpx.Response:
    assert API_KEY not in response.text, "the API key is on a page"
    return response


def generate(web: httpx.Client, requirement: str = "As a shopper I sign in with my password.",
             **fields: str) -> httpx.Response:
    return no_key(web.post("/ai/generate", data={"requirement": requirement, **fields}, headers=HTML))


def drafts_url(response: httpx.Response) -> str:
    assert response.status_code == 303, f"{response.status_code}: {text_of(response.text)[:600]}"
    location = response.headers["location"]
    assert re.fullmatch(r"/ai/generations/c[a-z0-9]{24}", location), location
    return location


def cases_of(tenant: Tenant) -> list[dict[str, Any]]:
    response = tenant.api.get("/api/v1/cases", params={"project_id": tenant.project_id})  # type: ignore[attr-defined]
    assert response.status_code == 200, response.text
    return response.json()["data"]  # type: ignore[no-any-return]


def generations(server: ServerProcess, tenant_id: str) -> list[tuple[str, str]]:
    with connect_db(server.db_path) as conn:
        return conn.execute("SELECT month, status FROM ai_generations WHERE tenant_id = ?", (tenant_id,)).fetchall()


def quota_exhausted(tenant: Tenant) -> bool:
    me = tenant.client("read").get("/api/v1/me").json()
    assert me["ai"]["provider"] == "openai" and me["ai"]["model"] == "test-model"
    return bool(me["ai"]["quota_exhausted"])


# --- reading answers and hiding the key (in-process) ----------------------------------------------------

@pytest.mark.parametrize(
    ("answer", "titles"),
    [
        (scenarios(GOOD_1, GOOD_2), [GOOD_1[0], GOOD_2[0]]),
        (json.dumps([{"name": "Bare list", "gherkin": GOOD_1[1]}]), ["Bare list"]),
        ('{"scenarios": [{"title": "Raw newlines", "gherkin": "Feature: F\n  Scenario: S\n    Given x\n"}]}'
         .replace("\\n", "\n"), ["Raw newlines"]),
        ("<think>maybe {\"scenarios\": []} or not</think>\n" + scenarios(GOOD_1), [GOOD_1[0]]),
        ("Scenario: Alone\n  Given x\n  Then y", ["Alone"]),
        ("Feature: F\n  @smoke\n  Scenario: One\n    Given a\n  Scenario: Two\n    Given b", ["One", "Two"]),
    ],
    ids=["json", "bare-list", "raw-newlines", "think-block", "scenario-only", "two-scenarios"],
)
def test_answers_are_read_leniently_into_whole_features(answer: str, titles: list[str]) -> None:
    from tms.ai.parse import parse_answer
    from tms.library.gherkin.service import validate_gherkin

    drafts = parse_answer(answer)
    assert [d.title for d in drafts] == titles
    for draft in drafts:
        validate_gherkin(draft.gherkin)  # every draft is a document a runner accepts
    if "@smoke" in answer:
        assert "@smoke" in drafts[0].gherkin and "@smoke" not in drafts[1].gherkin


@pytest.mark.parametrize("answer", ["", "   ", "Sorry, I cannot do that.", '{"scenarios": []}', "<think>hm</think>"])
def test_answers_without_scenarios_are_malformed(answer: str) -> None:
    from tms.ai.parse import MalformedAnswer, parse_answer

    with pytest.raises(MalformedAnswer):
        parse_answer(answer)


def test_scrub_hides_the_key_any_bearer_token_and_url_credentials() -> None:
    from tms.ai.provider import scrub, without_userinfo

    assert scrub(f"key {API_KEY} and Authorization: Bearer other-token, done", API_KEY) == (
        "key [redacted] and Authorization: Bearer [redacted], done")
    assert without_userinfo("https://user:pw@llm.example.com:8443/v1") == "https://llm.example.com:8443/v1"
    assert without_userinfo("http://127.0.0.1:11434/v1") == "http://127.0.0.1:11434/v1"


# --- the page in a browser ------------------------------------------------------------------------------

def test_browser_generate_edit_and_save(team: Tenant, fake: FakeProvider, page: Any) -> None:  # noqa: F811
    url = team.server.url
    page.goto(f"{url}/login")
    page.get_by_label("Email", exact=True).fill(team.email)
    page.get_by_label("Password").fill(team.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{url}/")
    page.get_by_role("link", name="AI drafts").click()
    page.wait_for_url(f"{url}/ai")

    fake.answer_content(scenarios(GOOD_1, BAD))
    page.get_by_label("Story, acceptance criteria or bug report").fill("As a shopper I sign in with a password.")
    page.get_by_label("Tags").fill("auth")
    page.get_by_label("Layer").select_option("UI")
    page.get_by_role("button", name="Generate drafts").click()
    page.wait_for_url(re.compile(r"/ai/generations/"))
    assert page.get_by_text("Invalid Gherkin").is_visible()
    assert page.get_by_label("Keep draft 2").is_checked() is False
    shot(page, "ai-drafts-review")

    # edit the first draft, fix the second, keep both
    page.get_by_label("Title of draft 1").fill("Sign in with the right password")
    page.get_by_label("Gherkin of draft 2").fill(BAD[1].replace("Blah they try", "When they try to sign in"))
    page.get_by_label("Keep draft 2").check()
    page.get_by_role("button", name="Save ticked drafts").click()
    page.wait_for_url(f"{url}/ai")
    assert page.get_by_text("Saved 2 DRAFT cases in “Shop”").is_visible()
    assert API_KEY not in page.content()
    shot(page, "ai-drafts-saved")
    page.set_viewport_size({"width": 375, "height": 800})
    assert no_horizontal_overflow(page)

    cases = cases_of(team)
    assert [(c["title"], c["status"], c["layer"], c["tags"]) for c in cases] == [
        ("Sign in with the right password", "DRAFT", "UI", ["auth"]),
        ("Locked account", "DRAFT", "UI", ["auth"]),
    ]
    assert "When they try to sign in" in cases[1]["bdd_content"]
