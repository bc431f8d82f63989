"""The case page's review forms and "Waiting for my review" (/reviews). Errors re-render the case page
with what was typed."""

from __future__ import annotations

from litestar import Router, get, post
from litestar.response import Redirect, Template

from tms.config import Config
from tms.db import Database
from tms.errors import DomainError, NotFound
from tms.http.pages import AnyRequest, done, form_of, not_found, page_numbers, render, tenant_of, user_of
from tms.http.paging import page_offset
from tms.library.cases import web as case_web
from tms.library.cases.review import service as review_service
from tms.state import ConfigDep, DatabaseDep
from tms.team.signin.session import page_guard

PAGE = 50


async def _act(db: Database, config: Config, request: AnyRequest, case_id: str, action: str) -> Template | Redirect:
    form, _ = await form_of(request)
    tenant = tenant_of(request)
    try:
        if action == "request":
            if not form.get("reviewer_id"):
                raise DomainError("Choose who reviews this case.", field="reviewer_id")
            case = await review_service.request_review(db, config, tenant, case_id, form["reviewer_id"])
            message = f"{case.code}: review requested."
        elif action == "approve":
            case = await review_service.approve(db, config, tenant, case_id, form.get("comment", "").strip() or None)
            message = f"{case.code} approved: it is READY."
        else:
            if len(form.get("comment", "")) > 5_000:
                raise DomainError("At most 5000 characters.", field="comment")
            case = await review_service.reject(db, config, tenant, case_id, form.get("comment", ""))
            message = f"{case.code}: changes requested."
    except NotFound as exc:
        if exc.field is None:
            raise not_found("test case") from exc
        errors = {exc.field: exc.detail}
    except DomainError as exc:
        errors = {exc.field or f"review_{action}": exc.detail}
    else:
        return done(request, f"/cases/{case.code}", message)
    return await case_web.render_case_page(db, request, case_id, review_form={"action": action, **form},
                                           review_errors=errors, status_code=400)


@post("/cases/{case_id:str}/review", status_code=303)
async def request_review(request: AnyRequest, db: DatabaseDep, config: ConfigDep, case_id: str) -> Template | Redirect:
    return await _act(db, config, request, case_id, "request")


@post("/cases/{case_id:str}/review/approve", status_code=303)
async def approve(request: AnyRequest, db: DatabaseDep, config: ConfigDep, case_id: str) -> Template | Redirect:
    return await _act(db, config, request, case_id, "approve")


@post("/cases/{case_id:str}/review/reject", status_code=303)
async def reject(request: AnyRequest, db: DatabaseDep, config: ConfigDep, case_id: str) -> Template | Redirect:
    return await _act(db, config, request, case_id, "reject")


@get("/reviews")
async def waiting_page(request: AnyRequest, db: DatabaseDep, offset: int = 0) -> Template:
    """The cases whose review waits for the signed-in user, newest request first."""
    tenant = tenant_of(request)
    offset = page_offset(offset)
    cases, pagination = await review_service.list_waiting(db, tenant, user_of(request).id, limit=PAGE, offset=offset)
    return render(request, "cases/reviews.html", active_nav="reviews", cases=cases, total=pagination.total,
                  people=(await review_service.team(db, tenant))[0], pager=page_numbers(pagination.total, PAGE, offset))


def router() -> Router:
    return Router(path="/", route_handlers=[request_review, approve, reject, waiting_page], guards=[page_guard],
                  include_in_schema=False)
