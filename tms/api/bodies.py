"""Request bodies: raw bodies of the bulk endpoints (size caps, gzip) and strict JSON type checks.

Ingest and POST results read the body themselves (instead of a ``data:`` parameter) so that a gzip
body can be inflated under a cap, and so that items can be checked one by one.
"""

from __future__ import annotations

import zlib
from typing import Any

import msgspec
from litestar import Request
from litestar.exceptions import ValidationException

from tms.services.errors import InvalidInput, TooLarge, UnsupportedMediaType, unreadable_json

MB = 1024 * 1024
# A 100k-result report is ~30-40 MB of JSON; these caps leave room while bounding memory per request.
MAX_WIRE_BYTES = 200 * MB
MAX_JSON_BYTES = 200 * MB


def gunzip(data: bytes, limit: int) -> bytes:
    """Inflates a gzip body (several members allowed); truncated or corrupt → 400, over ``limit`` → 413."""
    out: list[bytes] = []
    size = 0
    while True:
        inflater = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)
        try:
            chunk = inflater.decompress(data, limit - size + 1)
        except zlib.error as exc:
            raise InvalidInput(f"The gzip body is not valid: {exc}") from None
        size += len(chunk)
        if size > limit or inflater.unconsumed_tail:
            raise TooLarge(f"The decompressed body is larger than {limit // MB} MB.")
        out.append(chunk)
        if not inflater.eof:
            raise InvalidInput("The gzip body is truncated.")
        data = inflater.unused_data
        if not data.strip(b"\0"):
            return b"".join(out)


async def read_body(request: Request[Any, Any, Any], limit: int = MAX_JSON_BYTES) -> bytes:
    raw = await request.body()
    encoding = request.headers.get("content-encoding", "").strip().lower()
    if encoding in ("", "identity"):
        if len(raw) > limit:
            raise TooLarge(f"The body is larger than {limit // MB} MB.")
        return raw
    if encoding in ("gzip", "x-gzip"):
        return gunzip(raw, limit)
    raise UnsupportedMediaType(f"Content-Encoding {encoding!r} is not supported; send gzip or no encoding.")


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
