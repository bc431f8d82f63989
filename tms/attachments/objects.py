"""Where attachment bytes live: one ``AttachmentStore`` protocol, a local folder or an S3 bucket.

An object's key is ``<tenant_id>/<sha256 of its bytes>``: identical files of one tenant are stored
once (the database counts the attachments that reference a key, ``attachment_objects``), and no key
is ever built from anything a client sent except the hash of what it sent. Files uploaded before
object storage keep their old random name (32 hex digits) as their key. An upload first writes
``incoming/<random>`` and then publishes it under its final key, so a half-written upload is never
mistaken for a stored object; the orphan sweep removes what a crash leaves under ``incoming/``.

The S3 store talks to any S3-compatible server through obstore (object_store, in Rust): streaming
reads, multipart writes in parts of ``PART_BYTES``, server-side copy, bounded retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tms.config import Config
from tms.errors import NotFound, StoreUnavailable

if TYPE_CHECKING:
    pass



log = logging.getLogger(__name__)

# S3 parts (and the in-memory buffer of a file that may fit in one PUT): S3 wants >= 5 MiB parts
PART_BYTES = 8 * 1024 * 1024
# local disk writes go to a worker thread in batches this big, so the event loop never waits on the disk
WRITE_BATCH = 1024 * 1024
READ_CHUNK = 256 * 1024
INCOMING = "incoming"
_TENANT = r"[A-Za-z0-9_-]{1,64}"
KEY_PATTERN = re.compile(rf"(?:{_TENANT}/[0-9a-f]{{64}}|[0-9a-f]{{32}}|{INCOMING}/[0-9a-f]{{32}})")
# the name of a file stored before object storage (``secrets.token_hex(16)``), which is its key
LEGACY_KEY = re.compile(r"[0-9a-f]{32}")
_SHA256 = re.compile(r"[0-9a-f]{64}")


def object_key(tenant_id: str, sha256: str) -> str:
    """The key of a tenant's object: only our own ids and a hash, never a name a client chose."""
    key = f"{tenant_id}/{sha256}"
    if not _SHA256.fullmatch(sha256) or not KEY_PATTERN.fullmatch(key):
        raise ValueError(f"not an object key: {key!r}")
    return key


def checked_key(key: str) -> str:
    """Every key that reaches a store passes here: no ``..``, no separators of our own, no control bytes."""
    if not KEY_PATTERN.fullmatch(key):
        raise ValueError(f"not an object key: {key!r}")
    return key


def incoming_key() -> str:
    return f"{INCOMING}/{secrets.token_hex(16)}"


@dataclass(frozen=True)
class ObjectInfo:
    key: str
    size: int
    modified: float  # seconds since the epoch


@dataclass
class OpenedObject:
    """An object whose read has begun (so a missing or unreachable one fails before any answer)."""

    size: int
    chunks: AsyncIterator[bytes]
    close: Any = None


class ObjectWriter(Protocol):
    """One upload on its way: ``write``, then ``close`` (complete), then ``publish`` or ``discard``."""

    @property
    def local_path(self) -> Path | None:
        """The complete bytes as a local file once closed, when the store keeps them on this disk."""

    async def write(self, chunk: bytes) -> None: ...

    async def close(self) -> None: ...

    async def publish(self, key: str) -> None:
        """Makes the bytes the object ``key`` (replacing it: same key, same bytes)."""

    async def discard(self) -> None: ...


class AttachmentStore(Protocol):
    name: str  # "local" | "s3"

    def describe(self) -> str: ...

    async def check(self) -> None:
        """Raises ``StoreUnavailable`` unless the store can be read and written now."""

    def writer(self) -> ObjectWriter: ...

    async def open(self, key: str) -> OpenedObject:
        """Begins reading ``key``; ``NotFound`` when it is missing, ``StoreUnavailable`` when unreachable."""

    async def size(self, key: str) -> int | None: ...

    async def delete(self, keys: list[str]) -> None: ...

    def listing(self) -> AsyncIterator[ObjectInfo]: ...

    def presigned_url(self, key: str, *, seconds: int, mime_type: str, disposition: str) -> str | None: ...

    async def close(self) -> None: ...


# ---------------------------------------------------------------------------------------------- local


class LocalStore:
    """Objects as files under one folder (``data_dir/attachments`` by default)."""

    name = "local"

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def describe(self) -> str:
        return f"local folder {self.directory}"

    def path_of(self, key: str) -> Path:
        return self.directory / checked_key(key)

    async def check(self) -> None:
        def probe() -> None:
            (self.directory / INCOMING).mkdir(parents=True, exist_ok=True)
            if not os.access(self.directory, os.W_OK):
                raise PermissionError(f"{self.directory} is not writable")

        try:
            await asyncio.to_thread(probe)
        except OSError as exc:
            raise StoreUnavailable(f"the attachment folder is not usable: {exc.strerror or exc}") from exc

    def writer(self) -> ObjectWriter:
        return _LocalWriter(self)

    async def open(self, key: str) -> OpenedObject:
        path = self.path_of(key)
        try:
            handle = await asyncio.to_thread(path.open, "rb")
        except FileNotFoundError:
            raise NotFound("object not found") from None
        size = os.fstat(handle.fileno()).st_size

        async def chunks() -> AsyncIterator[bytes]:
            try:
                while data := await asyncio.to_thread(handle.read, READ_CHUNK):
                    yield data
            finally:
                handle.close()

        return OpenedObject(size, chunks(), handle.close)

    async def size(self, key: str) -> int | None:
        try:
            return (await asyncio.to_thread(self.path_of(key).stat)).st_size
        except FileNotFoundError:
            return None

    async def delete(self, keys: list[str]) -> None:
        paths = [self.path_of(key) for key in keys]

        def unlink() -> None:
            for path in paths:
                path.unlink(missing_ok=True)

        await asyncio.to_thread(unlink)

    async def listing(self) -> AsyncIterator[ObjectInfo]:
        for info in await asyncio.to_thread(self._walk):
            yield info

    def _walk(self) -> list[ObjectInfo]:
        found: list[ObjectInfo] = []
        if not self.directory.is_dir():
            return found
        for root, _dirs, files in os.walk(self.directory):
            relative = Path(root).relative_to(self.directory).as_posix()
            for name in files:
                key = name if relative == "." else f"{relative}/{name}"
                if not KEY_PATTERN.fullmatch(key):
                    continue  # not ours (a backup someone left there, an editor's swap file): left alone
                with contextlib.suppress(FileNotFoundError):
                    stat = os.stat(os.path.join(root, name), follow_symlinks=False)
                    found.append(ObjectInfo(key, stat.st_size, stat.st_mtime))
        return found

    def presigned_url(self, key: str, *, seconds: int, mime_type: str, disposition: str) -> str | None:
        return None

    async def close(self) -> None:
        return None


class _LocalWriter:
    def __init__(self, store: LocalStore) -> None:
        self.store = store
        self.temp = store.path_of(incoming_key())
        self.handle: Any = None
        self.pending = bytearray()

    @property
    def local_path(self) -> Path | None:
        return self.temp

    async def write(self, chunk: bytes) -> None:
        if self.handle is None:
            self.handle = await asyncio.to_thread(self._create)
        self.pending += chunk
        if len(self.pending) >= WRITE_BATCH:
            await self._flush()

    def _create(self) -> Any:
        self.temp.parent.mkdir(parents=True, exist_ok=True)
        # created exclusively, readable by us only
        fd = os.open(self.temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        return os.fdopen(fd, "wb")

    async def _flush(self) -> None:
        if self.pending:
            data, self.pending = bytes(self.pending), bytearray()
            await asyncio.to_thread(self.handle.write, data)

    async def close(self) -> None:
        if self.handle is None:
            self.handle = await asyncio.to_thread(self._create)
        await self._flush()
        handle, self.handle = self.handle, None
        # on disk for real before a row may point at it
        await asyncio.to_thread(_sync_and_close, handle)

    async def publish(self, key: str) -> None:
        final = self.store.path_of(key)

        def move() -> None:
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.temp, final)

        await asyncio.to_thread(move)

    async def discard(self) -> None:
        if self.handle is not None:
            with contextlib.suppress(OSError):
                self.handle.close()
            self.handle = None
        self.temp.unlink(missing_ok=True)


def _sync_and_close(handle: Any) -> None:
    try:
        handle.flush()
        os.fsync(handle.fileno())
    finally:
        handle.close()


# ------------------------------------------------------------------------------------------ choosing


def store_for(config: Config, kind: str | None = None) -> AttachmentStore:
    """The store ``attachments.store`` names (or ``kind``), built from the settings."""
    kind = kind or str(config.get("attachments.store"))
    if kind == "s3":
        from tms.attachments.s3 import S3Settings, S3Store  # obstore is loaded only for a bucket

        return S3Store(S3Settings.of(config))
    return LocalStore(config.attachments_dir)
