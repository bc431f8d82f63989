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
    "tags, tickets, created_at, updated_at"
)
INSERT_COLUMNS = ("id", "tenant_id", *[c.strip() for c in COLUMNS.split(",")[1:]])
# What reads return: the retest flag (migration 0008) is set and cleared by tms.services.retest only.
READ_COLUMNS = COLUMNS + ", needs_retest, retest_reason, retest_bug_key, retest_flagged_at"

# Columns a PATCH may set (the dict keys given to update_case are checked against this).
UPDATABLE = frozenset(
    {"code", "title", "bdd_content", "project_id", "status", "priority", "layer", "is_e2e",
     "automation_status", "tags", "tickets"}
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
    unknown = set(changes) - UPDATABLE - {"updated_at"}
    if unknown:
        raise ValueError(f"not updatable: {sorted(unknown)}")
    assignments = ", ".join(f"{column} = ?" for column in changes)
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
