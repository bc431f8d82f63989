"""Attachments of results: upload (streamed, typed by content), download, orphan cleanup."""

from __future__ import annotations

from typing import Any

from tms.db import Database, Row
from tms.store import attachments as attachment_store


def attachment_dict(row: Row) -> dict[str, Any]:
    """The API shape of one attachment (camelCase, as the spec names the fields)."""
    return {
        "id": row["id"],
        "fileName": row["file_name"],
        "mimeType": row["mime_type"],
        "size": row["size"],
        "createdAt": row["created_at"],
    }


async def attachments_by_result(db: Database, tenant_id: str, result_ids: list[str]) -> dict[str, list[dict]]:
    """Per result id, its attachments in API shape; every requested id is a key (empty list if none).

    Used by the results list, so one query per 500 ids instead of one per result.
    """
    grouped: dict[str, list[dict]] = {result_id: [] for result_id in result_ids}
    for row in await attachment_store.list_for_results(db, tenant_id, result_ids):
        grouped.setdefault(row["result_id"], []).append(attachment_dict(row))
    return grouped
