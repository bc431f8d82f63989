"""Attachments: upload to a result (multipart, streamed) and download (served defensively)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import msgspec
from litestar import delete, get, post
from litestar.openapi.spec import OpenAPIFormat, OpenAPIMediaType, OpenAPIType, Operation, Schema
from litestar.openapi.spec import RequestBody as OpenAPIRequestBody
from litestar.response import File, Redirect, Response

from tms.attachments import service as attachment_service
from tms.attachments import upload as attachment_upload
from tms.attachments.models import Attachment, AttachmentList
from tms.attachments.objects import OpenedObject
from tms.http.api_auth import ApiRequest, requires
from tms.library.cases import service as case_service
from tms.state import app_state

if TYPE_CHECKING:
    from litestar.types.file_types import FileInfo, FileSystemProtocol

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
    created = await attachment_upload.upload(
        state.db,
        request.user.tenant_id,
        result_id,
        content_type=request.headers.get("content-type", ""),
        content_length=request.content_length,
        body=request.stream(),
        store=state.attachment_store,
        max_bytes=int(state.config.get("attachments.max_bytes")),
    )
    return AttachmentList(data=msgspec.convert(created, list[Attachment]))


@post(
    "/cases/{case_id:str}/attachments",
    operation_class=_UploadOperation,
    **requires("write"),
    request_max_body_size=None,  # counted by the service, as for a result's attachments
    status_code=201,
    summary="Attach files to a test case",
    description="Specs, mock-ups and data files on the case itself (`{case_id}`: cuid or code). The same "
    "multipart/form-data body, types (415) and limits (413) as a result's attachments; a case holds at "
    "most 100. Download them with `GET /api/v1/attachments/{id}`.",
)
async def upload_case_attachments(request: ApiRequest, case_id: str) -> AttachmentList:
    state = app_state(request)
    case = await case_service.get_case(state.db, request.user.tenant_id, case_id)
    created = await attachment_upload.upload(
        state.db, request.user.tenant_id, case.id,
        content_type=request.headers.get("content-type", ""), content_length=request.content_length,
        body=request.stream(), store=state.attachment_store,
        max_bytes=int(state.config.get("attachments.max_bytes")), owner=attachment_upload.Owner("case", case.id),
    )
    return AttachmentList(data=msgspec.convert(created, list[Attachment]))


@get("/cases/{case_id:str}/attachments", **requires("read"), summary="A test case's attachments, oldest first")
async def list_case_attachments(request: ApiRequest, case_id: str) -> AttachmentList:
    state = app_state(request)
    case = await case_service.get_case(state.db, request.user.tenant_id, case_id)
    found = await attachment_service.case_attachments(state.db, request.user.tenant_id, case.id)
    return AttachmentList(data=msgspec.convert(found, list[Attachment]))


@get(
    "/attachments/{attachment_id:str}",
    **requires("read"),
    summary="Download an attachment",
    description="The file, or with `attachments.s3_presigned_seconds` set and an S3 store, a 302 to a "
    "presigned URL of the object storage valid that many seconds (SVG files are always sent by the service).",
)
async def download_attachment(request: ApiRequest, attachment_id: str) -> Response[Any]:
    state = app_state(request)
    stored = await attachment_service.open_attachment(
        state.db, request.user.tenant_id, attachment_id, state.attachment_store,
        redirect_seconds=int(state.config.get("attachments.s3_presigned_seconds")),
    )
    if stored.redirect:
        return Redirect(stored.redirect, status_code=302, headers={"Cache-Control": "private, no-store"})
    return attachment_file(stored)


@delete(
    "/attachments/{attachment_id:str}",
    **requires("write"),
    summary="Delete an attachment",
    description="One attachment of a result or of a test case goes (204); its stored file leaves the "
    "attachment store once no other attachment of the tenant has the same bytes.",
)
async def delete_attachment(request: ApiRequest, attachment_id: str) -> None:
    state = app_state(request)
    await attachment_service.delete_attachment(state.db, request.user.tenant_id, attachment_id,
                                               state.attachment_store)


class _OpenedFileSystem:
    """Litestar's ``File`` reads through a file system: this one hands it the object already opened
    (so a missing object is a 404 before any answer), chunk by chunk."""

    def __init__(self, opened: OpenedObject) -> None:
        self.opened = opened

    async def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        return {"name": path, "size": self.opened.size, "type": "file"}

    async def open(self, file: str, mode: str = "rb", buffering: int = -1) -> _OpenedReader:
        return _OpenedReader(self.opened)


class _OpenedReader:
    def __init__(self, opened: OpenedObject) -> None:
        self.chunks = opened.chunks
        self.buffer = b""
        self.done = False

    async def __aenter__(self) -> _OpenedReader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        close = getattr(self.chunks, "aclose", None)
        if close is not None:
            await close()

    async def read(self, size: int = -1) -> bytes:
        while not self.done and (size < 0 or len(self.buffer) < size):
            try:
                self.buffer += await anext(self.chunks)
            except StopAsyncIteration:
                self.done = True
        if size < 0:
            data, self.buffer = self.buffer, b""
        else:
            data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data


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
    if stored.opened is not None:
        # Litestar's FileSystemProtocol spells out fsspec's overloads; this reader is the subset File uses
        file_system = cast("FileSystemProtocol", _OpenedFileSystem(stored.opened))
        info = cast("FileInfo", {"name": stored.file_name, "size": stored.size, "type": "file"})
        return File(path=stored.file_name, media_type=stored.mime_type, headers=headers, filename=stored.file_name,
                    file_system=file_system, chunk_size=256 * 1024, file_info=info)
    assert stored.path is not None
    return File(path=stored.path, media_type=stored.mime_type, headers=headers, filename=stored.file_name)


content_disposition = attachment_service.content_disposition
