"""SQL of the attachments table; every query filters on tenant_id."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tms.db import Database, Row, Transaction

# SQLite's default limit of host parameters is 32766 on modern builds but 999 on old ones;
# 500 ids per IN list stays safe everywhere and still makes a 100k-result run ~200 queries at most.
IN_CHUNK = 500

_COLUMNS = "id, result_id, file_name, mime_type, size, storage_name, created_at"


def chunks(ids: list[str], size: int = IN_CHUNK) -> Iterable[list[str]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


async def list_for_results(db: Database | Transaction, tenant_id: str, result_ids: list[str]) -> list[Row]:
    """Attachments of the given results, oldest first, one query per chunk of ids."""
    rows: list[Row] = []
    for chunk in chunks(list(dict.fromkeys(result_ids))):
        marks = ",".join("?" * len(chunk))
        rows.extend(
            await db.fetch_all(
                f"SELECT {_COLUMNS} FROM attachments WHERE tenant_id = ? AND result_id IN ({marks}) "
                "ORDER BY created_at, id",
                (tenant_id, *chunk),
            )
        )
    return rows


async def get_attachment(db: Database, tenant_id: str, attachment_id: str) -> Row | None:
    return await db.fetch_one(
        f"SELECT {_COLUMNS} FROM attachments WHERE tenant_id = ? AND id = ?", (tenant_id, attachment_id)
    )


async def result_exists(db: Database | Transaction, tenant_id: str, result_id: str) -> bool:
    """A result id names a linked (test_results) or an unlinked (unlinked_test_results) result."""
    return bool(
        await db.fetch_value(
            "SELECT EXISTS (SELECT 1 FROM test_results WHERE tenant_id = ? AND id = ?) "
            "OR EXISTS (SELECT 1 FROM unlinked_test_results WHERE tenant_id = ? AND id = ?)",
            (tenant_id, result_id, tenant_id, result_id),
        )
    )


async def insert_attachments(tx: Transaction, rows: list[tuple[Any, ...]]) -> None:
    """rows: (id, tenant_id, result_id, file_name, mime_type, size, storage_name, created_at)."""
    await tx.executemany(
        "INSERT INTO attachments (id, tenant_id, result_id, file_name, mime_type, size, storage_name, "
        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


async def delete_for_results(tx: Transaction, tenant_id: str, result_ids: list[str]) -> list[str]:
    """Deletes the rows of these results; returns the storage names whose files must go too."""
    names: list[str] = []
    for chunk in chunks(list(dict.fromkeys(result_ids))):
        marks = ",".join("?" * len(chunk))
        rows = await tx.fetch_all(
            f"DELETE FROM attachments WHERE tenant_id = ? AND result_id IN ({marks}) RETURNING storage_name",
            (tenant_id, *chunk),
        )
        names.extend(row["storage_name"] for row in rows)
    return names


# Orphans: rows whose result no longer exists in either result table (its run or project was
# deleted, or the retention sweep removed an unlinked result). Maintenance spans all tenants, but
# the result must still belong to the attachment's own tenant to count as existing.
_ORPHAN = (
    "NOT EXISTS (SELECT 1 FROM test_results r WHERE r.id = a.result_id AND r.tenant_id = a.tenant_id) "
    "AND NOT EXISTS (SELECT 1 FROM unlinked_test_results n WHERE n.id = a.result_id "
    "AND n.tenant_id = a.tenant_id)"
)


async def find_orphans(db: Database, limit: int = IN_CHUNK) -> list[str]:
    rows = await db.fetch_all(f"SELECT a.id FROM attachments a WHERE {_ORPHAN} LIMIT ?", (limit,))
    return [row["id"] for row in rows]


async def delete_orphans(tx: Transaction, attachment_ids: list[str]) -> list[str]:
    """Deletes those of the ids that are still orphans; returns their storage names."""
    marks = ",".join("?" * len(attachment_ids))
    rows = await tx.fetch_all(
        f"DELETE FROM attachments AS a WHERE a.id IN ({marks}) AND {_ORPHAN} RETURNING storage_name",
        attachment_ids,
    )
    return [row["storage_name"] for row in rows]


async def known_storage_names(db: Database, names: list[str]) -> set[str]:
    """Which of these files on disk have a row (for the stray-file sweep)."""
    found: set[str] = set()
    for chunk in chunks(names):
        marks = ",".join("?" * len(chunk))
        rows = await db.fetch_all(
            f"SELECT storage_name FROM attachments WHERE storage_name IN ({marks})", chunk
        )
        found.update(row["storage_name"] for row in rows)
    return found
