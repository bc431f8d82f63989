"""SQLite-flavoured SQL to PostgreSQL: the mechanical differences, rewritten once per statement text.

Store modules keep one statement for both backends wherever the two differ only in spelling; what
differs in meaning (full-text search, bare columns beside an aggregate, date arithmetic …) is
written twice in the store module, side by side, and chosen by ``dialect``. What is rewritten here:

* parameters: ``?``, ``?NNN`` and ``:name`` become ``$1 … $n`` (a repeated ``:name`` keeps its number);
* ``INSERT OR IGNORE INTO`` becomes ``INSERT INTO … ON CONFLICT DO NOTHING``;
* ``CROSS JOIN t ON …`` (SQLite's join-order hint) becomes ``JOIN t ON …``;
* ``group_concat(x[, sep])`` becomes ``string_agg(CAST(x AS text), sep)`` (``','`` by default);
* SQLite's hint ``+column`` ("no index on it here") loses its ``+``: PostgreSQL's planner chooses
  better from its statistics (measured: hiding the index the same way made its plans slower);
* ``a IS ?`` / ``a IS NOT ?`` become ``IS [NOT] DISTINCT FROM``;
* ``json_array``/``json_object`` become ``json_build_array``/``json_build_object`` (the baseline
  migration gives PostgreSQL SQLite's ``json_each`` (of an array), ``json_group_array`` and
  ``SUM(boolean)`` under their names);
* ``json_extract(x, '$.key')`` becomes ``(CAST(x AS json) ->> 'key')``; two-argument (scalar)
  ``MIN``/``MAX`` become ``LEAST``/``GREATEST``;
* a subquery in FROM without an alias gets one (PostgreSQL before 16 requires it);
* ``x COLLATE NOCASE`` becomes ``lower(x)``, ``LIKE`` becomes ``ILIKE`` (SQLite's LIKE ignores case),
  ``IFNULL`` becomes ``COALESCE``, ``CAST(… AS REAL)`` a double, ``LIMIT -1`` ``LIMIT ALL``.

Nothing inside a string literal or a quoted identifier is touched.
"""

from __future__ import annotations

import functools
import re

_SEGMENTS = re.compile(r"('(?:[^']|'')*'|\"(?:[^\"]|\"\")*\")")
_PARAM = re.compile(r"\?(\d*)|(?<![:\w]):([A-Za-z_]\w*)")
_REWRITES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bCROSS\s+JOIN\s+(\w+(?:\s+AS\s+\w+)?)\s+ON\b", re.I), r"JOIN \1 ON"),
    (re.compile(r"(?<=[\s(,=])\+(?=[A-Za-z_])"), ""),
    (re.compile(r"\bIS\s+NOT\s+(\?|:[A-Za-z_]\w*)", re.I), r"IS DISTINCT FROM \1"),
    (re.compile(r"\bIS\s+(\?|:[A-Za-z_]\w*)", re.I), r"IS NOT DISTINCT FROM \1"),
    (re.compile(r"([\w.]+)\s+COLLATE\s+NOCASE", re.I), r"lower(\1)"),
    (re.compile(r"\bLIKE\b", re.I), "ILIKE"),
    (re.compile(r"\bIFNULL\(", re.I), "COALESCE("),
    (re.compile(r"\bjson_array\(", re.I), "json_build_array("),
    (re.compile(r"\bjson_object\(", re.I), "json_build_object("),
    (re.compile(r"\bAS\s+REAL\)", re.I), "AS double precision)"),
    (re.compile(r"\bLIMIT\s+-1\b", re.I), "LIMIT ALL"),
)
_JSON_EXTRACT = re.compile(r"\bjson_extract\(\s*([\w.]+)\s*,\s*'\$\.(\w+)'\s*\)", re.I)
_SCALAR_MIN_MAX = re.compile(r"\b(MIN|MAX)\(([^(),]+),([^(),]+)\)", re.I)
_NOT_AN_ALIAS = frozenset({
    "union", "all", "where", "order", "group", "limit", "offset", "join", "on", "left", "right", "inner",
    "outer", "cross", "full", "window", "having", "except", "intersect", "returning", "for",
})
_INSERT_OR_IGNORE = re.compile(r"\bINSERT\s+OR\s+IGNORE\s+INTO\b", re.I)
_RETURNING = re.compile(r"\bRETURNING\b", re.I)


@functools.lru_cache(maxsize=4096)
def to_postgres(sql: str) -> tuple[str, tuple[str, ...] | None]:
    """The PostgreSQL text of ``sql`` and, for ``:name`` parameters, the names in ``$n`` order."""
    # json_extract names its path in a literal, so it is rewritten before literals are set aside
    parts = _SEGMENTS.split(_JSON_EXTRACT.sub(r"(CAST(\1 AS json) ->> '\2')", sql))
    ignore = False
    for index in range(0, len(parts), 2):  # even parts are code, odd ones literals
        code = parts[index]
        if _INSERT_OR_IGNORE.search(code):
            ignore = True
            code = _INSERT_OR_IGNORE.sub("INSERT INTO", code)
        for pattern, replacement in _REWRITES:
            code = pattern.sub(replacement, code)
        code = _SCALAR_MIN_MAX.sub(lambda m: f"{'LEAST' if m[1].upper() == 'MIN' else 'GREATEST'}({m[2]},{m[3]})", code)
        parts[index] = code
    names: list[str] = []
    positional = 0

    def number(match: re.Match[str]) -> str:
        nonlocal positional
        explicit, name = match.group(1), match.group(2)
        if explicit:  # ?NNN: SQLite's numbered parameter, the same number in PostgreSQL
            positional = max(positional, int(explicit))
            return f"${explicit}"
        if name is None:
            positional += 1
            return f"${positional}"
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    for index in range(0, len(parts), 2):
        parts[index] = _PARAM.sub(number, parts[index])
    text = _group_concat(_alias_subqueries("".join(parts).strip().rstrip(";")))
    if ignore:
        returning = _RETURNING.search(text)
        if returning:
            text = f"{text[:returning.start()]}ON CONFLICT DO NOTHING {text[returning.start():]}"
        else:
            text = f"{text} ON CONFLICT DO NOTHING"
    if names and positional:
        raise ValueError(f"mixes ? and :name parameters: {sql}")
    return text, (tuple(names) if names else None)


_FROM_SUBQUERY = re.compile(r"\bFROM\s*\(\s*(?:SELECT|WITH|VALUES)\b", re.I)


def _alias_subqueries(text: str) -> str:
    """Gives each ``FROM (subquery)`` without an alias one (``AS _q1`` …)."""
    closing = _matching_parens(text)
    inserts: list[int] = []
    for match in _FROM_SUBQUERY.finditer(text):
        opening = text.index("(", match.start())
        end = closing.get(opening)
        if end is None:
            continue
        following = re.match(r"\s*([A-Za-z_]\w*)", text[end + 1:])
        if following is None or following.group(1).lower() in _NOT_AN_ALIAS:
            inserts.append(end + 1)
    for number, position in enumerate(sorted(inserts, reverse=True), start=1):
        text = f"{text[:position]} AS _q{number}{text[position:]}"
    return text


def _matching_parens(text: str) -> dict[int, int]:
    """Opening index -> closing index of every parenthesis outside string literals."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    quote: str | None = None
    for index, char in enumerate(text):
        if quote is not None:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "(":
            stack.append(index)
        elif char == ")" and stack:
            pairs[stack.pop()] = index
    return pairs


_GROUP_CONCAT = re.compile(r"\bgroup_concat\(", re.I)


def _group_concat(text: str) -> str:
    """``group_concat(x[, sep])`` -> ``string_agg(CAST(x AS text), sep)``, innermost last."""
    matches = list(_GROUP_CONCAT.finditer(text))
    for match in reversed(matches):
        closing = _matching_parens(text)
        opening = match.end() - 1
        end = closing[opening]
        arguments = _split_arguments(text[opening + 1:end])
        separator = arguments[1] if len(arguments) > 1 else "','"
        text = f"{text[:match.start()]}string_agg(CAST({arguments[0]} AS text), {separator}){text[end + 1:]}"
    return text


def _split_arguments(inner: str) -> list[str]:
    """Top-level comma-separated arguments (commas inside parentheses or literals do not split)."""
    arguments, depth, quote, current = [], 0, None, ""
    for char in inner:
        if quote is not None:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            arguments.append(current.strip())
            current = ""
            continue
        current += char
    arguments.append(current.strip())
    return arguments
