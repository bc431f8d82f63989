"""Query parameters read as strictly as bodies: ``?offset=null`` is not "no offset".

Litestar converts query values leniently, and msgspec's lenient conversion reads the text ``null``
as None for an optional parameter, so ``?offset=null`` was silently "not given" while the OpenAPI
document (rightly) says an integer. A number, or a boolean, written as ``null`` is refused here with
the usual 400 naming the parameter; an absent parameter is still "not given".
"""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.exceptions import ValidationException
from litestar.handlers import BaseRouteHandler

from tms.http.bodies import strict_json_body

# types whose text form can never be "null"
_TYPED = (int, float, bool)
_typed_params: dict[int, frozenset[str]] = {}


def _typed_optional(handler: BaseRouteHandler) -> frozenset[str]:
    """Names of the handler's optional parameters of a number or boolean type (cached per handler)."""
    found = _typed_params.get(id(handler))
    if found is None:
        found = frozenset(
            name for name, field in handler.parsed_fn_signature.parameters.items()
            if field.is_optional and any(isinstance(t.annotation, type) and issubclass(t.annotation, _TYPED)
                                         for t in field.inner_types)
        )
        _typed_params[id(handler)] = found
    return found


def refuse_null_numbers(request: Request[Any, Any, Any]) -> None:
    """API routes only: the web pages read their own parameters forgivingly."""
    if not request.url.path.startswith("/api/"):
        return
    typed = _typed_optional(request.route_handler)
    if not typed:
        return
    bad = [name for name in typed if "null" in request.query_params.getall(name, [])]
    if bad:
        raise ValidationException(extra=[
            {"key": name, "message": "null is not a value here: leave the parameter out instead"}
            for name in sorted(bad)])


async def check_request(request: Request[Any, Any, Any]) -> None:
    """The app's ``before_request`` hook: query parameters, then the JSON body (``strict_json_body``)."""
    refuse_null_numbers(request)
    await strict_json_body(request)
