"""Attachments of results: streamed upload typed by content, download metadata, orphan cleanup.

An upload is a multipart body read chunk by chunk from the socket: each ``file`` part goes straight
to ``data_dir/attachments/<random name>`` while a ``Sniffer`` checks its bytes, so memory stays flat
whatever the file size. Rows are written in one transaction only once every file is complete and
on disk; on any failure every file written by the request is removed, so a refused upload leaves
nothing behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import time
import unicodedata
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import multipart

from tms.attachments import store as attachment_store
from tms.attachments.filetypes import ALLOWED_EXTENSIONS, KINDS_BY_MIME, Kind, Sniffer, kind_for_name
from tms.db import Database, Row, Transaction
from tms.errors import (
    DISK_FULL_DETAIL,
    DomainError,
    InsufficientStorage,
    InvalidInput,
    NotFound,
    TooLarge,
    UnsupportedMediaType,
    is_disk_full,
)
from tms.ids import new_id, now_iso
from tms.team.audit import service as audit

log = logging.getLogger(__name__)

FILE_FIELD = "file"
MAX_FILES = 20
MAX_NAME_LENGTH = 200
# multipart framing and small non-file fields on top of the files themselves
BODY_MARGIN = 1024 * 1024
# disk writes go to a worker thread in batches this big, so the event loop never waits on the disk
WRITE_BATCH = 1024 * 1024
# after a refusal, read (and discard) at most this much more so the client can see the answer
DRAIN_LIMIT = 16 * 1024 * 1024
# a file on disk without a row is only a stray once no upload can still be writing it
STRAY_GRACE_SECONDS = 3600


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


def sanitize_file_name(raw: str) -> str:
    """The name to store and show: last path component only, no control or format characters.

    Format characters (Unicode Cf) include the right-to-left override that makes ``gpj.exe``
    read as ``exe.jpg``. The extension is kept when the name is shortened.
    """
    name = unicodedata.normalize("NFC", raw).replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch for ch in name if unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Zl", "Zp"))
    name = name.strip().lstrip(".").strip()
    if len(name) > MAX_NAME_LENGTH:
        stem, dot, extension = name.rpartition(".")
        if dot and 0 < len(extension) <= 10:
            name = stem[: MAX_NAME_LENGTH - len(extension) - 1].rstrip() + "." + extension
        else:
            name = name[:MAX_NAME_LENGTH]
    return name


@dataclass
class _Spooled:
    """One uploaded file on its way to disk."""

    file_name: str
    kind: Kind
    path: Path
    sniffer: Sniffer
    size: int = 0
    handle: Any = None
    pending: bytearray | None = None


class _Upload:
    """The files of one request; removes every one of them unless the upload is committed."""

    def __init__(self, directory: Path, max_bytes: int) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self.files: list[_Spooled] = []
        self.current: _Spooled | None = None

    async def open(self, raw_name: str) -> None:
        if len(self.files) >= MAX_FILES:
            raise TooLarge(f"at most {MAX_FILES} files per request")
        file_name = sanitize_file_name(raw_name)
        kind = kind_for_name(file_name)
        if kind is None:
            raise UnsupportedMediaType(
                f"{file_name or 'the file'}: type not allowed; allowed extensions: {ALLOWED_EXTENSIONS}"
            )
        # never the client's name on disk: a random one, created exclusively, readable by us only
        path = self.directory / secrets.token_hex(16)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        spooled = _Spooled(file_name, kind, path, Sniffer(kind), handle=os.fdopen(fd, "wb"))
        spooled.pending = bytearray()
        self.files.append(spooled)
        self.current = spooled

    async def write(self, chunk: bytes) -> None:
        spooled = self.current
        assert spooled is not None and spooled.pending is not None
        spooled.size += len(chunk)
        if spooled.size > self.max_bytes:
            raise TooLarge(f"{spooled.file_name}: larger than the limit of {self.max_bytes} bytes per file")
        refusal = spooled.sniffer.feed(chunk)
        if refusal:
            raise UnsupportedMediaType(f"{spooled.file_name}: {refusal}")
        spooled.pending += chunk
        if len(spooled.pending) >= WRITE_BATCH:
            await self._flush(spooled)

    async def _flush(self, spooled: _Spooled) -> None:
        assert spooled.pending is not None
        if spooled.pending:
            data, spooled.pending = bytes(spooled.pending), bytearray()
            await asyncio.to_thread(spooled.handle.write, data)

    async def close_current(self) -> None:
        spooled, self.current = self.current, None
        assert spooled is not None
        await self._flush(spooled)
        handle, spooled.handle, spooled.pending = spooled.handle, None, None
        # on disk for real before a row may point at it
        await asyncio.to_thread(_sync_and_close, handle)
        refusal = await asyncio.to_thread(spooled.sniffer.finish, spooled.path)
        if refusal:
            raise UnsupportedMediaType(f"{spooled.file_name}: {refusal}")

    def discard(self) -> None:
        for spooled in self.files:
            if spooled.handle is not None:
                with contextlib.suppress(OSError):
                    spooled.handle.close()
            spooled.path.unlink(missing_ok=True)
        self.files.clear()


def _sync_and_close(handle: Any) -> None:
    try:
        handle.flush()
        os.fsync(handle.fileno())
    finally:
        handle.close()


def multipart_boundary(content_type: str) -> str:
    """The boundary of a multipart/form-data body; 415 for any other media type."""
    media_type, options = multipart.parse_options_header(content_type or "")
    if media_type != "multipart/form-data":
        raise UnsupportedMediaType("the body must be multipart/form-data with one or more 'file' parts")
    boundary = options.get("boundary", "")
    if not boundary:
        raise InvalidInput("the multipart/form-data body has no boundary")
    return str(boundary)


def _body_too_large(limit: int, max_bytes: int) -> str:
    return (
        f"the request body is larger than {limit} bytes "
        f"(at most {MAX_FILES} files of {max_bytes} bytes each per request)"
    )


def body_limit(max_bytes: int) -> int:
    """The largest whole request accepted: MAX_FILES files of max_bytes plus framing."""
    return MAX_FILES * max_bytes + BODY_MARGIN


async def upload(
    db: Database,
    tenant_id: str,
    result_id: str,
    *,
    content_type: str,
    content_length: int | None,
    body: AsyncIterator[bytes],
    directory: Path,
    max_bytes: int,
) -> list[dict[str, Any]]:
    """Stores every ``file`` part of the body as an attachment of the result; returns them, API shape."""
    limit = body_limit(max_bytes)
    try:
        if not await attachment_store.result_exists(db, tenant_id, result_id):
            raise NotFound(f"result {result_id} not found")
        boundary = multipart_boundary(content_type)
        if content_length is not None and content_length > limit:
            raise TooLarge(_body_too_large(limit, max_bytes))
    except DomainError:
        await _drain(body, 0, content_length)
        raise

    spool = _Upload(directory, max_bytes)
    received = 0
    try:
        try:
            parser = multipart.PushMultipartParser(boundary, max_header_count=16)
            in_file = False
            async for chunk in body:
                received += len(chunk)
                if received > limit:
                    raise TooLarge(_body_too_large(limit, max_bytes))
                for event in parser.parse(chunk):
                    if isinstance(event, multipart.MultipartSegment):
                        # other fields are read past and ignored; only 'file' parts are attachments
                        in_file = event.name == FILE_FIELD
                        if in_file:
                            if not event.filename:
                                # a form field, or a browser form submitted without choosing a file
                                raise InvalidInput("the 'file' part must be a file with a filename")
                            await spool.open(event.filename)
                    elif event is None:
                        if in_file:
                            await spool.close_current()
                        in_file = False
                    elif in_file:
                        await spool.write(event)
                if not chunk:
                    break
            if not parser.closed:
                raise InvalidInput("the multipart body ended early")
        except multipart.MultipartError as exc:
            raise InvalidInput(f"malformed multipart body: {exc}") from None
        except (TooLarge, UnsupportedMediaType, InvalidInput):
            spool.discard()
            await _drain(body, received, content_length)
            raise
        except OSError as exc:
            if not is_disk_full(exc):
                raise
            # the answer is a 507, and the client should read it rather than a broken pipe
            spool.discard()
            await _drain(body, received, content_length)
            raise InsufficientStorage(DISK_FULL_DETAIL) from exc
        if not spool.files:
            raise InvalidInput("no 'file' part in the body", field=FILE_FIELD)

        created_at = now_iso()
        rows = [
            (new_id(), tenant_id, result_id, f.file_name, f.kind.mime_type, f.size, f.path.name, created_at)
            for f in spool.files
        ]
        async with db.transaction() as tx:
            # the result may have been deleted while the files streamed in
            if not await attachment_store.result_exists(tx, tenant_id, result_id):
                raise NotFound(f"result {result_id} not found")
            await attachment_store.insert_attachments(tx, rows)
            await audit.record(tx, tenant_id, "attachment.created", "result", result_id,
                               {"files": [r[3] for r in rows]})
        spool.files.clear()  # committed: the files now belong to their rows
    finally:
        spool.discard()
    return [
        {"id": r[0], "fileName": r[3], "mimeType": r[4], "size": r[5], "createdAt": r[7]} for r in rows
    ]


async def _drain(body: AsyncIterator[bytes], received: int, content_length: int | None) -> None:
    """Reads past the rest of a refused body (at most DRAIN_LIMIT), so the client reads our answer.

    Answering while the client is still sending makes the server close the connection under it,
    and most clients then report a broken pipe instead of the 413/415. A body announced to be much
    longer is not worth reading: the connection is simply closed after the answer.
    """
    if content_length is not None and content_length - received > DRAIN_LIMIT:
        return
    budget = DRAIN_LIMIT
    with contextlib.suppress(Exception):
        async for chunk in body:
            budget -= len(chunk)
            if budget < 0 or not chunk:
                break


@dataclass(frozen=True)
class StoredFile:
    path: Path
    file_name: str
    mime_type: str
    inline: bool


async def open_attachment(db: Database, tenant_id: str, attachment_id: str, directory: Path) -> StoredFile:
    row = await attachment_store.get_attachment(db, tenant_id, attachment_id)
    if row is None:
        raise NotFound(f"attachment {attachment_id} not found")
    path = directory / row["storage_name"]
    if not path.is_file():
        log.warning("attachment %s has a row but no file %s", attachment_id, path)
        raise NotFound(f"attachment {attachment_id} not found")
    kind = KINDS_BY_MIME.get(row["mime_type"])
    return StoredFile(path, row["file_name"], row["mime_type"], inline=bool(kind and kind.inline))


def _unlink_all(directory: Path, storage_names: list[str]) -> None:
    for name in storage_names:
        (directory / name).unlink(missing_ok=True)


def remove_files(directory: Path, storage_names: list[str]) -> None:
    """Removes stored files by name (after the transaction that deleted their rows has committed)."""
    _unlink_all(directory, storage_names)


def default_directory(db: Database) -> Path:
    """data_dir/attachments: tms.db and attachments/ live side by side in data_dir (config.py)."""
    return db.data_dir / "attachments"


async def delete_attachment_files_for(
    db: Database, tenant_id: str, result_ids: list[str], directory: Path | None = None
) -> int:
    """Deletes the attachments (rows, then files) of results that were deleted; returns how many.

    Optional: the daily ``sweep_orphans`` finds the same attachments; calling this right after
    deleting results only frees the disk space sooner.
    """
    if not result_ids:
        return 0
    async with db.transaction() as tx:
        names = await attachment_store.delete_for_results(tx, tenant_id, result_ids)
    # files only after the commit: a rolled-back delete must not lose them
    await asyncio.to_thread(_unlink_all, directory or default_directory(db), names)
    return len(names)


async def delete_attachments_in(
    tx: Transaction, tenant_id: str, result_ids: list[str], directory: Path
) -> None:
    """The same inside the caller's transaction that deletes the results: rows go with it, files
    once it commits (never on rollback)."""
    names = await attachment_store.delete_for_results(tx, tenant_id, result_ids)
    if names:
        tx.after_commit(lambda: _unlink_all(directory, names))


async def sweep_orphans(db: Database, directory: Path) -> int:
    """Daily: removes attachments whose result is gone, and files on disk that no row names.

    Deleting runs, projects or unlinked results cascades in SQL, but the attachments table has no
    foreign key to the two result tables, so its rows and files are collected here. Returns the
    number of files removed.
    """
    removed = 0
    while ids := await attachment_store.find_orphans(db):
        async with db.transaction() as tx:
            names = await attachment_store.delete_orphans(tx, ids)
        await asyncio.to_thread(_unlink_all, directory, names)
        removed += len(names)
        if not names:
            break
    strays = await asyncio.to_thread(_old_files, directory, time.time() - STRAY_GRACE_SECONDS)
    if strays:
        known = await attachment_store.known_storage_names(db, strays)
        unknown = [name for name in strays if name not in known]
        await asyncio.to_thread(_unlink_all, directory, unknown)
        removed += len(unknown)
    if removed:
        log.info("attachment sweep removed %d files", removed)
    return removed


def _old_files(directory: Path, before: float) -> list[str]:
    """Names of plain files last written before ``before`` (an upload in flight keeps touching its file)."""
    if not directory.is_dir():
        return []
    with os.scandir(directory) as entries:
        return [e.name for e in entries if e.is_file(follow_symlinks=False) and e.stat().st_mtime < before]
