"""Attachments of results and test cases: listing, download, and the store the app uses.

The upload (streamed, typed by content, content-addressed) is ``tms.attachments.upload``.
Objects are reference-counted by the attachments rows naming them. Whoever deletes attachment rows
calls ``forget_after_commit`` in that transaction: once it commits, the objects no row references
any more leave the store. ``sweep_orphans`` (periodic) catches whatever a caller missed or a crash
left: rows whose result is gone, objects no row references, and objects in the store with no row.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

from tms.attachments import objects
from tms.attachments import store as attachment_store
from tms.attachments.collection import forget_after_commit
from tms.attachments.filetypes import KINDS_BY_MIME
from tms.attachments.objects import AttachmentStore, OpenedObject
from tms.config import Config, ConfigError
from tms.db import Database, Row, Transaction
from tms.errors import NotFound
from tms.team.audit import service as audit

log = logging.getLogger(__name__)

# the orphan sweep runs this often (one replica per period): unreferenced objects, rows of deleted results, strays
SWEEP_SECONDS = 3600


def attachment_dict(row: Row) -> dict[str, Any]:
    """The API shape of one attachment (camelCase, as the spec names the fields)."""
    return {
        "id": row["id"],
        "fileName": row["file_name"],
        "mimeType": row["mime_type"],
        "size": row["size"],
        "createdAt": row["created_at"],
    }


async def attachments_by_result(db: Database, tenant_id: str, result_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Per result id, its attachments in API shape; every requested id is a key (empty list if none).

    Used by the results list, so one query per 500 ids instead of one per result.
    """
    grouped: dict[str, list[dict[str, Any]]] = {result_id: [] for result_id in result_ids}
    for row in await attachment_store.list_for_results(db, tenant_id, result_ids):
        grouped.setdefault(row["result_id"], []).append(attachment_dict(row))
    return grouped


@dataclass(frozen=True)
class StoredFile:
    """An attachment ready to send: a local file (``path``), an object being read (``opened``), or a
    presigned URL to redirect to (``redirect``)."""

    file_name: str
    mime_type: str
    inline: bool
    size: int
    path: Path | None = None
    opened: OpenedObject | None = None
    redirect: str | None = None


async def open_attachment(
    db: Database, tenant_id: str, attachment_id: str, store: AttachmentStore, *, redirect_seconds: int = 0
) -> StoredFile:
    """The attachment of this tenant, opened for download; 404 for another tenant's id.

    ``redirect_seconds`` > 0: a store that can presign (S3 with static keys) answers with a URL valid
    that long instead of the bytes. Never for SVG: only our own response can carry its sandbox CSP.
    """
    row = await attachment_store.get_attachment(db, tenant_id, attachment_id)
    if row is None:
        row = await attachment_store.get_case_attachment(db, tenant_id, attachment_id)
    if row is None or not row["object_key"]:
        raise NotFound(f"attachment {attachment_id} not found")
    kind = KINDS_BY_MIME.get(row["mime_type"])
    inline = bool(kind and kind.inline)
    base = {"file_name": row["file_name"], "mime_type": row["mime_type"], "inline": inline, "size": row["size"]}
    key = row["object_key"]
    if redirect_seconds > 0 and row["mime_type"] != "image/svg+xml":
        url = store.presigned_url(key, seconds=redirect_seconds, mime_type=row["mime_type"],
                                  disposition=content_disposition("inline" if inline else "attachment",
                                                                  row["file_name"]))
        if url:
            return StoredFile(**base, redirect=url)
    if isinstance(store, objects.LocalStore):
        path = store.path_of(key)
        if not path.is_file():
            log.warning("attachment %s has a row but no object %s", attachment_id, key)
            raise NotFound(f"attachment {attachment_id} not found")
        return StoredFile(**base, path=path)
    try:
        opened = await store.open(key)
    except NotFound:
        log.warning("attachment %s has a row but no object %s", attachment_id, key)
        raise NotFound(f"attachment {attachment_id} not found") from None
    return StoredFile(**base, opened=opened)


async def case_attachments(db: Database, tenant_id: str, case_id: str) -> list[dict[str, Any]]:
    """The attachments of a test case (at most MAX_CASE_ATTACHMENTS), oldest first, API shape."""
    return [attachment_dict(row) for row in await attachment_store.list_for_case(db, tenant_id, case_id)]


async def forget_case_attachments(tx: Transaction, db: Database, store: AttachmentStore, tenant_id: str,
                                  case_ids: list[str]) -> None:
    """In the transaction deleting these cases (their case_attachments rows go by the foreign key):
    once it commits, the objects nothing references any more leave the store."""
    forget_after_commit(tx, db, store, await attachment_store.case_object_keys(tx, tenant_id, case_ids))


async def delete_attachment(db: Database, tenant_id: str, attachment_id: str, store: AttachmentStore, *,
                            case_id: str | None = None) -> None:
    """Deletes one attachment of a result or of a test case (another tenant's id: 404; with ``case_id``
    only an attachment of that case), with an audit entry. Its object leaves the store once the
    deletion commits, unless another attachment still references the same bytes (never on rollback)."""
    async with db.transaction() as tx:
        gone = await attachment_store.delete_one(tx, tenant_id, attachment_id, case_id)
        if gone is None:
            raise NotFound(f"attachment {attachment_id} not found")
        owner_kind, owner_id, file_name, object_key = gone
        await audit.record(tx, tenant_id, "attachment.deleted", owner_kind, owner_id,
                           {"attachment_id": attachment_id, "file": file_name})
        forget_after_commit(tx, db, store, [object_key])


def content_disposition(disposition: str, file_name: str) -> str:
    """RFC 6266: an ASCII fallback ``filename`` for old clients plus the exact UTF-8 ``filename*``."""
    fallback = "".join(ch if 0x20 <= ord(ch) < 0x7F and ch not in '"\\%' else "_" for ch in file_name)
    return f"{disposition}; filename=\"{fallback or 'download'}\"; filename*=UTF-8''{quote(file_name, safe='')}"


async def check_store(store: AttachmentStore) -> None:
    """Raises ``StoreUnavailable`` unless the app's store answers (``/readyz``)."""
    await store.check()



def store_problem(config: Config) -> str | None:
    """Why the configured store cannot be used, checked before the server starts (one line naming
    the setting): a missing bucket name, or credentials the object store refuses. A store that is
    merely unreachable is not a reason to stay down: ``/readyz`` reports it until it answers."""
    try:
        store = objects.store_for(config)
        if store.name == "s3":
            from tms.attachments.s3 import S3Store  # loaded only when a bucket is configured

            asyncio.run(cast(S3Store, store).check_credentials())
    except ConfigError as exc:
        return str(exc)
    return None


def store_for_app(config: Config) -> AttachmentStore:
    """The configured store; ``create_app`` keeps it in ``AppState.attachment_store`` and every
    handler passes it down (no module-level registry)."""
    return objects.store_for(config)
