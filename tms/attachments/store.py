"""SQL of the attachments table; every query filters on tenant_id."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tms.db import Database, Row, Transaction

# SQLite's default limit of host parameters is 32766 on modern builds but 999 on old ones;
# 500 ids per IN list stays safe everywhere and still makes a 100k-result run ~200 queries at most.
IN_CHUNK = 500

_COLUMNS = "id, result_id, file_name, mime_type, size, storage_name, object_key, created_at"


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


async def get_case_attachment(db: Database, tenant_id: str, attachment_id: str) -> Row | None:
    return await db.fetch_one(
        "SELECT id, case_id, file_name, mime_type, size, object_key, created_at FROM case_attachments "
        "WHERE tenant_id = ? AND id = ?",
        (tenant_id, attachment_id),
    )


async def list_for_case(db: Database, tenant_id: str, case_id: str) -> list[Row]:
    return await db.fetch_all(
        "SELECT id, case_id, file_name, mime_type, size, object_key, created_at FROM case_attachments "
        "WHERE tenant_id = ? AND case_id = ? ORDER BY created_at, id",
        (tenant_id, case_id),
    )


async def count_for_case(tx: Transaction, tenant_id: str, case_id: str) -> int:
    return int(await tx.fetch_value("SELECT COUNT(*) FROM case_attachments WHERE tenant_id = ? AND case_id = ?",
                                    (tenant_id, case_id)) or 0)


async def case_exists(db: Database | Transaction, tenant_id: str, case_id: str) -> bool:
    return bool(await db.fetch_value("SELECT EXISTS (SELECT 1 FROM test_cases WHERE tenant_id = ? AND id = ?)",
                                     (tenant_id, case_id)))


async def insert_case_attachments(tx: Transaction, rows: list[tuple[Any, ...]]) -> None:
    """rows: (id, tenant_id, case_id, file_name, mime_type, size, object_key, created_at)."""
    await tx.executemany(
        "INSERT INTO case_attachments (id, tenant_id, case_id, file_name, mime_type, size, object_key, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


async def delete_one(tx: Transaction, tenant_id: str, attachment_id: str,
                     case_id: str | None = None) -> tuple[str, str, str, str] | None:
    """Deletes the tenant's attachment of a result or of a test case with this id (with ``case_id``:
    only an attachment of that case); returns (owner kind, owner id, file name, object key) of the row
    that went, or None (no such attachment)."""
    if case_id is None:
        rows = await tx.fetch_all(
            "DELETE FROM attachments WHERE tenant_id = ? AND id = ? RETURNING result_id, file_name, object_key",
            (tenant_id, attachment_id),
        )
        if rows:
            return "result", rows[0]["result_id"], rows[0]["file_name"], rows[0]["object_key"] or ""
    rows = await tx.fetch_all(
        "DELETE FROM case_attachments WHERE tenant_id = ? AND id = ? AND case_id = COALESCE(?, case_id) "
        "RETURNING case_id, file_name, object_key",
        (tenant_id, attachment_id, case_id),
    )
    if rows:
        return "case", rows[0]["case_id"], rows[0]["file_name"], rows[0]["object_key"]
    return None


async def case_object_keys(tx: Transaction, tenant_id: str, case_ids: list[str]) -> list[str]:
    """The object keys the attachments of these cases name (read before the cases go)."""
    keys: list[str] = []
    for chunk in chunks(list(dict.fromkeys(case_ids))):
        marks = ",".join("?" * len(chunk))
        rows = await tx.fetch_all(
            f"SELECT DISTINCT object_key FROM case_attachments WHERE tenant_id = ? AND case_id IN ({marks})",
            (tenant_id, *chunk),
        )
        keys.extend(row["object_key"] for row in rows)
    return keys


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
    """rows: (id, tenant_id, result_id, file_name, mime_type, size, storage_name, created_at, object_key)."""
    await tx.executemany(
        "INSERT INTO attachments (id, tenant_id, result_id, file_name, mime_type, size, storage_name, "
        "created_at, object_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


async def delete_for_results(tx: Transaction, tenant_id: str, result_ids: list[str]) -> list[str]:
    """Deletes the rows of these results; returns the object keys they named (maybe still referenced)."""
    keys: list[str] = []
    for chunk in chunks(list(dict.fromkeys(result_ids))):
        marks = ",".join("?" * len(chunk))
        rows = await tx.fetch_all(
            f"DELETE FROM attachments WHERE tenant_id = ? AND result_id IN ({marks}) RETURNING object_key",
            (tenant_id, *chunk),
        )
        keys.extend(row["object_key"] for row in rows if row["object_key"])
    return list(dict.fromkeys(keys))


async def delete_for_results_counted(tx: Transaction, tenant_id: str, result_ids: list[str]) -> tuple[list[str], int]:
    """The same, also counting the rows deleted."""
    keys: list[str] = []
    count = 0
    for chunk in chunks(list(dict.fromkeys(result_ids))):
        marks = ",".join("?" * len(chunk))
        rows = await tx.fetch_all(
            f"DELETE FROM attachments WHERE tenant_id = ? AND result_id IN ({marks}) RETURNING object_key",
            (tenant_id, *chunk),
        )
        count += len(rows)
        keys.extend(row["object_key"] for row in rows if row["object_key"])
    return list(dict.fromkeys(keys)), count


# Objects (attachment_objects): one row per stored object; its references are the attachments rows
# whose object_key names it.
_UNREFERENCED = ("NOT EXISTS (SELECT 1 FROM attachments a WHERE a.object_key = o.object_key) "
                 "AND NOT EXISTS (SELECT 1 FROM case_attachments c WHERE c.object_key = o.object_key)")
# the same where the table has no alias (SQLite's UPDATE ... RETURNING cannot name one)
_UNREFERENCED_SELF = ("NOT EXISTS (SELECT 1 FROM attachments a WHERE a.object_key = attachment_objects.object_key) "
                      "AND NOT EXISTS (SELECT 1 FROM case_attachments c "
                      "WHERE c.object_key = attachment_objects.object_key)")


async def claim_objects(tx: Transaction, objects: list[tuple[str, str, str, int]], until: str, at: str) -> list[str]:
    """objects: (object_key, tenant_id, sha256, size). Records that an upload is publishing them, so
    no collector deletes them meanwhile; returns the keys it could not claim (being deleted now)."""
    busy: list[str] = []
    for key, tenant_id, sha256, size in objects:
        deleting = await tx.fetch_value("SELECT deleting FROM attachment_objects WHERE object_key = ?", (key,))
        if deleting:
            busy.append(key)
            continue
        await tx.execute(
            "INSERT INTO attachment_objects (object_key, tenant_id, sha256, size, claimed_until, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (object_key) DO UPDATE SET claimed_until = excluded.claimed_until, "
            "sha256 = COALESCE(attachment_objects.sha256, excluded.sha256)",
            (key, tenant_id, sha256, size, until, at),
        )
    return busy


async def settle_objects(tx: Transaction, objects: list[tuple[str, str, str, int]], at: str) -> None:
    """The upload's rows are in: its objects are plain stored objects again (their claim lifted)."""
    await tx.executemany(
        "INSERT INTO attachment_objects (object_key, tenant_id, sha256, size, created_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (object_key) DO UPDATE SET claimed_until = NULL",
        [(*o, at) for o in objects],
    )


async def drop_unreferenced(tx: Transaction, keys: list[str]) -> None:
    """An upload that failed after claiming: its object rows go unless something references them."""
    for chunk in chunks(keys):
        marks = ",".join("?" * len(chunk))
        await tx.execute(
            f"DELETE FROM attachment_objects WHERE object_key IN ({marks}) AND deleting = 0 "
            f"AND {_UNREFERENCED_SELF}",
            chunk,
        )


async def unreferenced_objects(db: Database, now: str, limit: int = IN_CHUNK) -> list[str]:
    rows = await db.fetch_all(
        f"SELECT o.object_key FROM attachment_objects o WHERE {_UNREFERENCED} "
        "AND (o.claimed_until IS NULL OR o.claimed_until < ?) ORDER BY o.object_key LIMIT ?",
        (now, limit),
    )
    return [row["object_key"] for row in rows]


async def mark_deleting(tx: Transaction, keys: list[str], now: str) -> list[str]:
    """Of these keys, those no attachment references and no upload claims, marked as being deleted."""
    marked: list[str] = []
    for chunk in chunks(keys):
        marks = ",".join("?" * len(chunk))
        rows = await tx.fetch_all(
            f"UPDATE attachment_objects SET deleting = 1 WHERE object_key IN ({marks}) AND {_UNREFERENCED_SELF} "
            "AND (claimed_until IS NULL OR claimed_until < ?) RETURNING object_key",
            (*chunk, now),
        )
        marked.extend(row["object_key"] for row in rows)
    return marked


async def finish_deleting(tx: Transaction, keys: list[str], deleted: bool) -> None:
    """After the store deleted the objects (rows go), or failed to (rows stay, for the next sweep)."""
    for chunk in chunks(keys):
        marks = ",".join("?" * len(chunk))
        if deleted:
            await tx.execute(f"DELETE FROM attachment_objects WHERE object_key IN ({marks}) AND deleting = 1", chunk)
        else:
            await tx.execute(f"UPDATE attachment_objects SET deleting = 0 WHERE object_key IN ({marks})", chunk)


async def known_object_keys(db: Database | Transaction, keys: list[str]) -> set[str]:
    """Which of these keys found in the store have a row (the rest are strays)."""
    found: set[str] = set()
    for chunk in chunks(keys):
        marks = ",".join("?" * len(chunk))
        rows = await db.fetch_all(f"SELECT object_key FROM attachment_objects WHERE object_key IN ({marks})", chunk)
        found.update(row["object_key"] for row in rows)
    return found


async def usage_by_tenant(db: Database) -> list[Row]:
    """Stored objects and their bytes per tenant (shared objects counted once)."""
    return await db.fetch_all(
        "SELECT tenant_id, COUNT(*) AS objects, COALESCE(SUM(size), 0) AS bytes FROM attachment_objects "
        "GROUP BY tenant_id ORDER BY tenant_id"
    )


async def objects_page(db: Database, after: str, limit: int) -> list[Row]:
    """Every object, in key order from ``after`` (the migration walks them in pages)."""
    return await db.fetch_all(
        "SELECT object_key, tenant_id, sha256, size FROM attachment_objects WHERE object_key > ? AND deleting = 0 "
        "ORDER BY object_key LIMIT ?",
        (after, limit),
    )


async def copied_keys(db: Database, target: str, keys: list[str]) -> set[str]:
    found: set[str] = set()
    for chunk in chunks(keys):
        marks = ",".join("?" * len(chunk))
        rows = await db.fetch_all(
            f"SELECT object_key FROM attachment_copies WHERE target = ? AND object_key IN ({marks})", (target, *chunk)
        )
        found.update(row["object_key"] for row in rows)
    return found


async def record_copies(tx: Transaction, target: str, copies: list[tuple[str, str, int]], at: str) -> None:
    """copies: (object_key, sha256, size) verified in ``target``; one statement each for the batch. An
    object deleted meanwhile (its row gone) is skipped rather than failing the batch."""
    present = await known_object_keys(tx, [key for key, _sha256, _size in copies])
    copies = [copy for copy in copies if copy[0] in present]
    if not copies:
        return
    await tx.executemany(
        "INSERT INTO attachment_copies (target, object_key, sha256, size, verified_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (target, object_key) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size, "
        "verified_at = excluded.verified_at",
        [(target, key, sha256, size, at) for key, sha256, size in copies],
    )
    await tx.executemany("UPDATE attachment_objects SET sha256 = ? WHERE object_key = ? AND sha256 IS NULL",
                         [(sha256, key) for key, sha256, _size in copies])


async def count_objects(db: Database) -> int:
    return int(await db.fetch_value("SELECT COUNT(*) FROM attachment_objects WHERE deleting = 0") or 0)


async def count_copied(db: Database, target: str) -> int:
    return int(
        await db.fetch_value(
            "SELECT COUNT(*) FROM attachment_copies c JOIN attachment_objects o ON o.object_key = c.object_key "
            "WHERE c.target = ? AND o.deleting = 0",
            (target,),
        )
        or 0
    )


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
    """Deletes those of the ids that are still orphans; returns the object keys they named."""
    marks = ",".join("?" * len(attachment_ids))
    rows = await tx.fetch_all(
        f"DELETE FROM attachments AS a WHERE a.id IN ({marks}) AND {_ORPHAN} RETURNING object_key",
        attachment_ids,
    )
    return list(dict.fromkeys(row["object_key"] for row in rows if row["object_key"]))
