"""Server-side Gherkin highlighting: keywords, steps, tags, tables, doc strings, comments.

Line based on purpose: it must render any text, including the invalid Gherkin a form is showing back
with its errors, so it cannot depend on a successful parse. Keywords come from the official parser's
dialects, so `# language: fr` features are highlighted too.
"""

from __future__ import annotations

import re
from functools import lru_cache

from gherkin.dialect import Dialect
from markupsafe import Markup, escape

_LANGUAGE = re.compile(r"^\s*#\s*language\s*:\s*([\w-]+)\s*$")
_LINE_REF = re.compile(r"line (\d+)")
_INLINE = re.compile(r'("[^"]*"|<[^<>\s][^<>]*>)')


@lru_cache(maxsize=16)
def _keywords(language: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(block keywords ending with ':', step keywords) of a dialect, longest first so prefixes lose."""
    try:
        dialect = Dialect.for_name(language)
    except Exception:
        dialect = None
    if dialect is None:
        dialect = Dialect.for_name("en")
    assert dialect is not None  # English is built into the parser
    blocks = {
        *dialect.feature_keywords, *dialect.rule_keywords, *dialect.background_keywords,
        *dialect.scenario_keywords, *dialect.scenario_outline_keywords, *dialect.examples_keywords,
    }
    steps = {
        *dialect.given_keywords, *dialect.when_keywords, *dialect.then_keywords,
        *dialect.and_keywords, *dialect.but_keywords,
    }
    return (tuple(sorted(blocks, key=len, reverse=True)), tuple(sorted(steps, key=len, reverse=True)))


def _safe(html: str) -> Markup:
    """Marks a line safe: every piece of user text in it went through ``escape`` (see callers)."""
    return Markup(html)  # noqa: S704 - built only from escape()d text and our own span tags


def _span(css: str, text: str) -> str:
    return f'<span class="{css}">{escape(text)}</span>'


def _inline(text: str) -> str:
    """Quoted strings and <placeholders> inside step text or table cells."""
    out = []
    for part in _INLINE.split(text):
        if not part:
            continue
        if part.startswith('"') and part.endswith('"') and len(part) > 1:
            out.append(_span("g-str", part))
        elif part.startswith("<") and part.endswith(">"):
            out.append(_span("g-ph", part))
        else:
            out.append(str(escape(part)))
    return "".join(out)


def _table_row(indent: str, body: str) -> str:
    cells = re.split(r"(?<!\\)\|", body)
    parts = [indent]
    for index, cell in enumerate(cells):
        if index:
            parts.append(_span("g-pipe", "|"))
        if cell:
            parts.append(f'<span class="g-cell">{_inline(cell)}</span>')
    return "".join(parts)


def highlight(text: str) -> list[Markup]:
    """One safe HTML fragment per source line."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start another
    language = "en"
    for line in lines:
        if line.strip() and not line.strip().startswith("#"):
            break
        match = _LANGUAGE.match(line)
        if match:
            language = match.group(1)
    blocks, steps = _keywords(language)
    out: list[Markup] = []
    doc_fence: str | None = None
    for line in lines:
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        if doc_fence is not None:
            out.append(_safe(_span("g-doc", line)))
            if stripped.startswith(doc_fence):
                doc_fence = None
            continue
        if stripped.startswith(('"""', "```")):
            doc_fence = stripped[:3]
            out.append(_safe(_span("g-doc", line)))
            continue
        if stripped.startswith("#"):
            out.append(_safe(_span("g-cmt", line)))
            continue
        if stripped.startswith("@"):
            tags = re.split(r"(\s+)", stripped)
            html = "".join(_span("g-tag", t) if t.startswith("@") else str(escape(t)) for t in tags)
            out.append(_safe(str(escape(indent)) + html))
            continue
        if stripped.startswith("|"):
            out.append(_safe(_table_row(str(escape(indent)), stripped)))
            continue
        block = next((k for k in blocks if stripped.startswith(k + ":")), None)
        if block is not None:
            rest = stripped[len(block) + 1 :]
            out.append(_safe(f"{escape(indent)}{_span('g-kw', block + ':')}{escape(rest)}"))
            continue
        step = next((k for k in steps if stripped.startswith(k)), None)
        if step is not None and stripped.strip() != step.strip():
            rest = stripped[len(step) :]
            out.append(_safe(f"{escape(indent)}{_span('g-step', step)}{_inline(rest)}"))
            continue
        out.append(escape(line))
    return out


_TOKEN_WORDS = {
    "#EOF": "the end", "#Empty": "an empty line", "#Comment": "a comment", "#TagLine": "a tag",
    "#FeatureLine": "Feature:", "#RuleLine": "Rule:", "#BackgroundLine": "Background:",
    "#ScenarioLine": "Scenario:", "#ExamplesLine": "Examples:", "#StepLine": "a step (Given, When, Then…)",
    "#DocStringSeparator": "a doc string", "#TableRow": "a table row", "#Language": "a language line",
    "#Other": "free text",
}
_EXPECTED = re.compile(r"^expected: (.*), got '(.*)'$", re.S)


def _plain(message: str) -> str:
    """The parser's token names in words: 'expected: #EOF, #StepLine, got …' means little to a tester."""
    match = _EXPECTED.match(message.strip())
    if not match:
        return re.sub(r"#\w+", lambda token: _TOKEN_WORDS.get(token.group(0), token.group(0)), message)
    wanted = [_TOKEN_WORDS.get(token.strip(), token.strip().lstrip("#")) for token in match.group(1).split(",")]
    return f"“{match.group(2).strip()}” is not valid here. Expected {', '.join(wanted[:-1])} or {wanted[-1]}." \
        if len(wanted) > 1 else f"“{match.group(2).strip()}” is not valid here. Expected {wanted[0]}."


def error_lines(detail: str) -> list[tuple[int | None, str]]:
    """Splits a validate_gherkin message into (line number, message) pairs for display at the line."""
    _, found, body = detail.partition("is not valid Gherkin: ")
    if not found:  # not a parse error (the checklist's size limit): one message, said as it is
        return [(None, detail)]
    items: list[tuple[int | None, str]] = []
    for part in (body or detail).split("; "):
        match = _LINE_REF.match(part)
        if match:
            message = part.split(": ", 1)[1] if ": " in part else part
            items.append((int(match.group(1)), _plain(message)))
        else:
            items.append((None, part))
    return items
