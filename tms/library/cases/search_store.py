"""SQL of the library's case lists: sorts, filters, facets and full-text search over test_cases (the
page and its total). Every query filters on tenant_id. The rest of the test_cases SQL is ``store``."""

from __future__ import annotations

import json
import re
from typing import Any

from tms.db import Database, Row
from tms.db.paging import equality_filters
from tms.library.cases.store import READ_COLUMNS

# Sort keys of the library lists: what a request may name -> the SQL expression (never request text).
PRIORITY_RANK = "CASE priority WHEN 'CRITICAL' THEN 4 WHEN 'HIGH' THEN 3 WHEN 'MEDIUM' THEN 2 ELSE 1 END"
SORTS = {
    "created_at": "rowid",
    "code": "code",
    "title": "title COLLATE NOCASE",
    "status": "status",
    "priority": PRIORITY_RANK,
    "automation_status": "automation_status",
    "layer": "layer",
    "updated_at": "updated_at",
}
# The (tenant_id, project_id, <sort key>) index of each sort: a page of many matches sorted by it walks
# the index in order and stops after the page, instead of reading and sorting every match.
SORT_INDEXES = {
    "title": "test_cases_project_title",
    "status": "test_cases_tenant_project_status",
    "priority": "test_cases_project_priority_rank",
    "automation_status": "test_cases_project_automation",
    "layer": "test_cases_project_layer",
    "updated_at": "test_cases_project_updated",
}
# Below this many matches, reading them all and sorting is cheaper than walking a sort index.
WALK_SORT_INDEX_FROM = 2000
# A subtree of more sections than this is filtered by SQL (section ids), not by one FTS token each.
MAX_SECTION_TOKENS = 500
# Fields kept as facet tokens in test_cases_fts (migration 0023): filter -> the token's letter.
FACET_LETTERS = {"status": "s", "priority": "p", "automation_status": "a", "layer": "l"}


def facet(letter: str, value: str | None) -> str:
    """A facet token of test_cases_fts as an FTS5 phrase: "x" + letter + the value's UTF-8 in hex + "0".

    Built exactly as migration 0023's triggers build it (SQLite's hex() of NULL is '', so a null value
    is "x<letter>0"); hex and the final digit keep it one token the stemmer never changes.
    """
    return f'"x{letter}{(value or "").encode().hex()}0"'


def scope_facet(tenant_id: str, project_id: str | None) -> str:
    """The token of a tenant's cases, or of one project's (tenant and project in one token)."""
    if project_id is None:
        return facet("n", tenant_id)
    return facet("j", f"{tenant_id} {project_id}")


def words_match(words: list[str]) -> str:
    """Every word must match in the text columns (the last one also as a prefix, for type-ahead).

    Each word is a quoted phrase (a double quote in it doubled, FTS5's escape), so nothing in it is
    FTS5 syntax. A NUL character separates words (FTS5 reads its query as a C string: a NUL in it was
    an "unterminated string" error), as it does in ``words_tsquery``, whose lexemes are runs of ``\\w``;
    a piece without a letter or digit is left out (an empty phrase would match nothing), at most 20.
    """
    pieces = [piece for word in words for piece in word.split("\x00") if re.search(r"\w", piece)][:20] or [""]
    phrases = ['"' + piece.replace('"', '""') + '"' for piece in pieces]
    phrases[-1] += "*"
    return f'{{code title bdd_content tags tickets fields}} : ({" AND ".join(phrases)})'


def words_tsquery(words: list[str]) -> str:
    """The PostgreSQL twin of ``words_match``: every word (the last also as a prefix) as a tsquery.

    Words are cut into runs of letters and digits, as both full-text indexes tokenize text, and each
    run is a quoted lexeme, so nothing the user typed is tsquery syntax.
    """
    lexemes = [token for word in words for token in re.findall(r"\w+", word)] or ["_"]
    quoted = [f"'{lexeme}'" for lexeme in lexemes]
    quoted[-1] += ":*"
    return " & ".join(quoted)


async def _section_list(
    db: Database, tenant_id: str, section_ids: list[str] | None, section_range: tuple[str, str, str] | None
) -> list[str] | None:
    """The sections a section filter allows, as a list (None when it is not filtered or too long)."""
    if section_range is None:
        return section_ids
    rows = await db.fetch_all(
        "SELECT id FROM sections WHERE tenant_id = ? AND project_id = ? AND path >= ? AND path < ? LIMIT ?",
        (tenant_id, *section_range, MAX_SECTION_TOKENS + 1),
    )
    ids = [row["id"] for row in rows]
    return ids if len(ids) <= MAX_SECTION_TOKENS else None


def _facet_match(
    tenant_id: str, equals: dict[str, str | None], words: list[str] | None, tags: list[str] | None,
    sections: list[str] | None, unfiled: bool,
) -> str:
    """One FTS5 query holding every filter: scope AND words AND each equality AND any tag AND any section."""
    parts = [scope_facet(tenant_id, equals.get("project_id"))]
    for field, letter in FACET_LETTERS.items():
        if equals.get(field) is not None:
            parts.append(facet(letter, equals[field]))
    if tags:
        parts.append("(" + " OR ".join(facet("t", tag) for tag in tags) + ")")
    if unfiled:
        parts.append(facet("c", None))
    elif sections is not None:
        parts.append("(" + " OR ".join(facet("c", section) for section in sections) + ")")
    match = "facets : (" + " AND ".join(parts) + ")"
    if words:
        match += " AND " + words_match(words)
    return match


async def search_cases(
    db: Database,
    tenant_id: str,
    *,
    equals: dict[str, str | None],
    words: list[str] | None = None,
    tags: list[str] | None = None,
    section_ids: list[str] | None = None,
    section_range: tuple[str, str, str] | None = None,
    unfiled: bool = False,
    needs_retest: bool | None = None,
    sort: str = "created_at",
    descending: bool = False,
    limit: int,
    offset: int,
    ids_only: bool = False,
    conditions: list[tuple[str, list[Any]]] | None = None,
    field_rows: list[tuple[str, list[Any]]] | None = None,
) -> tuple[list[Row], int]:
    """A page of the library and the number of cases matching every filter given.

    Two ways to answer, chosen by the filters:
    - words (``q``), tags, or two filters or more: ONE FTS5 query over test_cases_fts, whose facet
      tokens (migration 0023) hold tenant, project, status, priority, automation status, layer, section
      and tags beside the text. The page and the count come from the index's doclists, in rowid order,
      without visiting the rows that are not on the page.
    - no filter or one (project, status, a section, a subtree, the retest flag): a (tenant, project,
      column) index, a section index, or the range of a subtree's paths.
    ``section_range`` = (project_id, low path, high path) of a subtree. ``section_ids`` is checked by
    the caller (it belongs to the tenant). ``conditions`` are more SQL conditions on test_cases with their
    parameters; they take the SQL path. ``field_rows`` are custom field filters, each a ``SELECT case_rowid``
    of case_field_values (``field_store.value_rows``): alone with a project, they are the page and the count
    (``_field_page``), else conditions of the SQL path.
    """
    if field_rows and _fields_alone(equals, words, tags, section_ids, section_range, unfiled, needs_retest,
                                    sort, conditions, ids_only):
        return await _field_page(db, tenant_id, field_rows, descending, limit, offset)
    conditions = [*((f"rowid IN ({sql})", params) for sql, params in field_rows or []), *(conditions or [])]
    extra = sum(1 for k, v in equals.items() if k != "project_id" and v is not None)
    extra += bool(section_ids is not None or section_range is not None or unfiled)
    # PostgreSQL combines its B-tree, case_tags and full-text (GIN) indexes in one bitmap scan by itself:
    # the facet tokens are SQLite's way to the same, so it always takes the SQL path
    if db.dialect == "sqlite" and needs_retest is None and not conditions and (words or tags or extra >= 2):
        sections = await _section_list(db, tenant_id, section_ids, section_range)
        if sections == []:
            return [], 0
        if sections is not None or section_range is None:
            match = _facet_match(tenant_id, equals, words, tags, sections, unfiled)
            return await _facet_page(db, tenant_id, equals.get("project_id"), match, sort, descending, limit,
                                     offset, ids_only)
    return await _sql_page(db, tenant_id, equals, words, tags, section_ids, section_range, unfiled, needs_retest,
                           sort, descending, limit, offset, ids_only, conditions or [])


def _fields_alone(equals: dict[str, str | None], words: list[str] | None, tags: list[str] | None,
                  section_ids: list[str] | None, section_range: tuple[str, str, str] | None, unfiled: bool,
                  needs_retest: bool | None, sort: str, conditions: list[tuple[str, list[Any]]] | None,
                  ids_only: bool) -> bool:
    """Whether custom field filters in one project are the only filters of a list in creation order."""
    others = any(value is not None for key, value in equals.items() if key != "project_id")
    return (equals.get("project_id") is not None and not others and not words and not tags and section_ids is None
            and section_range is None and not unfiled and needs_retest is None and sort == "created_at"
            and not conditions and not ids_only)


async def _field_page(db: Database, tenant_id: str, field_rows: list[tuple[str, list[Any]]], descending: bool,
                      limit: int, offset: int) -> tuple[list[Row], int]:
    """A page of the cases matching every custom field filter of one project, and their number.

    case_field_values holds each case's project (migration 0043), so a filter's rows ARE cases of the
    project: the page's rowids come off its index in order and the count is the index range's length,
    no case row checked (100,000 cases, a value held by 1 in 5: count 60 -> 1 ms). More filters keep
    the first one's rows that are among theirs (an INTERSECT sorted its result again for the page: 38
    against 10 ms for two filters, 1 in 5 and 1 in 8).
    """
    first, *others = [sql for sql, _ in field_rows]
    matching = f"SELECT case_rowid FROM ({first}) f"
    if others:
        matching += " WHERE " + " AND ".join(f"case_rowid IN ({sql})" for sql in others)
    params = [value for _, values in field_rows for value in values]
    direction = "DESC" if descending else "ASC"
    rows = await db.fetch_all(
        f"SELECT {READ_COLUMNS} FROM test_cases WHERE rowid IN (SELECT case_rowid FROM ({matching}) m "
        f"ORDER BY case_rowid {direction} LIMIT ? OFFSET ?) AND tenant_id = ? ORDER BY rowid {direction}",
        (*params, limit, offset, tenant_id),
    )
    total = _total(rows, limit, offset)
    if total is None:
        total = int(await db.fetch_value(f"SELECT COUNT(*) FROM ({matching}) m", params))
    return rows, total


def _total(rows: list[Row], limit: int, offset: int) -> int | None:
    """The total when the page itself tells it (a short page that is not past the end), else None."""
    if len(rows) < limit and (rows or offset == 0):
        return offset + len(rows)
    return None


_FTS = "SELECT rowid FROM test_cases_fts WHERE test_cases_fts MATCH ?"


async def _facet_page(
    db: Database, tenant_id: str, project_id: str | None, match: str, sort: str, descending: bool, limit: int,
    offset: int, ids_only: bool,
) -> tuple[list[Row], int]:
    direction = "DESC" if descending else "ASC"
    if ids_only:
        rows = await db.fetch_all(
            f"SELECT id FROM test_cases WHERE rowid IN ({_FTS}) AND tenant_id = ? ORDER BY rowid", (match, tenant_id)
        )
        return rows, len(rows)
    if sort == "created_at":
        rows = await db.fetch_all(
            f"SELECT {READ_COLUMNS} FROM test_cases WHERE rowid IN ({_FTS} ORDER BY rowid {direction} LIMIT ? "
            f"OFFSET ?) AND tenant_id = ? ORDER BY rowid {direction}",
            (match, limit, offset, tenant_id),
        )
        total = _total(rows, limit, offset)
        if total is None:
            total = int(await db.fetch_value("SELECT COUNT(*) FROM test_cases_fts WHERE test_cases_fts MATCH ?",
                                             (match,)))
        return rows, total
    # sorted by a column: the count first, it decides between sorting the matches and walking an index
    total = int(await db.fetch_value("SELECT COUNT(*) FROM test_cases_fts WHERE test_cases_fts MATCH ?", (match,)))
    if total == 0 or offset >= total:
        return [], total
    index = SORT_INDEXES.get(sort)
    walk = index is not None and project_id is not None and total >= WALK_SORT_INDEX_FROM
    scope = "tenant_id = ? AND project_id = ?" if walk else "tenant_id = ?"
    params: tuple[Any, ...] = (tenant_id, project_id) if walk else (tenant_id,)
    rows = await db.fetch_all(
        f"SELECT {READ_COLUMNS} FROM test_cases {f'INDEXED BY {index} ' if walk else ''}"
        f"WHERE {scope} AND rowid IN ({_FTS}) ORDER BY {SORTS[sort]} {direction}, rowid {direction} LIMIT ? OFFSET ?",
        (*params, match, limit, offset),
    )
    return rows, total


async def _sql_page(
    db: Database, tenant_id: str, equals: dict[str, str | None], words: list[str] | None, tags: list[str] | None,
    section_ids: list[str] | None, section_range: tuple[str, str, str] | None, unfiled: bool,
    needs_retest: bool | None, sort: str, descending: bool, limit: int, offset: int, ids_only: bool,
    conditions: list[tuple[str, list[Any]]],
) -> tuple[list[Row], int]:
    where, params = equality_filters(tenant_id, **equals)
    for condition, values in conditions:
        where.append(condition)
        params += values
    if words and db.dialect == "postgres":
        where.append("search @@ to_tsquery('english', ?)")
        params.append(words_tsquery(words))
    elif words:
        where.append(f"rowid IN ({_FTS})")
        params.append(_facet_match(tenant_id, {"project_id": equals.get("project_id")}, words, None, None, False))
    if tags:
        where.append(
            "rowid IN (SELECT case_rowid FROM case_tags WHERE tenant_id = ? "
            "AND tag IN (SELECT value FROM json_each(?)))"
        )
        params += [tenant_id, json.dumps(tags)]
    if section_ids is not None:
        if len(section_ids) == 1:
            where.append("section_id = ?")
            params.append(section_ids[0])
        else:
            where.append("section_id IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(section_ids))
    if section_range is not None:
        where.append(
            "section_id IN (SELECT id FROM sections WHERE tenant_id = ? AND project_id = ? AND path >= ? AND path < ?)"
        )
        params += [tenant_id, *section_range]
    if unfiled:
        where.append("section_id IS NULL")
    if needs_retest is not None:
        where.append("needs_retest = 1" if needs_retest else "needs_retest = 0")
    condition = " AND ".join(where)
    if ids_only:  # every match (bulk actions on "all matching"): ids only, no page, no count
        rows = await db.fetch_all(f"SELECT id FROM test_cases WHERE {condition} ORDER BY rowid", params)
        return rows, len(rows)
    direction = "DESC" if descending else "ASC"
    order = SORTS[sort]
    if order == "rowid":
        # read the page's rowids off the index first (no table rows for the skipped ones)
        rows = await db.fetch_all(
            f"SELECT {READ_COLUMNS} FROM test_cases WHERE rowid IN (SELECT rowid FROM test_cases WHERE {condition} "
            f"ORDER BY rowid {direction} LIMIT ? OFFSET ?) ORDER BY rowid {direction}",
            (*params, limit, offset),
        )
    else:
        rows = await db.fetch_all(
            f"SELECT {READ_COLUMNS} FROM test_cases WHERE {condition} ORDER BY {order} {direction}, rowid {direction} "
            "LIMIT ? OFFSET ?",
            (*params, limit, offset),
        )
    total = _total(rows, limit, offset)
    if total is None and len(where) == 2 and equals.get("project_id") is not None:
        # the whole project: the sum of its per-section counters (at most one row per section)
        total = int(await db.fetch_value(
            "SELECT coalesce(sum(cases), 0) FROM section_case_counts WHERE tenant_id = ? AND project_id = ?",
            (tenant_id, equals["project_id"]),
        ))
    if total is None:
        total = int(await db.fetch_value(f"SELECT COUNT(*) FROM test_cases WHERE {condition}", params))
    return rows, total
