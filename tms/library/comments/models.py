"""Comments as the API takes and shows them."""

from __future__ import annotations

from typing import Annotated

import msgspec

from tms.http.fields import RequestBody

# the Markdown of a comment: 1 to 10,000 characters (tms.library.comments.markdown.BODY_MAX)
Body = Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)]


class CommentBody(RequestBody):
    body: Body


class Author(msgspec.Struct):
    kind: str  # user (the web) | token (the API)
    id: str
    name: str


class Comment(msgspec.Struct):
    id: str
    target_kind: str  # case | result
    target_id: str
    project_id: str | None
    author: Author
    body: str
    body_html: str  # sanitised rendering of body
    mentions: list[str]  # ids of the mentioned users
    created_at: str
    updated_at: str
    edited: bool


class Pagination(msgspec.Struct):
    total: int
    limit: int
    offset: int


class CommentList(msgspec.Struct):
    data: list[Comment]
    pagination: Pagination


class CommentEnvelope(msgspec.Struct):
    data: Comment
