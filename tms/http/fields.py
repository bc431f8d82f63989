"""msgspec structs for request and response bodies, one module per domain.

Request structs forbid unknown fields (no mass assignment) and carry their limits as ``Meta``
so that Litestar rejects a bad body with a 400 naming the field before any handler runs.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
ShortText = Annotated[str, msgspec.Meta(max_length=200)]
LongText = Annotated[str, msgspec.Meta(max_length=20_000)]
Label = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]


class RequestBody(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=False):
    """Base of every request body: unknown fields are an error, not silently dropped."""
