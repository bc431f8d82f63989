"""Shared steps in a case's Gherkin (issue 26), as text: pure, no database.

A step line ``* shared: <name>`` stands for the steps of the project's shared step ``<name>``. The
expansion replaces that line with those steps, indented like it, between two marker comments
(``#> shared: <name>`` and ``#< shared: <name>``) so the checklist can say which steps came from a
shared step; everything downstream (validation, the checklist, step_results' indexes, the step limit)
then reads the expanded text as any other case. A shared step may use another; a cycle is refused when
one is saved (``expand`` raises in ``strict`` mode), and read paths expand what they can.
Linear in the expanded text, which ``EXPANDED_TEXT_LIMIT`` bounds (nested uses could otherwise multiply).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Mapping
from typing import Any, cast

from gherkin.errors import CompositeParserException, ParserError
from gherkin.parser import Parser
from gherkin.token_scanner import TokenScanner

from tms.errors import InvalidInput

# the most characters a case's text may expand to with its shared steps (~2 us a character to parse)
EXPANDED_TEXT_LIMIT = 400_000
# the step line naming a shared step: the `*` keyword, then `shared:` and the name
SHARED_LINE = re.compile(r"^(?P<indent>[ \t]*)\*[ \t]+shared:[ \t]*(?P<name>.*?)[ \t]*$")
_DOC_STRING = re.compile(r'^[ \t]*("""|```)')
BEGIN = "#> shared: "
END = "#< shared: "


def _lines(text: str) -> list[tuple[str, str | None, str]]:
    """(line, the shared step it names or None, its indentation), doc strings' content never naming one."""
    out: list[tuple[str, str | None, str]] = []
    fence: str | None = None
    for line in text.splitlines():
        opened = _DOC_STRING.match(line)
        if fence is not None:
            if opened and opened.group(1) == fence:
                fence = None
            out.append((line, None, ""))
            continue
        if opened:
            fence = opened.group(1)
            out.append((line, None, ""))
            continue
        match = SHARED_LINE.match(line)
        if match and match.group("name"):
            out.append((line, match.group("name"), match.group("indent")))
        else:
            out.append((line, None, ""))
    return out


def names_in(text: str | None) -> list[str]:
    """The shared steps a text names itself, each once, in order of first use."""
    if not text or "shared:" not in text:
        return []
    return list(dict.fromkeys(name for _, name, _ in _lines(text) if name is not None))


def rename_in(text: str, old: str, new: str) -> str:
    """The text with its ``* shared: old`` lines naming ``new`` (a shared step's rename)."""
    out = []
    for line, name, indent in _lines(text):
        out.append(f"{indent}* shared: {new}" if name == old else line)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


_HEAD = "Feature: shared step\n  Scenario: shared step\n"
_ONLY_STEPS = ("only step lines (Given, When, Then, And, But or *), their tables and doc strings, and comments "
               "belong in a shared step")


def _error(exc: Exception) -> str:
    """A parser error with the line counted in the steps the user wrote (the wrapper adds two)."""
    errors = exc.errors if isinstance(exc, CompositeParserException) else [exc]
    parts = []
    for error in errors:
        message = str(error)
        if message.startswith("(") and "): " in message:
            message = message.split("): ", 1)[1]
        location = getattr(error, "location", None) or {}
        line = int(location.get("line") or 0) - 2
        parts.append(f"line {line}: {message}" if line > 0 else message)
    return "; ".join(parts)


def validate_steps(steps: str, *, field: str = "steps") -> None:
    """Raises ``InvalidInput`` naming ``field`` unless ``steps`` is step lines alone (with their arguments
    and comments), at least one: what may stand in a scenario in place of a `* shared:` line."""
    body = "\n".join("    " + line if line.strip() else "" for line in _dedented(steps))
    try:
        document = cast("dict[str, Any]", Parser().parse(TokenScanner(_HEAD + body + "\n")))
    except (CompositeParserException, ParserError) as exc:
        raise InvalidInput(f"{field} are not valid Gherkin steps: {_error(exc)}", field=field) from None
    children = (document.get("feature") or {}).get("children") or []
    scenario = children[0].get("scenario") if len(children) == 1 else None
    if not scenario or scenario.get("examples") or (scenario.get("description") or "").strip():
        raise InvalidInput(f"{field}: {_ONLY_STEPS}", field=field)
    if not scenario.get("steps"):
        raise InvalidInput(f"{field}: write at least one step (Given, When, Then, And, But or *)", field=field)


def _dedented(steps: str) -> list[str]:
    lines = steps.splitlines()
    margin = min((len(line) - len(line.lstrip(" \t")) for line in lines if line.strip()), default=0)
    return [line[margin:] for line in lines]


def expand(text: str, steps_by_name: Mapping[str, str], *, strict: bool = False, field: str = "bdd_content",
           limit: int = EXPANDED_TEXT_LIMIT) -> str:
    """``text`` with every ``* shared: <name>`` line replaced by that shared step's steps (nested ones too).

    ``strict`` (a save): an unknown name, a cycle or an expansion past ``limit`` characters is an
    ``InvalidInput`` naming ``field``. Otherwise (reading a stored case) such a line stays as it is.
    """
    if "shared:" not in text:
        return text
    try:
        return _expand(text, steps_by_name, strict, field, limit)
    except _TooLong:
        if strict:
            raise InvalidInput(f"{field} expands with its shared steps to more than {limit:,} characters",
                               field=field) from None
        return text  # a stored case grown past the limit by later edits: shown as written


class _TooLong(Exception):
    pass


def _expand(text: str, steps_by_name: Mapping[str, str], strict: bool, field: str, limit: int) -> str:
    out: list[str] = []
    size = 0

    def walk(source: str, indent: str, chain: tuple[str, ...]) -> None:
        nonlocal size
        for line, name, own_indent in _lines(source):
            if name is None:
                size += len(indent) + len(line) + 1
                out.append(indent + line if line.strip() else line)
            elif name in chain:
                if strict:
                    path = " → ".join((*chain[chain.index(name):], name))
                    raise InvalidInput(f"{field}: shared step {name!r} uses itself ({path})", field=field)
                out.append(indent + line)
                size += len(indent) + len(line) + 1
            elif name not in steps_by_name:
                if strict:
                    raise InvalidInput(f"{field}: no shared step named {name!r} in this project", field=field)
                out.append(indent + line)
                size += len(indent) + len(line) + 1
            else:
                inner = indent + own_indent
                out.append(f"{inner}{BEGIN}{name}")
                walk("\n".join(_dedented(steps_by_name[name])), inner, (*chain, name))
                out.append(f"{inner}{END}{name}")
                size += 2 * (len(inner) + len(BEGIN) + len(name) + 1)
            if size > limit:
                raise _TooLong

    walk(text, "", ())
    return "\n".join(out) + "\n"


def markers(comments: list[dict[str, object]]) -> list[tuple[int, int, str]]:
    """(first line, last line, name) of each outermost expanded shared step, from the parsed document's
    comments (the marker lines ``expand`` wrote)."""
    spans: list[tuple[int, int, str]] = []
    depth = 0
    start, current = 0, ""
    for comment in comments:
        text = str(comment.get("text", "")).strip()
        location = comment.get("location")
        line = int(location.get("line", 0)) if isinstance(location, dict) else 0
        if text.startswith(BEGIN):
            if depth == 0:
                start, current = line, text[len(BEGIN):]
            depth += 1
        elif text.startswith(END) and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append((start, line, current))
    return spans


def origin(spans: list[tuple[int, int, str]], line: int) -> str | None:
    """The shared step a step at ``line`` comes from (``spans`` in order of their first line)."""
    at = bisect_right(spans, (line, line, "")) - 1
    if at >= 0 and spans[at][0] < line < spans[at][1]:
        return spans[at][2]
    return None


def shared_line_numbers(text: str) -> set[int]:
    """The (1-based) lines of an expanded text that a shared step wrote, its marker lines included:
    the case page marks them."""
    lines: set[int] = set()
    depth = 0
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith(BEGIN):
            depth += 1
        if depth:
            lines.add(number)
        if stripped.startswith(END) and depth:
            depth -= 1
    return lines


def fits_by_lines(expanded: str, limit: int) -> bool:
    """Whether an expanded case surely stays within ``limit`` checklist steps without parsing it: with
    no Examples, no Rule (whose Background repeats) and no other language, each step is a line of its
    own, so ``limit`` lines are enough. False means "parse to know"."""
    repeats = "Examples" in expanded or "Rule" in expanded or "language" in expanded
    return not repeats and expanded.count("\n") <= limit
