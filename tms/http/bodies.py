"""Request bodies: raw bodies of the bulk endpoints (size caps, gzip) and strict JSON type checks.

Ingest and POST results read the body themselves (instead of a ``data:`` parameter) so that a gzip
body can be inflated under a cap, and so that items can be checked one by one.

NUL characters (U+0000): PostgreSQL cannot store them in text, so no input may carry one to the
database (``tms.db`` refuses it as a last resort). In JSON a NUL can only be written ``\\u0000``
(a raw one is malformed JSON), so a body is searched for those six bytes once, and only a body
holding them is decoded and walked: a string with NUL is a 400 naming its path (``title``,
``results[3].title``), except the free text of result items (``NUL_REPLACED_FIELDS``), stored with
U+FFFD instead. Query parameters: a 400 naming the parameter, except the search text ``q`` (the search
drops NUL); a path (an id) with NUL is a 404. See ``check_request``.
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

from tms.errors import (
    NUL,
    NUL_MESSAGE,
    NUL_REPLACEMENT,
    InvalidInput,
    NotFound,
    TooLarge,
    UnsupportedMediaType,
    unreadable_json,
)
from tms.runs.ingest.models import NUL_REPLACED_FIELDS
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
# Below this many body bytes walking a body for NUL is quicker than a hop to a thread and back.
NUL_WALK_IN_THREAD = 1024 * 1024
# at most this many fields with NUL are named in one answer
MAX_NUL_ERRORS = 20
ESCAPED_NUL = b"\\u0000"
# Query parameters that are search text: the search itself drops NUL (tms.library.cases.search_store.words_match).
NUL_TOLERANT_QUERY = frozenset({"q"})


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
        yield await _results_without_nul(raw)
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
        yield await _results_without_nul(body)


def _json_body_type(handler: Any) -> Any:
    """The msgspec Struct a handler's ``data: JSONBody[T]`` expects, or None."""
    field = handler.parsed_fn_signature.parameters.get("data")
    if field is None:
        return None
    annotation = field.annotation
    return annotation if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct) else None


async def strict_json_body(request: Request[Any, Any, Any]) -> None:
    """``before_request`` hook of every route: NUL in the path or the query (``check_request``), then
    the JSON body checked against the handler's struct in strict mode.

    Litestar converts request bodies leniently (``"is_e2e": 1`` or ``"true"`` would pass as a boolean);
    the contract wants wrong types rejected. Decoding once more in strict mode, from the body Litestar
    has already read and cached, turns such a body into the usual 400 with the field named.
    """
    check_request(request)
    body_type = _json_body_type(request.route_handler)
    if body_type is None:
        return
    raw = await request.body()
    if not raw:
        return  # Litestar answers the missing body itself
    if ESCAPED_NUL in raw:
        _refuse_nul(raw)
    try:
        msgspec.json.decode(raw, type=body_type, strict=True)
    except msgspec.ValidationError as exc:
        if "Expected `int`, got `float`" not in str(exc) or not _whole_floats_fit(raw, body_type):
            field = _error_path(str(exc))
            raise ValidationException(extra=[{"key": field, "message": str(exc).split(" - at ")[0]}]) from None
    except msgspec.DecodeError:
        return  # malformed JSON: Litestar's own decoding reports it
    except (RecursionError, UnicodeDecodeError) as exc:  # Litestar's own decoding would be a 500
        raise ValidationException(extra=[{"key": "body", "message": unreadable_json(exc)}]) from None


def _whole_floats_fit(raw: bytes, body_type: Any) -> bool:
    """JSON Schema's ``integer`` (our OpenAPI document) admits ``196.0``; strict msgspec does not. Read
    whole-number floats as integers and check the body again, strictly for everything else. Only a
    body that failed on an int field pays for this second pass."""

    def whole(value: Any) -> Any:
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
            return int(value)
        if isinstance(value, list):
            return [whole(item) for item in value]
        if isinstance(value, dict):
            return {key: whole(item) for key, item in value.items()}
        return value

    try:
        msgspec.convert(whole(msgspec.json.decode(raw)), type=body_type, strict=True)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        return False
    return True


def check_request(request: Request[Any, Any, Any]) -> None:
    """NUL in the path (an id: 404) or in a query parameter (400 naming it; the search text ``q`` is
    left to the search, which drops it). Two searches of short strings when there is none."""
    if NUL in request.scope["path"]:
        raise NotFound("Nothing here has an id or name containing NUL characters (U+0000).")
    if b"%00" not in request.scope.get("query_string", b""):
        return
    for key, value in request.query_params.multi_items():
        if NUL in key or (NUL in value and key not in NUL_TOLERANT_QUERY):
            name = key.replace(NUL, "\\u0000")
            raise InvalidInput(f"The query parameter {name!r} {NUL_MESSAGE}.", field=name)


def _refuse_nul(raw: bytes | bytearray) -> None:
    """A body holding ``\\u0000``: a 400 naming each string (or key) with NUL, if there is one (the six
    bytes may be an escaped backslash followed by ``u0000``, which is no NUL)."""
    try:
        document = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return  # malformed: reported by whoever decodes it next
    if paths := nul_paths(document):
        raise nul_problem(paths)


def nul_problem(paths: list[str]) -> InvalidInput:
    errors = [{"field": path, "message": NUL_MESSAGE} for path in paths[:MAX_NUL_ERRORS]]
    return InvalidInput("; ".join(f"{path} {NUL_MESSAGE}" for path in paths[:MAX_NUL_ERRORS]), errors=errors)


def nul_paths(document: Any) -> list[str]:
    """The paths (``name``, ``results[3].title``) of the strings and keys holding NUL in a decoded JSON
    document, in document order (at most ``MAX_NUL_ERRORS``). Iterative: depth costs no recursion."""
    found: list[str] = []
    stack: list[tuple[Any, str]] = [(document, "")]
    while stack and len(found) < MAX_NUL_ERRORS:
        value, path = stack.pop()
        if isinstance(value, str):
            if NUL in value:
                found.append(path or "body")
        elif isinstance(value, dict):
            children = []
            for key, item in value.items():
                name = f"{path}.{key}" if path else str(key)
                if isinstance(key, str) and NUL in key:
                    found.append(name.replace(NUL, "\\u0000"))
                children.append((item, name))
            stack.extend(reversed(children))
        elif isinstance(value, list):
            stack.extend((value[i], f"{path}[{i}]") for i in range(len(value) - 1, -1, -1))
    return found


def replace_nul_in_results(document: Any) -> None:
    """Replaces NUL by U+FFFD in the free text of each item of ``document["results"]``, in place."""
    results = document.get("results") if isinstance(document, dict) else None
    for item in results if isinstance(results, list) else ():
        if isinstance(item, dict):
            for key in NUL_REPLACED_FIELDS:
                text = item.get(key)
                if isinstance(text, str) and NUL in text:
                    item[key] = text.replace(NUL, NUL_REPLACEMENT)


def _scrub_results(body: bytes | bytearray) -> bytes | bytearray:
    try:
        document = msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return body  # malformed: the endpoint's own decoding words the 400
    replace_nul_in_results(document)
    if paths := nul_paths(document):
        raise nul_problem(paths)
    return msgspec.json.encode(document)


async def _results_without_nul(body: bytes | bytearray) -> bytes | bytearray:
    """``body`` itself when it holds no ``\\u0000`` (one search of its bytes), else re-encoded with
    the free text of its result items cleaned (a 400 for NUL anywhere else)."""
    if ESCAPED_NUL not in body:
        return body
    if len(body) < NUL_WALK_IN_THREAD:
        return _scrub_results(body)
    return await asyncio.to_thread(_scrub_results, body)


def _error_path(message: str) -> str:
    # msgspec says "... - at `$.tickets[0].source`"
    _, _, path = message.partition(" - at `$.")
    return path.rstrip("`") or "body"
