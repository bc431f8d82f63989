"""SQL of test_results (linked to a case) and unlinked_test_results (naming no case); tenant-filtered."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import msgspec
from msgspec.structs import astuple

from tms.db import Database, Row, Transaction

_triples = msgspec.json.Decoder(list[tuple[str, str, str]])


class LinkedRow(msgspec.Struct, gc=False):
    """A row of test_results (a result of a library case); the field order is the column order.

    Built by ``tms.services.result_rows.linked_row``; a new column is a new field here (and there).
    """

    id: str
    tenant_id: str
    run_id: str
    test_case_id: str
    test_case_code: str
    title: str | None
    status: str
    comment: str | None
    bug_ticket_key: str | None
    bug_ticket_url: str | None
    duration_ms: int | None
    framework: str | None
    error_message: str | None
    error_stack: str | None
    executed_at: str | None
    created_at: str
    updated_at: str
    fingerprint: str | None  # FAILED/BROKEN only: tms.services.fingerprints
    passed_on_retry: int     # 1: an earlier attempt failed, the last passed (flaky evidence)


class UnlinkedRow(msgspec.Struct, gc=False):
    """A row of unlinked_test_results (an ingested result naming no case); field order = column order.

    Built by ``tms.services.result_rows.unlinked_row``.
    """

    id: str
    tenant_id: str
    project_id: str
    run_id: str
    title: str | None
    status: str
    comment: str | None
    bug_ticket_key: str | None
    bug_ticket_url: str | None
    duration_ms: int | None
    framework: str | None
    error_message: str | None
    error_stack: str | None
    executed_at: str | None
    created_at: str
    updated_at: str
    fingerprint: str | None
    passed_on_retry: int


LINKED_COLUMNS: tuple[str, ...] = LinkedRow.__struct_fields__
UNLINKED_COLUMNS: tuple[str, ...] = UnlinkedRow.__struct_fields__


def _parameters(rows: Iterable[LinkedRow] | Iterable[UnlinkedRow]) -> Iterator[tuple[Any, ...]]:
    """The one place a named row becomes executemany's positional parameters (a C call per row)."""
    return map(astuple, rows)


# Last write wins: every reported field is replaced; id and created_at stay those of the first write.
_UPSERT = (
    f"INSERT INTO test_results ({', '.join(LINKED_COLUMNS)}) VALUES ({', '.join('?' * len(LINKED_COLUMNS))}) "
    "ON CONFLICT (run_id, test_case_id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in LINKED_COLUMNS if c not in ("id", "tenant_id", "run_id",
                                                                             "test_case_id", "created_at"))
)
_INSERT_UNLINKED = (
    f"INSERT INTO unlinked_test_results ({', '.join(UNLINKED_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(UNLINKED_COLUMNS))})"
)
_LIST_COLUMNS = (
    "id, test_case_id, test_case_code, title, status, comment, bug_ticket_key, bug_ticket_url, duration_ms, "
    "framework, error_message, error_stack, executed_at, created_at, updated_at, fingerprint"
)
_UNLINKED_LIST_COLUMNS = _LIST_COLUMNS.replace("test_case_id, test_case_code", "NULL AS test_case_id, "
                                               "NULL AS test_case_code")


async def upsert_linked(tx: Transaction, rows: Iterable[LinkedRow]) -> None:
    """One executemany for the whole batch, whatever its size."""
    await tx.executemany(_UPSERT, _parameters(rows))


async def insert_unlinked(tx: Transaction, rows: Iterable[UnlinkedRow]) -> None:
    await tx.executemany(_INSERT_UNLINKED, _parameters(rows))


async def current_for_cases(tx: Transaction, run_id: str, case_ids: list[str]) -> dict[str, tuple[str, str]]:
    """test_case_id -> (result id, status) of the run's existing rows for these cases.

    Fetched as one JSON array built by SQLite (see store.cases._resolve): no Python row per result.
    """
    if not case_ids:
        return {}
    packed = await tx.fetch_value(
        "SELECT json_group_array(json_array(test_case_id, id, status)) FROM test_results WHERE run_id = ? "
        "AND test_case_id IN (SELECT value FROM json_each(?))",
        (run_id, json.dumps(case_ids)),
    )
    return {case_id: (result_id, status) for case_id, result_id, status in _triples.decode(packed or "[]")}


async def list_for_run(db: Database, tenant_id: str, run_id: str) -> list[Row]:
    """Every row of the run: linked ones first, then unlinked, each in the order they were stored."""
    linked = await db.fetch_all(
        f"SELECT {_LIST_COLUMNS} FROM test_results WHERE run_id = ? AND tenant_id = ? ORDER BY rowid",
        (run_id, tenant_id),
    )
    unlinked = await db.fetch_all(
        f"SELECT {_UNLINKED_LIST_COLUMNS} FROM unlinked_test_results WHERE run_id = ? AND tenant_id = ? "
        "ORDER BY rowid",
        (run_id, tenant_id),
    )
    return linked + unlinked


async def delete_unlinked_before(tx: Transaction, tenant_id: str, cutoff: str, batch: int) -> int:
    """Deletes up to ``batch`` unlinked rows of the tenant created at or before ``cutoff``."""
    return await tx.execute(
        "DELETE FROM unlinked_test_results WHERE rowid IN (SELECT rowid FROM unlinked_test_results "
        "WHERE tenant_id = ? AND created_at <= ? LIMIT ?)",
        (tenant_id, cutoff, batch),
    )


async def tenants_with_unlinked_results(db: Database) -> list[str]:
    """Tenants that hold any unlinked result (read off the sweep index, one entry per tenant)."""
    rows = await db.fetch_all("SELECT DISTINCT tenant_id FROM unlinked_test_results")
    return [row["tenant_id"] for row in rows]
