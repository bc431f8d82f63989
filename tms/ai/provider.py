"""AI providers from the ``[ai]`` settings: ``none`` (no network, ever) and ``openai``.

``openai`` means any server that speaks the OpenAI chat-completions protocol: hosted APIs and local
servers such as Ollama, vLLM or llama.cpp. Every failure becomes a ``ProviderError`` whose message is
written for the person on the page, and every message is scrubbed of the API key first: a provider may
echo the request (headers included) in an error body, and exception texts may carry the URL.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import httpx

from tms.config import Config

log = logging.getLogger(__name__)

# An answer is a few scenarios of text; anything far larger is a misbehaving server, not a draft.
MAX_ANSWER_BYTES = 1_000_000
# Low temperature: drafts should follow the requirement, not invent features.
TEMPERATURE = 0.2
_EXCERPT = 300


class ProviderError(Exception):
    """A provider call that produced no usable answer; ``message`` is safe to show and to log."""

    def __init__(self, message: str, *, kind: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind  # disabled | timeout | unreachable | rate_limited | auth | http | malformed
        self.retry_after = retry_after


class Provider(Protocol):
    name: str
    model: str

    async def complete(self, messages: list[dict[str, str]]) -> str:
        """The model's reply text to a chat; raises ``ProviderError``."""
        ...


@dataclass
class NoProvider:
    """The default: AI generation is off and nothing is ever sent anywhere."""

    name: str = "none"
    model: str = ""

    async def complete(self, messages: list[dict[str, str]]) -> str:
        raise ProviderError("AI generation is not enabled on this server.", kind="disabled")


@dataclass
class OpenAICompatible:
    base_url: str
    model: str
    api_key: str
    timeout: float
    name: str = "openai"

    @property
    def endpoint(self) -> str:
        base = self.base_url.rstrip("/")
        # the API root is asked for, but a pasted full endpoint is unambiguous too
        return base if base.endswith("/chat/completions") else base + "/chat/completions"

    def scrub(self, text: str) -> str:
        return scrub(text, self.api_key)

    def _fail(self, message: str, kind: str, retry_after: int | None = None) -> ProviderError:
        clean = self.scrub(message)
        log.warning("AI provider %s: %s", self.shown_url, clean)
        return ProviderError(clean, kind=kind, retry_after=retry_after)

    @property
    def shown_url(self) -> str:
        return self.scrub(without_userinfo(self.base_url))

    async def complete(self, messages: list[dict[str, str]]) -> str:
        if not self.base_url:
            raise self._fail("AI provider is 'openai' but ai.base_url is not set.", "unreachable")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        body = {"model": self.model, "messages": messages, "temperature": TEMPERATURE}
        try:
            # httpx's timeout applies to each connect/read separately; the outer bound makes it the
            # whole request, so a server that trickles bytes cannot hold the page open either.
            async with asyncio.timeout(self.timeout):
                status, headers_in, raw = await self._post(headers, body)
        except TimeoutError:
            raise self._fail(
                f"The AI provider did not answer within {self.timeout:g} seconds. Try again, or with a "
                "shorter requirement; a local model may need a larger ai.timeout_seconds.", "timeout"
            ) from None
        except httpx.TimeoutException:
            raise self._fail(
                f"The AI provider did not answer within {self.timeout:g} seconds. Try again later.", "timeout"
            ) from None
        except httpx.HTTPError as exc:
            reason = type(exc).__name__
            detail = str(exc) or reason
            raise self._fail(
                f"Could not reach the AI provider at {self.shown_url} ({self.scrub(detail)[:_EXCERPT]}). "
                "Check ai.base_url and that the server is running.", "unreachable"
            ) from None
        return self._answer_text(status, headers_in, raw)

    async def _post(self, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, httpx.Headers, bytes]:
        # No redirects: a redirect could carry the Authorization header somewhere else.
        async with httpx.AsyncClient(timeout=self.timeout, follow_redirects=False) as client, \
                client.stream("POST", self.endpoint, headers=headers, json=body) as response:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > MAX_ANSWER_BYTES:
                    raise ProviderError(
                        f"The AI provider's answer is larger than {MAX_ANSWER_BYTES // 1000} kB; it was refused.",
                        kind="malformed",
                    )
                chunks.append(chunk)
            return response.status_code, response.headers, b"".join(chunks)

    def _answer_text(self, status: int, headers: httpx.Headers, raw: bytes) -> str:
        if status == 429:
            retry_after = _retry_after(headers.get("retry-after"))
            when = f" Try again in {retry_after} seconds." if retry_after else " Try again in a minute."
            raise self._fail(f"The AI provider is rate limiting requests (HTTP 429).{when}", "rate_limited",
                             retry_after)
        if status in (401, 403):
            raise self._fail(
                f"The AI provider refused the credentials (HTTP {status}). Check ai.api_key.", "auth")
        if status == 404:
            endpoint = without_userinfo(self.endpoint)
            raise self._fail(
                f"The AI provider answered HTTP 404 for {endpoint}. Check ai.base_url "
                f"(usually ending in /v1) and ai.model ({self.model or 'empty'}).", "http")
        if 300 <= status < 400:
            raise self._fail(f"The AI provider answered with a redirect (HTTP {status}); set ai.base_url to "
                             "the final address.", "http")
        if status >= 400:
            detail = _error_detail(raw)
            suffix = f": {self.scrub(detail)[:_EXCERPT]}" if detail else "."
            raise self._fail(f"The AI provider failed with HTTP {status}{suffix} Try again later.", "http")
        try:
            document = json.loads(raw)
            content = document["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise self._fail("The AI provider's answer is not a chat-completions response "
                             "(no choices[0].message.content).", "malformed") from None
        if not isinstance(content, str) or not content.strip():
            raise self._fail("The AI provider returned an empty answer. Try again.", "malformed")
        return content


def provider_from_config(config: Config) -> Provider:
    if config.get("ai.provider") != "openai":
        return NoProvider()
    return OpenAICompatible(
        base_url=config.get("ai.base_url"),
        model=config.get("ai.model"),
        api_key=config.get("ai.api_key"),
        timeout=config.get("ai.timeout_seconds"),
    )


def scrub(text: str, secret: str) -> str:
    """``text`` with the secret (and anything after ``Bearer``) blanked out."""
    if secret:
        text = text.replace(secret, "[redacted]")
    # RFC 6750 b64token characters: whatever token follows "Bearer" is hidden, even if it is not ours
    return re.sub(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+", r"\1[redacted]", text)


def without_userinfo(url: str) -> str:
    """A URL fit to show: credentials in ``user:pass@host`` are dropped."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "the configured URL"
    if parts.username or parts.password:
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return url


def _retry_after(value: str | None) -> int | None:
    if value and value.strip().isdigit():
        return min(int(value.strip()), 86_400)
    return None


def _error_detail(raw: bytes) -> str:
    """The provider's own error message (OpenAI shape ``{"error": {"message"}}``), else a text excerpt."""
    try:
        document = json.loads(raw)
    except ValueError:
        text = raw.decode("utf-8", "replace").strip()
        return " ".join(text.split())[:_EXCERPT] if text and not text.lstrip().startswith("<") else ""
    error = document.get("error") if isinstance(document, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return " ".join(error["message"].split())
    if isinstance(error, str):
        return " ".join(error.split())
    return ""
