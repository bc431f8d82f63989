"""Hardening (issue 12): each reproducer of the outside attack on the release, as a regression test."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import ServerProcess

# --- OPTIONS and CORS preflight ------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/v1/projects", "/api/v1/runs/some-id/results", "/api/v1/me",
                                  "/api/webhooks", "/projects"])
def test_options_answers_204_with_allow_unauthenticated_and_logs_nothing(server: ServerProcess, path: str) -> None:
    log_before = len(server.log())
    plain = httpx.options(server.url + path)
    preflight = httpx.options(server.url + path, headers={
        "Origin": "https://elsewhere.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})
    for response in (plain, preflight):
        assert response.status_code == 204, response.text
        allowed = {m.strip() for m in response.headers["allow"].split(",")}
        assert "OPTIONS" in allowed and allowed & {"GET", "POST"}
        # no CORS policy: a cross-origin page is not invited in
        assert "access-control-allow-origin" not in response.headers
    assert {m.strip() for m in plain.headers["allow"].split(",")} >= (
        {"GET", "POST"} if path in ("/api/v1/projects", "/api/webhooks") else {"GET"})
    assert "Traceback" not in server.log()[log_before:]
