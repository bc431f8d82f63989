"""SQL of the attachments table; every query filters on tenant_id."""

from __future__ import annotations

from collections.abc import Iterable

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
