"""SQL of the test_cases table; every query filters on tenant_id."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from tms.db import Database, Row, Transaction
from tms.store.paging import equality_filters, page_in_creation_order

COLUMNS = (
    "id, code, title, bdd_content, project_id, status, priority, layer, is_e2e, automation_status, "
    "tags, tickets, created_at, updated_at, section_id, version"
)
INSERT_COLUMNS = ("id", "tenant_id", *[c.strip() for c in COLUMNS.split(",")[1:]])
# What reads return: the retest flag (migration 0008) is set and cleared by tms.services.retest only.
READ_COLUMNS = COLUMNS + ", needs_retest, retest_reason, retest_bug_key, retest_flagged_at"

# Columns a PATCH may set (the dict keys given to update_case are checked against this).
UPDATABLE = frozenset(
    {"code", "title", "bdd_content", "project_id", "status", "priority", "layer", "is_e2e",
     "automation_status", "tags", "tickets", "section_id"}
)


async def get_case(db: Database | Transaction, tenant_id: str, case_id: str) -> Row | None:
    return await db.fetch_one(f"SELECT {READ_COLUMNS} FROM test_cases WHERE tenant_id = ? AND id = ?",
                              (tenant_id, case_id))


async def get_case_by_code(db: Database | Transaction, tenant_id: str, code: str) -> Row | None:
    return await db.fetch_one(f"SELECT {READ_COLUMNS} FROM test_cases WHERE tenant_id = ? AND code = ?",
                              (tenant_id, code))


async def list_cases(
    db: Database, tenant_id: str, *, project_id: str | None, status: str | None, limit: int, offset: int,
    needs_retest: bool | None = None,
) -> tuple[list[Row], int]:
    """One page of the library in creation order, and the total matching the filters."""
    where, params = equality_filters(tenant_id, project_id=project_id, status=status)
    if needs_retest is not None:
        # a literal, not a parameter: only then can SQLite use the partial index of the retest queue
        where.append("needs_retest = 1" if needs_retest else "needs_retest = 0")
    return await page_in_creation_order(db, "test_cases", READ_COLUMNS, where, params, limit, offset)


async def insert_cases(tx: Transaction, rows: Iterable[Sequence[Any]]) -> None:
    """Rows in ``INSERT_COLUMNS`` order, one executemany."""
    marks = ", ".join("?" * len(INSERT_COLUMNS))
    await tx.executemany(f"INSERT INTO test_cases ({', '.join(INSERT_COLUMNS)}) VALUES ({marks})", rows)


async def codes_taken(db: Database | Transaction, tenant_id: str, codes: list[str]) -> set[str]:
    if not codes:
        return set()
    rows = await db.fetch_all(
        "SELECT code FROM test_cases WHERE tenant_id = ? AND code IN (SELECT value FROM json_each(?))",
        (tenant_id, json.dumps(codes)),
    )
    return {row["code"] for row in rows}


async def update_case(tx: Transaction, tenant_id: str, case_id: str, changes: dict[str, Any]) -> int:
    """Sets ``changes`` and counts a new version of the case (the caller records it in case_versions)."""
    unknown = set(changes) - UPDATABLE - {"updated_at"}
    if unknown:
        raise ValueError(f"not updatable: {sorted(unknown)}")
    assignments = ", ".join([*(f"{column} = ?" for column in changes), "version = version + 1"])
    return await tx.execute(
        f"UPDATE test_cases SET {assignments} WHERE tenant_id = ? AND id = ?",
        (*changes.values(), tenant_id, case_id),
    )


async def delete_case(tx: Transaction, tenant_id: str, case_id: str) -> int:
    return await tx.execute("DELETE FROM test_cases WHERE tenant_id = ? AND id = ?", (tenant_id, case_id))


_triples = msgspec.json.Decoder(list[tuple[str, str, str]])


async def _resolve(db: Database | Transaction, sql: str, tenant_id: str, values: list[str]) -> list[Row]:
    """(id, code, title) rows as dicts, fetched as ONE JSON array built by SQLite.

    For a 20,000-result ingest this is the difference between 20,000 Python row objects (and dicts)
    and a single string msgspec decodes in about a millisecond.
    """
    if not values:
        return []
    packed = await db.fetch_value(sql, (tenant_id, json.dumps(values)))
    return [{"id": i, "code": c, "title": t} for i, c, t in _triples.decode(packed or "[]")]


async def resolve_codes(db: Database | Transaction, tenant_id: str, codes: list[str]) -> list[Row]:
    """(id, code, title) of the cases with these codes; one query however many codes.

    The codes travel as one JSON array parameter, so there is no host-parameter limit to chunk around.
    """
    return await _resolve(
        db,
        "SELECT json_group_array(json_array(id, code, title)) FROM test_cases "
        "WHERE tenant_id = ? AND code IN (SELECT value FROM json_each(?))",
        tenant_id,
        codes,
    )


async def count_existing(db: Database | Transaction, tenant_id: str, ids: list[str]) -> int:
    """How many of these case ids exist in the tenant (primary-key lookups, one query)."""
    if not ids:
        return 0
    return int(await db.fetch_value(
        "SELECT COUNT(*) FROM test_cases WHERE +tenant_id = ? AND id IN (SELECT value FROM json_each(?))",
        (tenant_id, json.dumps(ids)),
    ))


async def resolve_ids(db: Database | Transaction, tenant_id: str, ids: list[str]) -> list[Row]:
    # "+tenant_id": look ids up by primary key; otherwise the planner may walk the tenant's whole index
    return await _resolve(
        db,
        "SELECT json_group_array(json_array(id, code, title)) FROM test_cases "
        "WHERE +tenant_id = ? AND id IN (SELECT value FROM json_each(?))",
        tenant_id,
        ids,
    )


# Sort keys of the library lists: what a request may name -> the SQL expression (never request text).
SORTS = {
    "created_at": "rowid",
    "code": "code",
    "title": "title COLLATE NOCASE",
    "status": "status",
    "priority": "CASE priority WHEN 'CRITICAL' THEN 4 WHEN 'HIGH' THEN 3 WHEN 'MEDIUM' THEN 2 ELSE 1 END",
    "automation_status": "automation_status",
    "layer": "layer",
    "updated_at": "updated_at",
}


async def search_cases(
    db: Database,
    tenant_id: str,
    *,
    equals: dict[str, str | None],
    fts_query: str | None = None,
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
) -> tuple[list[Row], int]:
    """A page of the library and the number of cases matching every filter given.

    Each filter is an index lookup: the equality filters have (tenant, project, column) indexes, ``q``
    is an FTS5 match, tags go through case_tags, a subtree is a range of section paths
    (``section_range`` = (project_id, low, high)).
    """
    where, params = equality_filters(tenant_id, **equals)
    only_words = (fts_query is not None and not ids_only and sort == "created_at" and not tags
                  and section_ids is None and section_range is None and not unfiled and needs_retest is None
                  and all(v is None for k, v in equals.items() if k != "project_id"))
    if only_words:
        # tenant, project and words are all in the FTS index: it answers the page and the count alone,
        # in rowid order, without visiting the other matches' rows
        direction = "DESC" if descending else "ASC"
        rows = await db.fetch_all(
            f"SELECT {READ_COLUMNS} FROM test_cases WHERE rowid IN (SELECT rowid FROM test_cases_fts "
            f"WHERE test_cases_fts MATCH ? ORDER BY rowid {direction} LIMIT ? OFFSET ?) AND tenant_id = ? "
            f"ORDER BY rowid {direction}",
            (fts_query, limit, offset, tenant_id),
        )
        total = await db.fetch_value("SELECT COUNT(*) FROM test_cases_fts WHERE test_cases_fts MATCH ?", (fts_query,))
        return rows, int(total)
    if fts_query is not None:
        where.append("rowid IN (SELECT rowid FROM test_cases_fts WHERE test_cases_fts MATCH ?)")
        params.append(fts_query)
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
    total = await db.fetch_value(f"SELECT COUNT(*) FROM test_cases WHERE {condition}", params)
    return rows, int(total)


async def iter_project_cases(db: Database, tenant_id: str, project_id: str, after_rowid: int, batch: int) -> list[Row]:
    """The next ``batch`` cases of a project in creation order after ``after_rowid`` (keyset paging)."""
    return await db.fetch_all(
        f"SELECT rowid AS _rowid, {COLUMNS} FROM test_cases WHERE tenant_id = ? AND project_id = ? AND rowid > ? "
        "ORDER BY rowid LIMIT ?",
        (tenant_id, project_id, after_rowid, batch),
    )


async def ids_matching(db: Database | Transaction, tenant_id: str, ids: list[str]) -> list[str]:
    rows = await db.fetch_all(
        "SELECT id FROM test_cases WHERE +tenant_id = ? AND id IN (SELECT value FROM json_each(?))",
        (tenant_id, json.dumps(ids)),
    )
    return [row["id"] for row in rows]


async def rows_by_ids(db: Database | Transaction, tenant_id: str, ids: list[str]) -> list[Row]:
    if not ids:
        return []
    return await db.fetch_all(
        f"SELECT {READ_COLUMNS} FROM test_cases WHERE +tenant_id = ? AND id IN (SELECT value FROM json_each(?)) "
        "ORDER BY rowid",
        (tenant_id, json.dumps(ids)),
    )


async def rows_by_codes(db: Database | Transaction, tenant_id: str, codes: list[str]) -> list[Row]:
    if not codes:
        return []
    return await db.fetch_all(
        f"SELECT {READ_COLUMNS} FROM test_cases WHERE tenant_id = ? AND code IN (SELECT value FROM json_each(?))",
        (tenant_id, json.dumps(codes)),
    )


async def set_fields_many(
    tx: Transaction, tenant_id: str, ids: list[str], changes: dict[str, Any], at: str
) -> list[str]:
    """Sets the same ``changes`` on many cases; only those where something differs change (and get a
    new version). Returns their ids. Two statements however many cases."""
    unknown = set(changes) - UPDATABLE
    if unknown or not changes:
        raise ValueError(f"not updatable: {sorted(unknown)}")
    differs = " OR ".join(f"{column} IS NOT ?" for column in changes)
    rows = await tx.fetch_all(
        f"SELECT id FROM test_cases WHERE +tenant_id = ? AND id IN (SELECT value FROM json_each(?)) AND ({differs})",
        (tenant_id, json.dumps(ids), *changes.values()),
    )
    changed = [row["id"] for row in rows]
    if changed:
        assignments = ", ".join(f"{column} = ?" for column in changes)
        await tx.execute(
            f"UPDATE test_cases SET {assignments}, version = version + 1, updated_at = ? "
            "WHERE +tenant_id = ? AND id IN (SELECT value FROM json_each(?))",
            (*changes.values(), at, tenant_id, json.dumps(changed)),
        )
    return changed


async def update_many(tx: Transaction, rows: list[dict[str, Any]], columns: list[str]) -> None:
    """Per-case new values of ``columns`` (dicts with ``id``, ``tenant_id``, ``updated_at``), one executemany;
    each counts a new version."""
    if set(columns) - UPDATABLE:
        raise ValueError(f"not updatable: {sorted(set(columns) - UPDATABLE)}")
    assignments = ", ".join([*(f"{column} = :{column}" for column in columns), "updated_at = :updated_at",
                             "version = version + 1"])
    await tx.executemany(
        f"UPDATE test_cases SET {assignments} WHERE tenant_id = :tenant_id AND id = :id", rows
    )


async def delete_many(tx: Transaction, tenant_id: str, ids: list[str]) -> int:
    return await tx.execute(
        "DELETE FROM test_cases WHERE +tenant_id = ? AND id IN (SELECT value FROM json_each(?))",
        (tenant_id, json.dumps(ids)),
    )

