"""Attachments' streamed upload, typed by content, to a result or a test case.

An upload is a multipart body read chunk by chunk from the socket: each ``file`` part streams into
the attachment store (``tms.attachments.objects``: a local folder, or an S3 bucket part by part)
while a ``Sniffer`` checks its bytes and SHA-256 hashes them, so memory stays flat whatever the file
size. Only once every file is complete is it published under its content-addressed key
(``<tenant>/<sha256>``: identical files of a tenant are stored once) and the rows written, in one
transaction; on any failure every object the request wrote is removed and no attachment row exists,
so a refused upload (413, 415, or 503 when the store is down) leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import tempfile
import time
import unicodedata
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import multipart

from tms.attachments import objects
from tms.attachments import store as attachment_store
from tms.attachments.collection import STRAY_GRACE_SECONDS
from tms.attachments.filetypes import ALLOWED_EXTENSIONS, JSON, Kind, Sniffer, kind_for_name
from tms.attachments.objects import AttachmentStore, ObjectWriter
from tms.db import Database, Transaction
from tms.errors import (
    DISK_FULL_DETAIL,
    DomainError,
    InsufficientStorage,
    InvalidInput,
    NotFound,
    StoreUnavailable,
    TooLarge,
    UnsupportedMediaType,
    is_disk_full,
)
from tms.ids import new_id, now_iso
from tms.team.audit import service as audit

FILE_FIELD = "file"
MAX_FILES = 20
# a test case's own attachments (specs, mock-ups, data files): at most this many per case
MAX_CASE_ATTACHMENTS = 100
MAX_NAME_LENGTH = 200
# multipart framing and small non-file fields on top of the files themselves
BODY_MARGIN = 1024 * 1024
# after a refusal, read (and discard) at most this much more so the client can see the answer
DRAIN_LIMIT = 16 * 1024 * 1024
# an upload of bytes whose object is being deleted right now waits for that, at most this long
DELETING_WAIT_SECONDS = 5.0


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
    """One uploaded file on its way into the store."""

    file_name: str
    kind: Kind
    writer: ObjectWriter
    sniffer: Sniffer
    hasher: Any = field(default_factory=hashlib.sha256)
    size: int = 0
    # a JSON file is parsed whole once complete: an S3 upload keeps a local scratch copy for that
    check_copy: Any = None
    sha256: str = ""


class _Upload:
    """The files of one request; removes every object it wrote unless the upload is committed."""

    def __init__(self, store: AttachmentStore, max_bytes: int) -> None:
        self.store = store
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
        writer = self.store.writer()
        spooled = _Spooled(file_name, kind, writer, Sniffer(kind))
        if kind is JSON and writer.local_path is None:
            spooled.check_copy = await asyncio.to_thread(tempfile.NamedTemporaryFile, prefix="tms-json-")
        self.files.append(spooled)
        self.current = spooled

    async def write(self, chunk: bytes) -> None:
        spooled = self.current
        assert spooled is not None
        spooled.size += len(chunk)
        if spooled.size > self.max_bytes:
            raise TooLarge(f"{spooled.file_name}: larger than the limit of {self.max_bytes} bytes per file")
        refusal = spooled.sniffer.feed(chunk)
        if refusal:
            raise UnsupportedMediaType(f"{spooled.file_name}: {refusal}")
        spooled.hasher.update(chunk)
        await spooled.writer.write(chunk)
        if spooled.check_copy is not None:
            await asyncio.to_thread(spooled.check_copy.write, chunk)

    async def close_current(self) -> None:
        spooled, self.current = self.current, None
        assert spooled is not None
        await spooled.writer.close()
        spooled.sha256 = spooled.hasher.hexdigest()
        path = spooled.writer.local_path
        if spooled.check_copy is not None:
            await asyncio.to_thread(spooled.check_copy.flush)
            path = Path(spooled.check_copy.name)
        refusal = await asyncio.to_thread(spooled.sniffer.finish, path or Path(os.devnull))
        if refusal:
            raise UnsupportedMediaType(f"{spooled.file_name}: {refusal}")

    async def discard(self) -> None:
        for spooled in self.files:
            with contextlib.suppress(Exception):
                await spooled.writer.discard()
            if spooled.check_copy is not None:
                with contextlib.suppress(OSError):
                    spooled.check_copy.close()
        self.files.clear()


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


@dataclass(frozen=True)
class Owner:
    """What an upload attaches files to: a result (linked or unlinked) or a test case (issue 26)."""

    kind: str  # "result" | "case"
    id: str

    async def exists(self, db: Database | Transaction, tenant_id: str) -> bool:
        if self.kind == "case":
            return await attachment_store.case_exists(db, tenant_id, self.id)
        return await attachment_store.result_exists(db, tenant_id, self.id)

    def missing(self) -> NotFound:
        return NotFound(f"{'test case' if self.kind == 'case' else 'result'} {self.id} not found")


async def upload(
    db: Database,
    tenant_id: str,
    result_id: str,
    *,
    content_type: str,
    content_length: int | None,
    body: AsyncIterator[bytes],
    store: AttachmentStore,
    max_bytes: int,
    owner: Owner | None = None,
) -> list[dict[str, Any]]:
    """Stores every ``file`` part of the body as an attachment of the result; returns them, API shape.

    ``store`` is the app's attachment store (``AppState.attachment_store``), passed down explicitly.
    ``owner`` (default: the result ``result_id``) may name a test case instead: the same checks and
    limits, rows in ``case_attachments``, at most ``MAX_CASE_ATTACHMENTS`` per case.
    """
    owner = owner or Owner("result", result_id)
    limit = body_limit(max_bytes)
    try:
        if not await owner.exists(db, tenant_id):
            raise owner.missing()
        boundary = multipart_boundary(content_type)
        if content_length is not None and content_length > limit:
            raise TooLarge(_body_too_large(limit, max_bytes))
    except DomainError:
        await _drain(body, 0, content_length)
        raise

    spool = _Upload(store, max_bytes)
    received = 0
    claimed: list[tuple[str, str, str, int]] = []
    committed = False
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
        except (TooLarge, UnsupportedMediaType, InvalidInput, StoreUnavailable):
            await spool.discard()
            await _drain(body, received, content_length)
            raise
        except OSError as exc:
            if not is_disk_full(exc):
                raise
            # the answer is a 507, and the client should read it rather than a broken pipe
            await spool.discard()
            await _drain(body, received, content_length)
            raise InsufficientStorage(DISK_FULL_DETAIL) from exc
        if not spool.files:
            raise InvalidInput("no 'file' part in the body", field=FILE_FIELD)

        wanted = {objects.object_key(tenant_id, f.sha256): (tenant_id, f.sha256, f.size) for f in spool.files}
        claimed = [(key, *rest) for key, rest in wanted.items()]
        await _claim(db, claimed)
        published: set[str] = set()
        for spooled in spool.files:
            key = objects.object_key(tenant_id, spooled.sha256)
            if key not in published:  # the same file twice in one request: stored once
                await spooled.writer.publish(key)
                published.add(key)
            else:
                await spooled.writer.discard()

        created_at = now_iso()
        rows = []
        for f in spool.files:
            attachment_id = new_id()
            rows.append((attachment_id, tenant_id, owner.id, f.file_name, f.kind.mime_type, f.size,
                         attachment_id, created_at, objects.object_key(tenant_id, f.sha256)))
        async with db.transaction() as tx:
            # the result or case may have been deleted while the files streamed in
            if not await owner.exists(tx, tenant_id):
                raise owner.missing()
            if owner.kind == "case":
                held = await attachment_store.count_for_case(tx, tenant_id, owner.id)
                if held + len(rows) > MAX_CASE_ATTACHMENTS:
                    raise TooLarge(f"a test case holds at most {MAX_CASE_ATTACHMENTS} attachments "
                                   f"({held} already)")
                await attachment_store.insert_case_attachments(
                    tx, [(r[0], tenant_id, owner.id, r[3], r[4], r[5], r[8], r[7]) for r in rows])
            else:
                await attachment_store.insert_attachments(tx, rows)
            await attachment_store.settle_objects(tx, claimed, created_at)
            await audit.record(tx, tenant_id, "attachment.created", owner.kind, owner.id,
                               {"files": [r[3] for r in rows]})
        committed = True
        spool.files.clear()  # committed: the objects now belong to their rows
    finally:
        await spool.discard()
        if claimed and not committed:
            # nothing half-written: the claims of a failed upload go (unless another upload's rows
            # reference the same bytes), and its published objects with them
            with contextlib.suppress(Exception):
                async with db.transaction() as tx:
                    await attachment_store.drop_unreferenced(tx, [c[0] for c in claimed])
                gone = await attachment_store.known_object_keys(db, [c[0] for c in claimed])
                orphaned = [c[0] for c in claimed if c[0] not in gone]
                if orphaned:
                    await store.delete(orphaned)
    return [
        {"id": r[0], "fileName": r[3], "mimeType": r[4], "size": r[5], "createdAt": r[7]} for r in rows
    ]


async def _claim(db: Database, claimed: list[tuple[str, str, str, int]]) -> None:
    """Claims the keys the upload is about to publish; waits for a collector deleting one of them."""
    deadline = time.monotonic() + DELETING_WAIT_SECONDS
    while True:
        at = datetime.now(UTC)
        until = (at + timedelta(seconds=STRAY_GRACE_SECONDS)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        async with db.transaction() as tx:
            busy = await attachment_store.claim_objects(tx, claimed, until, now_iso())
        if not busy:
            return
        if time.monotonic() > deadline:
            raise StoreUnavailable("the same file is being removed from storage right now; try again")
        await asyncio.sleep(0.2)


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
