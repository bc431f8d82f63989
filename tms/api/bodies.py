"""Request bodies: raw bodies of the bulk endpoints (size caps, gzip) and strict JSON type checks.

Ingest and POST results read the body themselves (instead of a ``data:`` parameter) so that a gzip
body can be inflated under a cap, and so that items can be checked one by one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import zlib
from collections.abc import AsyncIterator
from typing import Any

import msgspec
from litestar import Request
from litestar.exceptions import ValidationException

from tms.services.errors import InvalidInput, TooLarge, UnsupportedMediaType, unreadable_json
from tms.state import app_state

MB = 1024 * 1024
# A 100k-result report is ~30-40 MB of JSON; these caps leave room while bounding memory per request.
MAX_WIRE_BYTES = 200 * MB
MAX_JSON_BYTES = 200 * MB


# Our reporter sends one member; `cat a.gz b.gz` makes a few. Each member costs a fresh inflater, so
# 100,000 empty members (2 MB) would be a cheap way to burn CPU: more than this many is a 400.
MAX_GZIP_MEMBERS = 1_000
# Input is fed to each inflater in growing slices, so what it hands back as ``unused_data`` (a copy)
# stays about the size of one member: passing the whole remaining body made the cost quadratic.
FIRST_SLICE = 1024
MAX_SLICE = 1024 * 1024
# Below this many wire bytes inflating is quicker than a hop to a thread and back (at most ~1,000x
# compression: 64 KB inflate to ~64 MB at most, and the per-request limit still applies).
INFLATE_IN_THREAD = 16 * 1024


def gunzip(data: bytes, limit: int, max_members: int = MAX_GZIP_MEMBERS) -> bytearray:
    """Inflates a gzip body in time linear in its size; several members allowed (up to ``max_members``).

    Truncated or corrupt, or too many members → 400; more than ``limit`` bytes inflated → 413.
    """
    view = memoryview(data)
    # one growing buffer (large reallocations are remapped, not copied): joining a list of chunks
    # would hold the inflated body twice at the end
    out = bytearray()
    size = pos = members = 0
    while True:
        members += 1
        if members > max_members:
            raise InvalidInput(f"The gzip body has more than {max_members} members.", field="body")
        inflater = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)
        step = FIRST_SLICE
        while not inflater.eof:
            if pos >= len(view):
                raise InvalidInput("The gzip body is truncated.", field="body")
            piece = view[pos : pos + step]
            pos += len(piece)
            step = min(step * 2, MAX_SLICE)
            try:
                chunk = inflater.decompress(piece, limit - size + 1)
            except zlib.error as exc:
                raise InvalidInput(f"The gzip body is not valid: {exc}", field="body") from None
            size += len(chunk)
            if size > limit or inflater.unconsumed_tail:
                raise TooLarge(f"The decompressed body is larger than {limit // MB} MB.")
            out += chunk
        pos -= len(inflater.unused_data)
        # the end, or zero padding after the last member (some tools write it)
        if pos == len(data) or (data[pos] == 0 and data.count(0, pos) == len(data) - pos):
            return out


def inflation_slots() -> asyncio.Semaphore:
    """How many gzip bodies may be inflated and held at once: one per core (at least two). Each may
    reach ``MAX_JSON_BYTES`` inflated, so this bounds the memory hostile bodies can claim together;
    the others wait their turn without holding the event loop."""
    return asyncio.Semaphore(max(2, os.cpu_count() or 2))


@contextlib.asynccontextmanager
async def request_body(
    request: Request[Any, Any, Any], limit: int = MAX_JSON_BYTES
) -> AsyncIterator[bytes | bytearray]:
    """The request's body, inflated when it is gzip, for the duration of the ``async with`` block.

    A gzip body holds one of the app's inflation slots (``state.inflation_slots``) until the block
    ends, i.e. while the handler decodes and stores it: the inflated bytes are alive until then.
    Inflating a larger body runs in a worker thread.
    """
    raw = await request.body()
    encoding = request.headers.get("content-encoding", "").strip().lower()
    if encoding in ("", "identity"):
        if len(raw) > limit:
            raise TooLarge(f"The body is larger than {limit // MB} MB.")
        yield raw
        return
    if encoding not in ("gzip", "x-gzip"):
        raise UnsupportedMediaType(
            f"Content-Encoding {encoding!r} is not supported; send gzip or no encoding."
        )
    async with app_state(request).inflation_slots:
        if len(raw) < INFLATE_IN_THREAD:
            body = gunzip(raw, limit)
        else:
            body = await asyncio.to_thread(gunzip, raw, limit)
        del raw
        yield body


def _json_body_type(handler: Any) -> Any:
    """The msgspec Struct a handler's ``data: JSONBody[T]`` expects, or None."""
    field = handler.parsed_fn_signature.parameters.get("data")
    if field is None:
        return None
    annotation = field.annotation
    return annotation if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct) else None


async def strict_json_body(request: Request[Any, Any, Any]) -> None:
    """``before_request`` hook: checks a JSON body against the handler's struct in strict mode.

    Litestar converts request bodies leniently (``"is_e2e": 1`` or ``"true"`` would pass as a boolean);
    the contract wants wrong types rejected. Decoding once more in strict mode, from the body Litestar
    has already read and cached, turns such a body into the usual 400 with the field named.
    """
    body_type = _json_body_type(request.route_handler)
    if body_type is None:
        return
    raw = await request.body()
    if not raw:
        return  # Litestar answers the missing body itself
    try:
        msgspec.json.decode(raw, type=body_type, strict=True)
    except msgspec.ValidationError as exc:
        field = _error_path(str(exc))
        raise ValidationException(extra=[{"key": field, "message": str(exc).split(" - at ")[0]}]) from None
    except msgspec.DecodeError:
        return  # malformed JSON: Litestar's own decoding reports it
    except (RecursionError, UnicodeDecodeError) as exc:  # Litestar's own decoding would be a 500
        raise ValidationException(extra=[{"key": "body", "message": unreadable_json(exc)}]) from None



def _error_path(message: str) -> str:
    # msgspec says "... - at `$.tickets[0].source`"
    _, _, path = message.partition(" - at `$.")
    return path.rstrip("`") or "body"
