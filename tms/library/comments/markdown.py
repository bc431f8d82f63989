"""A comment's Markdown: checked (no script, no ``javascript:`` or other non-web links), its mentions
found, and rendered to sanitised HTML. Pure functions; the service calls them in a worker thread.

Rendering is markdown-it-py (CommonMark, plus tables and strikethrough) with raw HTML off, so any HTML
a comment holds is shown as text; its output then passes nh3 (the Ammonia sanitiser) with a short list
of tags and the http, https and mailto schemes alone: two independent layers, either enough alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token

from tms.errors import InvalidInput

BODY_MAX = 10_000  # characters of Markdown per comment (also the msgspec limit of the API body)
MENTIONS_MAX = 20  # distinct @mentions per comment

# "@" then an email address, not inside a word (so a plain address "bob@example.com" is no mention)
MENTION = re.compile(r"(?<![\w.+@-])@([A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})")
_SAFE_SCHEMES = ("http", "https", "mailto")
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
_DANGEROUS_HTML = re.compile(r"<\s*/?\s*(script|style|iframe|object|embed|frame|frameset|base|meta|link|svg|math)\b"
                             r"|\bon[a-z]+\s*=|javascript\s*:|vbscript\s*:", re.IGNORECASE)
_TAGS = {"p", "br", "hr", "strong", "em", "s", "del", "code", "pre", "blockquote", "ul", "ol", "li", "a",
         "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td"}
_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"style"}, "td": {"style"}}

# what is shown: raw HTML off (shown as text), markdown-it's own link check on
_renderer = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
# what is checked: raw HTML and every link kept, so that each can be judged and named in the error
_checker = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
_checker.validateLink = lambda url: True  # type: ignore[method-assign]  # judge every link ourselves


@dataclass(frozen=True, slots=True)
class Checked:
    html: str
    mentions: list[str]  # email addresses, lower-cased, in order of first appearance


def _tokens(tokens: list[Token]) -> list[Token]:
    flat: list[Token] = []
    for token in tokens:
        flat.append(token)
        if token.children:
            flat.extend(_tokens(token.children))
    return flat


def _bad_link(url: str) -> str | None:
    cleaned = re.sub(r"[\x00-\x20\x7f]+", "", url)
    scheme = _SCHEME.match(cleaned)
    if scheme is None or scheme.group(1).lower() in _SAFE_SCHEMES:
        return None
    return scheme.group(1).lower()


def check_and_render(body: str) -> Checked:
    """The sanitised HTML and the mentioned addresses; a 400 naming ``body`` for what is refused."""
    if len(body) > BODY_MAX:
        raise InvalidInput(f"body: a comment holds at most {BODY_MAX:,} characters", field="body")
    if not body.strip():
        raise InvalidInput("body: a comment needs some text", field="body")
    for token in _tokens(_checker.parse(body)):
        if token.type in ("html_block", "html_inline") and _DANGEROUS_HTML.search(token.content):
            raise InvalidInput("body: HTML with scripts, event handlers or embedded content is not allowed in a "
                               "comment; write Markdown", field="body")
        for attr in ("href", "src"):
            value = token.attrGet(attr)
            scheme = _bad_link(str(value)) if value is not None else None
            if scheme is not None:
                raise InvalidInput(f"body: a {scheme}: link is not allowed; links may be http, https, mailto "
                                   "or relative", field="body")
    mentions = list(dict.fromkeys(m.lower() for m in MENTION.findall(body)))
    if len(mentions) > MENTIONS_MAX:
        raise InvalidInput(f"body: a comment may mention at most {MENTIONS_MAX} people ({len(mentions)} found)",
                           field="body")
    html = nh3.clean(_renderer.render(body), tags=_TAGS, attributes=_ATTRIBUTES,
                     url_schemes=set(_SAFE_SCHEMES), link_rel="nofollow noopener noreferrer")
    return Checked(html=html, mentions=mentions)
