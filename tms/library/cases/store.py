"""SQL of the test_cases table; every query filters on tenant_id."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from tms.db import Database, Row, Transaction
from tms.db.paging import equality_filters, page_in_creation_order

COLUMNS = (
    "id, code, title, bdd_content, project_id, status, priority, layer, is_e2e, automation_status, "
    "tags, tickets, created_at, updated_at, section_id, version, custom_fields"
)
INSERT_COLUMNS = ("id", "tenant_id", *[c.strip() for c in COLUMNS.split(",")[1:]])
# What reads return: the retest flag (migration 0008) is set and cleared by tms.failures.retest.service only.
READ_COLUMNS = (COLUMNS + ", needs_retest, retest_reason, retest_bug_key, retest_flagged_at"
                # the review (migration 0038) is set by tms.library.cases.review only
                ", review_state, reviewer_id, review_author_id, review_comment, review_updated_at")

# Columns a PATCH may set (the dict keys given to update_case are checked against this).
UPDATABLE = frozenset(
    {"code", "title", "bdd_content", "project_id", "status", "priority", "layer", "is_e2e",
     "automation_status", "tags", "tickets", "section_id", "custom_fields"}
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


# Rows per INSERT statement of a bulk insert. One statement per row (executemany) costs a statement
# savepoint per row, and on each one FTS5 writes its pending terms to disk as a new segment (the
# insert trigger feeds test_cases_fts): 20,000 imported cases took ~10 s that way, ~2.8 s in
# statements of 500 rows. 500 rows x 17 columns stays well under SQLite's 32,766 host parameters.
INSERT_CHUNK = 500


async def insert_cases(tx: Transaction, rows: Iterable[Sequence[Any]]) -> None:
    """Rows in ``INSERT_COLUMNS`` order, in multi-row INSERT statements of ``INSERT_CHUNK`` rows."""
    rows = list(rows)
    one = "(" + ", ".join("?" * len(INSERT_COLUMNS)) + ")"
    for start in range(0, len(rows), INSERT_CHUNK):
        chunk = rows[start : start + INSERT_CHUNK]
        await tx.execute(
            f"INSERT INTO test_cases ({', '.join(INSERT_COLUMNS)}) VALUES {', '.join([one] * len(chunk))}",
            [value for row in chunk for value in row],
        )


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


async def versions_of(db: Database | Transaction, tenant_id: str, ids: list[str]) -> dict[str, int]:
    """id -> current version of those of these case ids that exist in the tenant (one query)."""
    if not ids:
        return {}
    rows = await db.fetch_all(
        "SELECT id, version FROM test_cases WHERE +tenant_id = ? AND id IN (SELECT value FROM json_each(?))",
        (tenant_id, json.dumps(ids)),
    )
    return {row["id"]: row["version"] for row in rows}


async def resolve_ids(db: Database | Transaction, tenant_id: str, ids: list[str]) -> list[Row]:
    # "+tenant_id": look ids up by primary key; otherwise the planner may walk the tenant's whole index
    return await _resolve(
        db,
        "SELECT json_group_array(json_array(id, code, title)) FROM test_cases "
        "WHERE +tenant_id = ? AND id IN (SELECT value FROM json_each(?))",
        tenant_id,
        ids,
    )


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
    """Per-case new values of ``columns`` (dicts with ``id``, ``tenant_id``, ``updated_at``); each counts a
    new version. One UPDATE ... FROM a VALUES list per ``INSERT_CHUNK`` cases (not one statement per
    case: see INSERT_CHUNK for what that costs the full-text index)."""
    if set(columns) - UPDATABLE:
        raise ValueError(f"not updatable: {sorted(set(columns) - UPDATABLE)}")
    names = ["id", "tenant_id", "updated_at", *columns]
    one = "(" + ", ".join("?" * len(names)) + ")"
    assignments = ", ".join([*(f"{column} = v.{column}" for column in columns), "updated_at = v.updated_at",
                             "version = test_cases.version + 1"])
    for start in range(0, len(rows), INSERT_CHUNK):
        chunk = rows[start : start + INSERT_CHUNK]
        await tx.execute(
            f"WITH v ({', '.join(names)}) AS (VALUES {', '.join([one] * len(chunk))}) "
            f"UPDATE test_cases SET {assignments} FROM v "
            "WHERE test_cases.id = v.id AND test_cases.tenant_id = v.tenant_id",
            [row[name] for row in chunk for name in names],
        )


async def bump_versions(tx: Transaction, tenant_id: str, ids: list[str], at: str) -> None:
    """A new version of each case, nothing else changed (what its text expands to did: shared steps)."""
    if ids:
        await tx.execute("UPDATE test_cases SET version = version + 1, updated_at = ? "
                         "WHERE +tenant_id = ? AND id IN (SELECT value FROM json_each(?))",
                         (at, tenant_id, json.dumps(ids)))


async def delete_many(tx: Transaction, tenant_id: str, ids: list[str]) -> int:
    return await tx.execute(
        "DELETE FROM test_cases WHERE +tenant_id = ? AND id IN (SELECT value FROM json_each(?))",
        (tenant_id, json.dumps(ids)),
    )



REVIEW_COLUMNS = frozenset({"review_state", "reviewer_id", "review_author_id", "review_comment", "review_updated_at",
                            "status", "updated_at"})


async def set_review(tx: Transaction, tenant_id: str, case_id: str, changes: dict[str, Any]) -> int:
    """Sets a case's review columns (and its status when an approval makes it READY)."""
    unknown = set(changes) - REVIEW_COLUMNS
    if unknown:
        raise ValueError(f"not review columns: {sorted(unknown)}")
    assignments = ", ".join(f"{column} = ?" for column in changes)
    return await tx.execute(f"UPDATE test_cases SET {assignments} WHERE tenant_id = ? AND id = ?",
                            (*changes.values(), tenant_id, case_id))


async def waiting_for_review(db: Database, tenant_id: str, reviewer_id: str, limit: int, offset: int,
                             ) -> tuple[list[Row], int]:
    """The open review requests of one reviewer, newest first (index test_cases_review_waiting)."""
    where = "tenant_id = ? AND reviewer_id = ? AND review_state = 'REQUESTED'"
    rows = await db.fetch_all(
        f"SELECT {READ_COLUMNS} FROM test_cases WHERE {where} ORDER BY review_updated_at DESC, id DESC "
        "LIMIT ? OFFSET ?", (tenant_id, reviewer_id, limit, offset))
    total = int(await db.fetch_value(f"SELECT COUNT(*) FROM test_cases WHERE {where}", (tenant_id, reviewer_id)))
    return rows, total


async def reopen_approved(tx: Transaction, tenant_id: str, ids: list[str], author_id: str | None, at: str) -> list[str]:
    """An edit of approved cases asks for their review again (REQUESTED, same reviewer, the editor as
    author); in a project with require_review a READY one goes back to DRAFT. Returns the ids reopened."""
    rows = await tx.fetch_all(
        "UPDATE test_cases SET review_state = 'REQUESTED', review_author_id = ?, review_comment = NULL, "
        "review_updated_at = ?, status = CASE WHEN status = 'READY' AND project_id IN ("
        "SELECT id FROM projects WHERE tenant_id = ? AND require_review = 1) THEN 'DRAFT' ELSE status END "
        "WHERE tenant_id = ? AND review_state = 'APPROVED' AND id IN (SELECT value FROM json_each(?)) RETURNING id",
        (author_id, at, tenant_id, tenant_id, json.dumps(ids)))
    return [row["id"] for row in rows]


async def mark_drafted(tx: Transaction, tenant_id: str, ids: list[str], author_id: str | None, at: str) -> None:
    """AI-drafted cases of projects with require_review arrive needing review (REQUESTED, no reviewer yet)."""
    await tx.execute(
        "UPDATE test_cases SET review_state = 'REQUESTED', review_author_id = ?, review_updated_at = ? "
        "WHERE tenant_id = ? AND id IN (SELECT value FROM json_each(?)) AND project_id IN ("
        "SELECT id FROM projects WHERE tenant_id = ? AND require_review = 1)",
        (author_id, at, tenant_id, json.dumps(ids), tenant_id))


# A write of this many cases or more refreshes the planner's statistics of the library's tables
STATISTICS_AFTER = 1000
LIBRARY_TABLES = ["test_cases", "case_field_values", "case_tags"]


async def refresh_statistics_after(db: Database, written: int) -> None:
    """After a bulk write of ``written`` cases (committed): the planner learns the library's new size."""
    if written >= STATISTICS_AFTER:
        await db.refresh_statistics(LIBRARY_TABLES)
