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
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import obstore
from obstore.exceptions import (
    BaseError as ObjectStoreError,
)
from obstore.exceptions import (
    NotFoundError as ObjectNotFound,
)
from obstore.exceptions import (
    PermissionDeniedError,
    UnauthenticatedError,
)
from obstore.store import S3Store as ObstoreS3

from tms.attachments import presign
from tms.config import Config, ConfigError
from tms.errors import NotFound, StoreUnavailable

if TYPE_CHECKING:
    from obstore import AsyncWritableFile

log = logging.getLogger(__name__)

# S3 parts (and the in-memory buffer of a file that may fit in one PUT): S3 wants >= 5 MiB parts
PART_BYTES = 8 * 1024 * 1024
# local disk writes go to a worker thread in batches this big, so the event loop never waits on the disk
WRITE_BATCH = 1024 * 1024
READ_CHUNK = 256 * 1024
INCOMING = "incoming"
_TENANT = r"[A-Za-z0-9_-]{1,64}"
_KEY = re.compile(rf"(?:{_TENANT}/[0-9a-f]{{64}}|[0-9a-f]{{32}}|{INCOMING}/[0-9a-f]{{32}})")
# the name of a file stored before object storage (``secrets.token_hex(16)``), which is its key
LEGACY_KEY = re.compile(r"[0-9a-f]{32}")
_SHA256 = re.compile(r"[0-9a-f]{64}")


def object_key(tenant_id: str, sha256: str) -> str:
    """The key of a tenant's object: only our own ids and a hash, never a name a client chose."""
    key = f"{tenant_id}/{sha256}"
    if not _SHA256.fullmatch(sha256) or not _KEY.fullmatch(key):
        raise ValueError(f"not an object key: {key!r}")
    return key


def checked_key(key: str) -> str:
    """Every key that reaches a store passes here: no ``..``, no separators of our own, no control bytes."""
    if not _KEY.fullmatch(key):
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
                if not _KEY.fullmatch(key):
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


# ------------------------------------------------------------------------------------------------- s3


@dataclass(frozen=True)
class S3Settings:
    endpoint: str
    bucket: str
    prefix: str
    region: str
    access_key_id: str
    secret_access_key: str

    @classmethod
    def of(cls, config: Config) -> S3Settings:
        get = config.get
        settings = cls(
            endpoint=str(get("attachments.s3_endpoint")).rstrip("/"),
            bucket=str(get("attachments.s3_bucket")),
            prefix=str(get("attachments.s3_prefix")).strip("/"),
            region=str(get("attachments.s3_region")) or "us-east-1",
            access_key_id=str(get("attachments.s3_access_key_id")),
            secret_access_key=str(get("attachments.s3_secret_access_key")),
        )
        if not settings.bucket:
            raise ConfigError("attachments.s3_bucket: required when attachments.store is s3")
        if bool(settings.access_key_id) != bool(settings.secret_access_key):
            raise ConfigError("attachments.s3_secret_access_key: set both s3_access_key_id and "
                              "s3_secret_access_key, or neither (then the AWS_* environment and instance "
                              "roles are used)")
        return settings


def _unavailable(action: str, exc: BaseException) -> StoreUnavailable:
    # obstore's messages name the bucket and key, never the credentials
    log.warning("object store: %s failed: %s", action, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    return StoreUnavailable(
        "The attachment store (object storage) is unavailable, so nothing was stored; try again later."
    )


class S3Store:
    """Objects in an S3 bucket (AWS or any S3-compatible server), under ``s3_prefix``."""

    name = "s3"

    def __init__(self, settings: S3Settings) -> None:
        self.settings = settings
        config: dict[str, Any] = {"region": settings.region}
        if settings.endpoint:
            config["endpoint"] = settings.endpoint
            # MinIO, Ceph, moto: path-style requests; AWS accepts them too for bucket names with dots
            config["virtual_hosted_style_request"] = False
        if settings.access_key_id:
            config["access_key_id"] = settings.access_key_id
            config["secret_access_key"] = settings.secret_access_key
        self.store = ObstoreS3(
            settings.bucket,
            prefix=settings.prefix or None,
            config=config,  # type: ignore[arg-type]  # a plain dict of S3Config's keys
            client_options={
                "allow_http": settings.endpoint.startswith("http://"),
                "connect_timeout": timedelta(seconds=5),
                # one request (a part of PART_BYTES, or a read's next chunk) at most this long
                "timeout": timedelta(seconds=60),
            },
            retry_config={
                "max_retries": 3,
                "retry_timeout": timedelta(seconds=10),
                "backoff": {"init_backoff": timedelta(milliseconds=100), "max_backoff": timedelta(seconds=2),
                            "base": 2},
            },
        )

    def describe(self) -> str:
        where = f"s3://{self.settings.bucket}/{self.settings.prefix}"
        return f"{where} at {self.settings.endpoint}" if self.settings.endpoint else where

    async def check(self) -> None:
        try:
            stream = obstore.list(self.store, INCOMING, chunk_size=1)
            async for _batch in stream:
                break
        except (UnauthenticatedError, PermissionDeniedError) as exc:
            raise _unavailable("listing the bucket (credentials refused)", exc) from exc
        except (ObjectStoreError, OSError) as exc:
            raise _unavailable("listing the bucket", exc) from exc

    async def check_credentials(self) -> None:
        """At start: wrong credentials stop the server with one line naming the setting."""
        try:
            await self.check()
        except StoreUnavailable as exc:
            cause = exc.__cause__
            if isinstance(cause, (UnauthenticatedError, PermissionDeniedError)):
                raise ConfigError("attachments.s3_access_key_id: the object store refused these credentials "
                                  f"for bucket {self.settings.bucket!r}") from None
            log.warning("object store %s is not reachable at start; /readyz reports it", self.describe())

    def writer(self) -> ObjectWriter:
        return _S3Writer(self)

    async def open(self, key: str) -> OpenedObject:
        try:
            result = await obstore.get_async(self.store, checked_key(key))
        except ObjectNotFound:
            raise NotFound("object not found") from None
        except (ObjectStoreError, OSError) as exc:
            raise _unavailable("reading an object", exc) from exc
        stream = result.stream(min_chunk_size=READ_CHUNK)

        async def chunks() -> AsyncIterator[bytes]:
            async for chunk in stream:
                yield bytes(chunk)

        return OpenedObject(result.meta["size"], chunks())

    async def size(self, key: str) -> int | None:
        try:
            meta = await obstore.head_async(self.store, checked_key(key))
        except ObjectNotFound:
            return None
        except (ObjectStoreError, OSError) as exc:
            raise _unavailable("reading an object's size", exc) from exc
        return int(meta["size"])

    async def delete(self, keys: list[str]) -> None:
        for start in range(0, len(keys), 1000):  # S3's DeleteObjects takes at most 1,000 keys
            batch = [checked_key(key) for key in keys[start : start + 1000]]
            try:
                await obstore.delete_async(self.store, batch)
            except ObjectNotFound:
                pass
            except (ObjectStoreError, OSError) as exc:
                raise _unavailable("deleting objects", exc) from exc

    async def listing(self) -> AsyncIterator[ObjectInfo]:
        try:
            async for batch in obstore.list(self.store, None, chunk_size=1000):
                for meta in batch:
                    key = meta["path"]
                    if _KEY.fullmatch(key):
                        yield ObjectInfo(key, int(meta["size"]), meta["last_modified"].timestamp())
        except (ObjectStoreError, OSError) as exc:
            raise _unavailable("listing the bucket", exc) from exc

    def presigned_url(self, key: str, *, seconds: int, mime_type: str, disposition: str) -> str | None:
        s = self.settings
        if not s.access_key_id:
            return None  # credentials from the environment: downloads stream through the server
        path = f"{s.prefix}/{checked_key(key)}" if s.prefix else checked_key(key)
        return presign.presigned_get(
            endpoint=s.endpoint or f"https://s3.{s.region}.amazonaws.com",
            bucket=s.bucket,
            key=path,
            region=s.region,
            access_key_id=s.access_key_id,
            secret_access_key=s.secret_access_key,
            seconds=seconds,
            response_headers={"response-content-type": mime_type, "response-content-disposition": disposition},
        )

    async def close(self) -> None:
        return None


class _S3Writer:
    """Holds up to one part in memory: a file that fits is one PUT under its final key; a larger
    one goes to ``incoming/<random>`` as a multipart upload, part by part, then is copied."""

    def __init__(self, store: S3Store) -> None:
        self.s3 = store
        self.buffer = bytearray()
        self.temp: str | None = None
        self.file: AsyncWritableFile | None = None

    @property
    def local_path(self) -> Path | None:
        return None

    async def write(self, chunk: bytes) -> None:
        if self.file is None:
            self.buffer += chunk
            if len(self.buffer) < PART_BYTES:
                return
            self.temp = incoming_key()
            self.file = obstore.open_writer_async(self.s3.store, self.temp, buffer_size=PART_BYTES,
                                                  max_concurrency=2)
            chunk, self.buffer = bytes(self.buffer), bytearray()
        try:
            await self.file.write(chunk)
        except (ObjectStoreError, OSError) as exc:
            raise _unavailable("writing a part", exc) from exc

    async def close(self) -> None:
        if self.file is not None:
            try:
                await self.file.close()
            except (ObjectStoreError, OSError) as exc:
                raise _unavailable("completing a multipart upload", exc) from exc

    async def publish(self, key: str) -> None:
        key = checked_key(key)
        try:
            if self.temp is None:
                await obstore.put_async(self.s3.store, key, bytes(self.buffer), use_multipart=False)
                self.buffer = bytearray()
            else:
                await obstore.copy_async(self.s3.store, self.temp, key)
                temp, self.temp = self.temp, None
                await obstore.delete_async(self.s3.store, temp)
        except (ObjectStoreError, OSError) as exc:
            raise _unavailable("storing an object", exc) from exc

    async def discard(self) -> None:
        self.buffer = bytearray()
        if self.file is not None and not await self.file.closed():
            # an exception into the writer aborts its multipart upload (a bucket lifecycle rule
            # removes what an abort that fails leaves behind: docs/deployment.md)
            with contextlib.suppress(Exception):
                await self.file.__aexit__(RuntimeError, RuntimeError("upload refused"), None)
        if self.temp is not None:
            with contextlib.suppress(Exception):
                await obstore.delete_async(self.s3.store, self.temp)
            self.temp = None


# ------------------------------------------------------------------------------------------ choosing


def store_for(config: Config, kind: str | None = None) -> AttachmentStore:
    """The store ``attachments.store`` names (or ``kind``), built from the settings."""
    kind = kind or str(config.get("attachments.store"))
    if kind == "s3":
        return S3Store(S3Settings.of(config))
    return LocalStore(config.attachments_dir)
