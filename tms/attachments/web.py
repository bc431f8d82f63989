"""The case page's attachments: the upload (drag and drop, paste, file picker: the API's checks
behind a session) and the delete button of each (a form; testers and up)."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Router, post
from litestar.response import Redirect

from tms.attachments import service as attachment_service
from tms.attachments import upload as attachment_upload
from tms.attachments.models import Attachment, AttachmentList
from tms.errors import NotFound
from tms.http.pages import AnyRequest, done, not_found, tenant_of
from tms.library.cases import service as case_service
from tms.state import app_state
from tms.team.signin.session import page_guard, session_api_guard, web_user


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


@post("/cases/{case_id:str}/attachments/{attachment_id:str}/delete", status_code=303)
async def delete_case_attachment(request: AnyRequest, case_id: str, attachment_id: str) -> Redirect:
    state = app_state(request)
    tenant_id = tenant_of(request)
    try:
        case = await case_service.get_case(state.db, tenant_id, case_id)
        await attachment_service.delete_attachment(state.db, tenant_id, attachment_id, state.attachment_store,
                                                   case_id=case.id)
    except NotFound as exc:
        raise not_found("attachment") from exc
    return done(request, f"/cases/{case.code}#files-title", "Attachment deleted.")


def router() -> Router:
    return Router(path="/", route_handlers=[
        Router(path="/", route_handlers=[upload_case_attachment], guards=[session_api_guard]),
        Router(path="/", route_handlers=[delete_case_attachment], guards=[page_guard]),
    ], include_in_schema=False)
