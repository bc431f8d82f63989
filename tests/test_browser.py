"""The web interface in a real browser (Chromium via Playwright), as a new user meets it."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import httpx

from tests.browser_support import browser, no_horizontal_overflow, page, shot  # noqa: F401 (fixtures)
from tests.conftest import ServerProcess


def test_first_run_to_token_journey(start_server: Callable[..., ServerProcess], page: Any) -> None:
    server = start_server()
    token = server.setup_token()
    assert token, server.log()
    page.goto(f"{server.url}/")
    assert "/setup" in page.url
    page.goto(f"{server.url}/setup?token={token}")
    page.get_by_label("Team name").fill("QA Team")
    page.get_by_label("Your email").fill("lead@example.com")
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Create team and sign in").click()
    page.wait_for_url(f"{server.url}/")
    assert "Your team is ready" in page.content()

    # sign out and back in, as a returning user does
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(re.compile(r"/login"))
    page.get_by_label("Email").fill("lead@example.com")
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{server.url}/")

    # a project, marked active
    page.get_by_role("link", name="Projects").click()
    page.get_by_label("Name").fill("Web shop")
    page.get_by_label("Environments").fill("staging, production")
    page.get_by_role("button", name="Create project").click()
    assert page.get_by_text("Project “Web shop” created.").is_visible()
    page.get_by_role("button", name="Mark Web shop active").click()
    assert page.get_by_text("“Web shop” is now the active project.").is_visible()
    shot(page, "projects")

    # a read+write token, shown once, copied with the button
    page.get_by_role("link", name="Settings").click()
    page.get_by_label("Name").fill("CI pipeline")
    page.get_by_label("read").check()
    page.get_by_label("write").check()
    page.get_by_role("button", name="Create token").click()
    secret = page.locator("#new-token-value").inner_text().strip()
    assert re.fullmatch(r"svc_[a-z0-9]{8}_[A-Za-z0-9]{32,}", secret)
    page.get_by_role("button", name="Copy").click()
    page.get_by_role("button", name="Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == secret
    shot(page, "token-created")
    api = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {secret}"})
    assert api.get("/api/v1/me").json()["scopes"] == ["read", "write"]
    page.reload()
    assert page.locator("#new-token-value").count() == 0

    # revoke it: the API answers 401 at once
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Revoke CI pipeline").click()
    assert page.get_by_text("Token revoked").is_visible()
    assert api.get("/api/v1/me").status_code == 401

    # 375 px wide: nothing overflows horizontally
    page.set_viewport_size({"width": 375, "height": 800})
    for path in ("/", "/projects", "/settings/tokens"):
        page.goto(server.url + path)
        assert no_horizontal_overflow(page), path
    shot(page, "tokens-375")
