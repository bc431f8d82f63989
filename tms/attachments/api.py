"""Attachments: upload to a result (multipart, streamed) and download (served defensively)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

import msgspec
from litestar import get, post
from litestar.openapi.spec import OpenAPIFormat, OpenAPIMediaType, OpenAPIType, Operation, Schema
from litestar.openapi.spec import RequestBody as OpenAPIRequestBody
from litestar.response import File

from tms.attachments import service as attachment_service
from tms.attachments.models import Attachment, AttachmentList
from tms.http.api_auth import ApiRequest, requires
from tms.state import app_state

# An SVG is a document that can run script: even opened directly it stays in a sandbox with no
# origin, loads nothing, and only its own inline styles apply.
SVG_CSP = "sandbox; default-src 'none'; style-src 'unsafe-inline'"


@dataclass
class _UploadOperation(Operation):
    """The handler reads the raw stream (no ``data`` parameter), so describe the body by hand."""

    def __post_init__(self) -> None:
        binary = Schema(type=OpenAPIType.STRING, format=OpenAPIFormat.BINARY)
        self.request_body = OpenAPIRequestBody(
            required=True,
            content={
                "multipart/form-data": OpenAPIMediaType(
                    schema=Schema(
                        type=OpenAPIType.OBJECT,
                        properties={"file": Schema(type=OpenAPIType.ARRAY, items=binary)},
                        required=["file"],
                    )
                )
            },
        )


@post(
    "/results/{result_id:str}/attachments",
    operation_class=_UploadOperation,
    **requires("write"),
    # None: the service counts bytes itself, per file against attachments.max_bytes (read at request
    # time, so ATTACHMENT_MAX_BYTES applies) and per request against MAX_FILES of them.
    request_max_body_size=None,
    status_code=201,
    summary="Attach files to a result",
    description="multipart/form-data with one or more parts named `file`. Allowed: PNG, JPG, GIF, WebP, "
    "SVG, PDF, TXT, JSON, ZIP, MP4, WebM, judged by content and by file name (415 otherwise); each file "
    "at most `attachments.max_bytes` (413 otherwise). `{result_id}` is a linked or unlinked result.",
)
async def upload_attachments(request: ApiRequest, result_id: str) -> AttachmentList:
    state = app_state(request)
    created = await attachment_service.upload(
        state.db,
        request.user.tenant_id,
        result_id,
        content_type=request.headers.get("content-type", ""),
        content_length=request.content_length,
        body=request.stream(),
        directory=state.config.attachments_dir,
        max_bytes=int(state.config.get("attachments.max_bytes")),
    )
    return AttachmentList(data=msgspec.convert(created, list[Attachment]))


@get("/attachments/{attachment_id:str}", **requires("read"), summary="Download an attachment")
async def download_attachment(request: ApiRequest, attachment_id: str) -> File:
    state = app_state(request)
    stored = await attachment_service.open_attachment(
        state.db, request.user.tenant_id, attachment_id, state.config.attachments_dir
    )
    return attachment_file(stored)


def attachment_file(stored: attachment_service.StoredFile) -> File:
    """A stored attachment as a download, with the defensive headers (the API's and the web's)."""
    headers = {
        # the stored type was proven by content; browsers must not second-guess it
        "X-Content-Type-Options": "nosniff",
        "Content-Disposition": content_disposition(
            "inline" if stored.inline else "attachment", stored.file_name
        ),
        "Cache-Control": "private, no-cache",
    }
    if stored.mime_type == "image/svg+xml":
        headers["Content-Security-Policy"] = SVG_CSP
    # Litestar appends "; charset=utf-8" to text/* types itself (twice, when we had added it too)
    return File(path=stored.path, media_type=stored.mime_type, headers=headers, filename=stored.file_name)


def content_disposition(disposition: str, file_name: str) -> str:
    """RFC 6266: an ASCII fallback ``filename`` for old clients plus the exact UTF-8 ``filename*``."""
    fallback = "".join(ch if 0x20 <= ord(ch) < 0x7F and ch not in '"\\%' else "_" for ch in file_name)
    return f"{disposition}; filename=\"{fallback or 'download'}\"; filename*=UTF-8''{quote(file_name, safe='')}"
