"""/api/v1 comments: a case's or a result's thread (read scope), a new comment (write scope), and the
author's own edit or deletion. Via the API the author is the token; on the web, the signed-in user."""

from __future__ import annotations

from litestar import delete, get, patch, post
from litestar.params import JSONBody

from tms.http.api_auth import ApiRequest, requires
from tms.library.comments import service
from tms.library.comments.models import CommentBody, CommentEnvelope, CommentList
from tms.state import config_of, db_of


@get("/cases/{case_id:str}/comments", **requires("read"), summary="A test case's comments, oldest first (paged)")
async def list_case_comments(request: ApiRequest, case_id: str, limit: int | None = None,
                             offset: int | None = None) -> CommentList:
    return await service.list_comments(db_of(request), request.user.tenant_id, "case", case_id, limit=limit,
                                       offset=offset)


@post("/cases/{case_id:str}/comments", **requires("write"),
      summary="Comment on a test case: Markdown (sanitised), @email mentions notify those users")
async def add_case_comment(request: ApiRequest, case_id: str, data: JSONBody[CommentBody]) -> CommentEnvelope:
    return CommentEnvelope(data=await service.add_comment(db_of(request), config_of(request),
                                                          request.user.tenant_id, "case", case_id, data.body))


@get("/results/{result_id:str}/comments", **requires("read"), summary="A result's comments, oldest first (paged)")
async def list_result_comments(request: ApiRequest, result_id: str, limit: int | None = None,
                               offset: int | None = None) -> CommentList:
    return await service.list_comments(db_of(request), request.user.tenant_id, "result", result_id, limit=limit,
                                       offset=offset)


@post("/results/{result_id:str}/comments", **requires("write"),
      summary="Comment on a result: Markdown (sanitised), @email mentions notify those users")
async def add_result_comment(request: ApiRequest, result_id: str, data: JSONBody[CommentBody]) -> CommentEnvelope:
    return CommentEnvelope(data=await service.add_comment(db_of(request), config_of(request),
                                                          request.user.tenant_id, "result", result_id, data.body))


@patch("/comments/{comment_id:str}", **requires("write"), summary="Edit a comment (its author only)")
async def edit_comment(request: ApiRequest, comment_id: str, data: JSONBody[CommentBody]) -> CommentEnvelope:
    return CommentEnvelope(data=await service.edit_comment(db_of(request), config_of(request),
                                                           request.user.tenant_id, comment_id, data.body))


@delete("/comments/{comment_id:str}", **requires("write"), summary="Delete a comment (its author only)")
async def delete_comment(request: ApiRequest, comment_id: str) -> None:
    await service.delete_comment(db_of(request), request.user.tenant_id, comment_id)


HANDLERS = [list_case_comments, add_case_comment, list_result_comments, add_result_comment, edit_comment,
            delete_comment]
