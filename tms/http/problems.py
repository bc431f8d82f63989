"""RFC 9457 problem details for every error the service answers with.

One place turns Litestar's HTTP exceptions, validation failures and our domain errors into
``application/problem+json`` with ``type``, ``title``, ``status``, ``detail`` and, for invalid
input, ``errors: [{field, message}]``. Web pages (HTML) render the same information as a page.
"""

from __future__ import annotations

import logging
import re
from http import HTTPStatus
from typing import Any

from litestar import MediaType, Request, Response
from litestar.exceptions import HTTPException, NotAuthorizedException, ValidationException

from tms.errors import DISK_FULL_DETAIL, DomainError, InsufficientStorage, is_disk_full

log = logging.getLogger(__name__)

AnyRequest = Request[Any, Any, Any]
PROBLEM_JSON = "application/problem+json"


def problem_response(
    status: int,
    detail: str,
    *,
    title: str | None = None,
    errors: list[dict[str, str]] | None = None,
    headers: dict[str, str] | None = None,
) -> Response[dict[str, Any]]:
    body: dict[str, Any] = {
        "type": "about:blank",
        "title": title or HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
    }
    if errors:
        body["errors"] = errors
    return Response(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


def _field_errors(extra: Any) -> list[dict[str, str]]:
    errors = []
    for item in extra if isinstance(extra, list) else []:
        if isinstance(item, dict):
            field = str(item.get("key") or item.get("field") or "body")
            errors.append({"field": field, "message": str(item.get("message", "invalid value"))})
    return errors


def _wants_html(request: AnyRequest) -> bool:
    path = request.url.path
    if path.startswith(("/api/", "/schema")):
        return False
    return "text/html" in request.headers.get("accept", "")


def handle_http_exception(request: AnyRequest, exc: HTTPException) -> Response[Any]:
    status = exc.status_code
    headers = dict(exc.headers or {})
    if status == 401 and request.url.path.startswith("/api/v1"):
        headers.setdefault("WWW-Authenticate", 'Bearer realm="tms"')
    if _wants_html(request):
        return _html_error(request, status, exc.detail)
    if isinstance(exc, ValidationException):
        errors = _field_errors(exc.extra)
        missing = _MISSING_PARAMETER.search(str(exc.detail or ""))
        if not errors and missing:  # Litestar's words for a required parameter left out: name it
            errors = [{"field": missing["name"], "message": "is required"}]
        detail = "The request body or parameters are invalid."
        if errors:
            detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        return problem_response(400, detail, title="Invalid input", errors=errors, headers=headers)
    detail = exc.detail if exc.detail and exc.detail != HTTPStatus(status).phrase else _default_detail(status)
    return problem_response(status, detail, headers=headers or None)


_MISSING_PARAMETER = re.compile(r"Missing required (?:query|path|header|cookie) parameter '(?P<name>[^']+)'")


def _default_detail(status: int) -> str:
    return {
        401: "A valid Bearer token is required.",
        403: "Forbidden.",
        404: "The resource was not found.",
        405: "The method is not allowed for this resource.",
        413: "The request body is too large.",
    }.get(status, HTTPStatus(status).description or HTTPStatus(status).phrase)


def handle_domain_error(request: AnyRequest, exc: DomainError) -> Response[Any]:
    if _wants_html(request):
        return _html_error(request, exc.status_code, exc.detail)
    errors = exc.errors or ([{"field": exc.field, "message": exc.detail}] if exc.field else None)
    return problem_response(exc.status_code, exc.detail, title=exc.title, errors=errors)



def handle_unexpected(request: AnyRequest, exc: Exception) -> Response[Any]:
    if is_disk_full(exc):
        # a known condition, not a bug: one line, no traceback, and a 507 saying what happened
        log.error("disk full on %s %s: %s", request.method, request.url.path, exc)
        return handle_domain_error(request, InsufficientStorage(DISK_FULL_DETAIL))
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    if _wants_html(request):
        return _html_error(request, 500, "Something went wrong on our side. The error has been logged.")
    return problem_response(500, "An unexpected error occurred; it has been logged.")


def _html_error(request: AnyRequest, status: int, detail: str) -> Response[Any]:
    from litestar.response import Template

    return Template(
        template_name="error.html",
        context={"status": status, "title": HTTPStatus(status).phrase, "detail": detail},
        status_code=status,
        media_type=MediaType.HTML,
    )


EXCEPTION_HANDLERS: dict[Any, Any] = {
    HTTPException: handle_http_exception,
    NotAuthorizedException: handle_http_exception,
    DomainError: handle_domain_error,
    Exception: handle_unexpected,
}
