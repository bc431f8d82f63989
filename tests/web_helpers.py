"""HTML helpers for the web-interface tests: a tiny parser, no heavy dependencies."""

from __future__ import annotations

import re
from html import unescape
from html.parser import HTMLParser

import httpx


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> _Collector:
    collector = _Collector()
    collector.feed(html)
    return collector


def text_of(html: str) -> str:
    """Visible text with whitespace collapsed, for 'the page says X' assertions."""
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", body))).strip()


def forms(html: str) -> list[dict[str, str | None]]:
    return [attrs for tag, attrs in parse(html).elements if tag == "form"]


def every_post_form_has_csrf(html: str) -> bool:
    """Each <form method=post> carries a hidden _csrf_token input before it closes."""
    for match in re.finditer(r"<form\b[^>]*method=\"post\"[^>]*>(.*?)</form>", html, flags=re.S | re.I):
        if 'name="_csrf_token"' not in match.group(1):
            return False
    return True


def field_error(html: str, field: str) -> str | None:
    """The message shown next to a field (``id="f-<field>-error"``), or None."""
    match = re.search(rf'id="f-{re.escape(field)}-error"[^>]*>(.*?)</', html, flags=re.S)
    return unescape(match.group(1)).strip() if match else None


def input_value(html: str, name: str) -> str | None:
    for tag, attrs in parse(html).elements:
        if tag == "input" and attrs.get("name") == name:
            return attrs.get("value")
    return None


def flashes(html: str) -> list[str]:
    return [text_of(m) for m in re.findall(r'<div class="flash[^"]*"[^>]*>(.*?)</div>', html, flags=re.S)]


def follow(client: httpx.Client, response: httpx.Response) -> httpx.Response:
    """Follows one Post/Redirect/Get redirect and returns the page."""
    assert response.status_code == 303, f"{response.status_code}: {response.text[:500]}"
    return client.get(response.headers["location"], headers={"accept": "text/html"})


HTML = {"accept": "text/html"}
