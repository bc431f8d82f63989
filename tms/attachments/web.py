"""The case page's upload (drag and drop, paste, file picker): the API's checks behind a session."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Router, post

from tms.attachments import upload as attachment_upload
from tms.attachments.models import Attachment, AttachmentList
from tms.library.cases import service as case_service
from tms.state import app_state
from tms.team.signin.session import session_api_guard, web_user


@post("/api/cases/{case_id:str}/attachments", status_code=201, request_max_body_size=None)
async def upload_case_attachment(request: Request[Any, Any, Any], case_id: str) -> AttachmentList:
    state = app_state(request)
    tenant_id = web_user(request).tenant_id
    case = await case_service.get_case(state.db, tenant_id, case_id)  # another tenant's: a 404
    created = await attachment_upload.upload(
        state.db, tenant_id, case.id,
        content_type=request.headers.get("content-type", ""), content_length=request.content_length,
        body=request.stream(), store=state.attachment_store,
        max_bytes=int(state.config.get("attachments.max_bytes")), owner=attachment_upload.Owner("case", case.id),
    )
    return AttachmentList(data=msgspec.convert(created, list[Attachment]))


def router() -> Router:
    return Router(path="/", route_handlers=[upload_case_attachment], guards=[session_api_guard],
                  include_in_schema=False)
