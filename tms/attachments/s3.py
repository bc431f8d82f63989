"""Attachments in an S3 bucket (AWS S3 or any S3-compatible server: MinIO, Ceph RGW, R2, B2, GCS's
interoperability API) through obstore (object_store, in Rust): streaming reads, multipart writes in
parts of ``PART_BYTES``, server-side copy, bounded retries, presigned downloads. Loaded only when
``attachments.store = "s3"``."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from tms.attachments.objects import (
    INCOMING,
    KEY_PATTERN,
    PART_BYTES,
    READ_CHUNK,
    ObjectInfo,
    ObjectWriter,
    OpenedObject,
    checked_key,
    incoming_key,
)

log = logging.getLogger(__name__)


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
                    if KEY_PATTERN.fullmatch(key):
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
