"""SQLite-flavoured SQL to PostgreSQL: the mechanical differences, rewritten once per statement text.

Store modules keep one statement for both backends wherever the two differ only in spelling; what
differs in meaning (full-text search, bare columns beside an aggregate, date arithmetic …) is
written twice in the store module, side by side, and chosen by ``dialect``. What is rewritten here:

* parameters: ``?``, ``?NNN`` and ``:name`` become ``$1 … $n`` (a repeated ``:name`` keeps its number);
* ``INSERT OR IGNORE INTO`` becomes ``INSERT INTO … ON CONFLICT DO NOTHING``;
* ``json_each(x)`` (as a set of values) becomes ``json_array_elements_text(CAST(x AS json))``;
* SQLite's index hints ``+column`` lose their ``+``;
* ``a IS ?`` / ``a IS NOT ?`` become ``IS [NOT] DISTINCT FROM``;
* ``json_array``/``json_object`` become ``json_build_array``/``json_build_object`` (the baseline
  migration gives PostgreSQL SQLite's ``json_group_array`` and ``SUM(boolean)`` under their names);
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
    (re.compile(r"\bjson_each\(\s*([^()]+?)\s*\)", re.I), r"json_array_elements_text(CAST(\1 AS json))"),
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
_INSERT_OR_IGNORE = re.compile(r"\bINSERT\s+OR\s+IGNORE\s+INTO\b", re.I)
_RETURNING = re.compile(r"\bRETURNING\b", re.I)


@functools.lru_cache(maxsize=4096)
def to_postgres(sql: str) -> tuple[str, tuple[str, ...] | None]:
    """The PostgreSQL text of ``sql`` and, for ``:name`` parameters, the names in ``$n`` order."""
    parts = _SEGMENTS.split(sql)
    ignore = False
    for index in range(0, len(parts), 2):  # even parts are code, odd ones literals
        code = parts[index]
        if _INSERT_OR_IGNORE.search(code):
            ignore = True
            code = _INSERT_OR_IGNORE.sub("INSERT INTO", code)
        for pattern, replacement in _REWRITES:
            code = pattern.sub(replacement, code)
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
    text = "".join(parts).strip().rstrip(";")
    if ignore:
        returning = _RETURNING.search(text)
        if returning:
            text = f"{text[:returning.start()]}ON CONFLICT DO NOTHING {text[returning.start():]}"
        else:
            text = f"{text} ON CONFLICT DO NOTHING"
    if names and positional:
        raise ValueError(f"mixes ? and :name parameters: {sql}")
    return text, (tuple(names) if names else None)
