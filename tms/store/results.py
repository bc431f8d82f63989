"""SQL of test_results (linked to a case) and native_test_results (unlinked); tenant-filtered."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from tms.db import Database, Row, Transaction

_triples = msgspec.json.Decoder(list[tuple[str, str, str]])

# Tuple order of a linked row, as built by the services.
LINKED_COLUMNS = (
    "id", "tenant_id", "run_id", "test_case_id", "test_case_code", "title", "status", "comment", "bug_ticket_key",
    "bug_ticket_url", "duration_ms", "framework", "error_message", "error_stack", "executed_at", "created_at",
    "updated_at", "fingerprint", "passed_on_retry",
)
NATIVE_COLUMNS = (
    "id", "tenant_id", "project_id", "run_id", "title", "status", "comment", "bug_ticket_key", "bug_ticket_url",
    "duration_ms", "framework", "error_message", "error_stack", "executed_at", "created_at", "updated_at",
    "fingerprint", "passed_on_retry",
)
# Last write wins: every reported field is replaced; id and created_at stay those of the first write.
_UPSERT = (
    f"INSERT INTO test_results ({', '.join(LINKED_COLUMNS)}) VALUES ({', '.join('?' * len(LINKED_COLUMNS))}) "
    "ON CONFLICT (run_id, test_case_id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in LINKED_COLUMNS if c not in ("id", "tenant_id", "run_id",
                                                                             "test_case_id", "created_at"))
)
_INSERT_NATIVE = (
    f"INSERT INTO native_test_results ({', '.join(NATIVE_COLUMNS)}) VALUES ({', '.join('?' * len(NATIVE_COLUMNS))})"
)
_LIST_COLUMNS = (
    "id, test_case_id, test_case_code, title, status, comment, bug_ticket_key, bug_ticket_url, duration_ms, "
    "framework, error_message, error_stack, executed_at, created_at, updated_at, fingerprint"
)
_NATIVE_LIST_COLUMNS = _LIST_COLUMNS.replace("test_case_id, test_case_code", "NULL AS test_case_id, "
                                             "NULL AS test_case_code")


async def upsert_linked(tx: Transaction, rows: Iterable[Sequence[Any]]) -> None:
    """One executemany for the whole batch, whatever its size."""
    await tx.executemany(_UPSERT, rows)


async def insert_native(tx: Transaction, rows: Iterable[Sequence[Any]]) -> None:
    await tx.executemany(_INSERT_NATIVE, rows)


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
    native = await db.fetch_all(
        f"SELECT {_NATIVE_LIST_COLUMNS} FROM native_test_results WHERE run_id = ? AND tenant_id = ? "
        "ORDER BY rowid",
        (run_id, tenant_id),
    )
    return linked + native


async def delete_native_before(tx: Transaction, tenant_id: str, cutoff: str, batch: int) -> int:
    """Deletes up to ``batch`` unlinked rows of the tenant created at or before ``cutoff``."""
    return await tx.execute(
        "DELETE FROM native_test_results WHERE rowid IN (SELECT rowid FROM native_test_results "
        "WHERE tenant_id = ? AND created_at <= ? LIMIT ?)",
        (tenant_id, cutoff, batch),
    )


async def tenants_with_native_results(db: Database) -> list[str]:
    """Tenants that hold any unlinked result (read off the sweep index, one entry per tenant)."""
    rows = await db.fetch_all("SELECT DISTINCT tenant_id FROM native_test_results")
    return [row["tenant_id"] for row in rows]
