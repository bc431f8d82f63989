"""Comment forms of the case page and the execution view: add, edit and delete (the author only). An
invalid comment comes back on a page of its own with the text kept and the message next to the field.
Viewers read comments but write none (docs/team.md)."""

from __future__ import annotations

from typing import Any

from litestar import Router, get, post
from litestar.response import Redirect, Template

from tms.config import Config
from tms.db import Database
from tms.errors import DomainError, NotFound
from tms.http.pages import AnyRequest, done, form_of, not_found, page_numbers, render, tenant_of
from tms.http.paging import page_offset
from tms.library.comments import service
from tms.state import ConfigDep, DatabaseDep
from tms.team.signin.session import page_guard

THREAD_PAGE = 100


async def thread_context(db: Database, request: AnyRequest, kind: str, target_id: str,
                         offset: int = 0) -> dict[str, Any]:
    """What ``comments/thread.html`` needs, for the case page and the execution view (target checked by them)."""
    thread = await service.thread(db, tenant_of(request), kind, target_id, limit=THREAD_PAGE,
                                  offset=page_offset(offset))
    paging = thread.pagination
    action = f"/cases/{target_id}/comments" if kind == "case" else f"/results/{target_id}/comments"
    return {"thread": thread, "comment_action": action, "comment_offset_param": "comments_offset",
            "comment_pager": page_numbers(paging.total, paging.limit, paging.offset)}


def _form_page(request: AnyRequest, *, kind: str, back: str, action: str, body: str, error: str,
               editing: bool) -> Template:
    return render(request, "comments/edit.html", status_code=400 if error else 200, kind=kind, back=back,
                  action=action, form={"body": body}, errors={"body": error} if error else {}, editing=editing,
                  heading="Edit comment" if editing else "Comment")


async def _add(db: Database, config: Config, request: AnyRequest, kind: str, target_id: str) -> Template | Redirect:
    single, _ = await form_of(request)
    body = single.get("body", "")
    try:
        found = await service.target(db, tenant_of(request), kind, target_id)
    except NotFound as exc:
        raise not_found("case" if kind == "case" else "result") from exc
    try:
        comment = await service.add_comment(db, config, tenant_of(request), kind, found.id, body)
    except DomainError as exc:
        return _form_page(request, kind=kind, back=found.link + "#comments", action=request.url.path, body=body,
                          error=exc.detail, editing=False)
    return done(request, f"{found.link}#comment-{comment.id}", "Comment added.")


@post("/cases/{case_id:str}/comments", status_code=303)
async def add_case_comment(request: AnyRequest, db: DatabaseDep, config: ConfigDep,
                           case_id: str) -> Template | Redirect:
    return await _add(db, config, request, "case", case_id)


@post("/results/{result_id:str}/comments", status_code=303)
async def add_result_comment(request: AnyRequest, db: DatabaseDep, config: ConfigDep,
                             result_id: str) -> Template | Redirect:
    return await _add(db, config, request, "result", result_id)


async def _comment_or_404(db: Database, request: AnyRequest, comment_id: str) -> Any:
    try:
        return await service.get_comment(db, tenant_of(request), comment_id)
    except NotFound as exc:
        raise not_found("comment") from exc


@get("/comments/{comment_id:str}/edit")
async def edit_page(request: AnyRequest, db: DatabaseDep, comment_id: str) -> Template:
    comment = await _comment_or_404(db, request, comment_id)
    service.check_author(comment)
    return _form_page(request, kind=comment.target_kind, back=service.target_link(comment), body=comment.body,
                      action=f"/comments/{comment_id}/edit", error="", editing=True)


@post("/comments/{comment_id:str}/edit", status_code=303)
async def edit(request: AnyRequest, db: DatabaseDep, config: ConfigDep, comment_id: str) -> Template | Redirect:
    comment = await _comment_or_404(db, request, comment_id)
    single, _ = await form_of(request)
    body = single.get("body", "")
    try:
        await service.edit_comment(db, config, tenant_of(request), comment_id, body)
    except DomainError as exc:
        if exc.status_code == 403:
            raise
        return _form_page(request, kind=comment.target_kind, back=service.target_link(comment), body=body,
                          action=f"/comments/{comment_id}/edit", error=exc.detail, editing=True)
    return done(request, service.target_link(comment).replace("#comments", f"#comment-{comment_id}"),
                "Comment saved.")


@post("/comments/{comment_id:str}/delete", status_code=303)
async def delete(request: AnyRequest, db: DatabaseDep, comment_id: str) -> Redirect:
    comment = await _comment_or_404(db, request, comment_id)
    await service.delete_comment(db, tenant_of(request), comment_id)
    return done(request, service.target_link(comment), "Comment deleted.")


def router() -> Router:
    return Router(path="/", route_handlers=[add_case_comment, add_result_comment, edit_page, edit, delete],
                  guards=[page_guard], include_in_schema=False)
