"""Helpers shared by the page controllers: rendering with the signed-in user, forms, PRG redirects.

Controllers stay thin: read the form, call a service, then either re-render the form with the
messages next to the fields (status 400, input kept) or flash and redirect (Post/Redirect/Get).
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

import msgspec
from litestar import Request
from litestar.exceptions import NotFoundException
from litestar.plugins.flash import flash
from litestar.response import Redirect, Template

from tms.errors import NUL, NUL_MESSAGE, DomainError, InvalidInput
from tms.team.signin.session import WebUser, web_user

T = TypeVar("T")
AnyRequest = Request[Any, Any, Any]
_PATH_FIELD = re.compile(r"at `\$\.([A-Za-z_]+)")


def render(request: AnyRequest, template: str, *, status_code: int = 200, **context: Any) -> Template:
    """A page with ``user`` in its context: Jinja blocks of a child template cannot see variables
    the layout sets, so the user is passed explicitly rather than read from the layout."""
    context.setdefault("user", request.scope.get("tms_user"))
    return Template(template, context=context, status_code=status_code)


def tenant_of(request: AnyRequest) -> str:
    return web_user(request).tenant_id


def user_of(request: AnyRequest) -> WebUser:
    return web_user(request)


def done(request: AnyRequest, url: str, message: str, category: str = "success") -> Redirect:
    """The redirect half of Post/Redirect/Get, with the flash message the next page shows."""
    flash(request, message, category)
    return Redirect(url, status_code=303)


async def form_of(request: AnyRequest) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The submitted form as single values (stripped of nothing: the input is kept as typed) and lists.

    A field holding a NUL character (U+0000; no keyboard types one, PostgreSQL cannot store one) is a 400
    naming the field, before any controller sees the form (as ``tms.http.bodies`` does for JSON bodies).
    """
    form = await request.form()
    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    for key in form:
        if key == "_csrf_token":
            continue
        values = [str(v) for v in form.getall(key)]
        if NUL in key or any(NUL in value for value in values):
            name = key.replace(NUL, "\\u0000")
            raise InvalidInput(f"The field “{name}” {NUL_MESSAGE}.", field=name)
        multi[key] = values
        single[key] = values[-1] if values else ""
    return single, multi


def convert(struct: type[T], data: dict[str, Any]) -> tuple[T | None, dict[str, str]]:
    """Validates ``data`` against a request model (the API's own limits) -> (value, field errors)."""
    try:
        return msgspec.convert(data, struct), {}
    except msgspec.ValidationError as exc:
        message = str(exc)
        match = _PATH_FIELD.search(message)
        field = match.group(1) if match else "form"
        text = message.split(" - at ")[0]
        return None, {field: _humane(text)}


def _humane(message: str) -> str:
    """msgspec's messages are written for API clients; say the same thing in words for a form."""
    length = re.search(r"length (<=|>=) (\d+)", message)
    if length:
        op, n = length.groups()
        if op == ">=" and n == "1":
            return "This field is required."
        return f"At most {n} characters." if op == "<=" else f"At least {n} characters."
    return message


def field_errors(exc: DomainError, default_field: str = "form") -> dict[str, str]:
    return {exc.field or default_field: exc.detail}


def not_found(what: str = "page") -> NotFoundException:
    return NotFoundException(f"This {what} does not exist or belongs to another team.")


def page_numbers(total: int, limit: int, offset: int) -> dict[str, int]:
    """Pagination state for the pager partial."""
    pages = max(1, -(-total // limit))
    page = offset // limit + 1
    return {"total": total, "limit": limit, "offset": offset, "page": page, "pages": pages}
