from __future__ import annotations

import msgspec


class Attachment(msgspec.Struct):
    """A file attached to a result; the field names are the spec's (camelCase)."""

    id: str
    fileName: str
    mimeType: str
    size: int
    createdAt: str


class AttachmentList(msgspec.Struct):
    data: list[Attachment]
