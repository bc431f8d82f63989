"""SCIM 2.0 endpoints at /scim/v2 (RFC 7644): Users, Groups and the three discovery endpoints.

Authenticated like /api/v1 (a Bearer token), but only a token with the ``scim`` scope gets in, and
everything is scoped to the token's tenant: another tenant's ids are 404s. Bodies are read and
answered as ``application/scim+json`` (``application/json`` is accepted too); every error is a SCIM
error body (``urn:ietf:params:scim:api:messages:2.0:Error``) with the status as a string.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
from litestar import Request, Response, Router, delete, get, patch, post, put, route
from litestar.connection import ASGIConnection
from litestar.exceptions import HTTPException, ValidationException
from litestar.exceptions import NotFoundException as LitestarNotFound
from litestar.handlers.base import BaseRouteHandler

from tms.config import Config
from tms.db import Database
from tms.errors import DISK_FULL_DETAIL, DomainError
from tms.http.api_auth import ApiRequest
from tms.http.problems import handle_unexpected
from tms.lazy import lazy_module
from tms.state import ConfigDep, DatabaseDep, app_state
from tms.team.audit.service import Actor, acting_as
from tms.team.tokens.service import verify_token

if TYPE_CHECKING:
    import scim2_models as scim2

    from tms.team.scim import groups, models, service
else:
    # SCIM's models (pydantic, scim2-models) load on the first SCIM request, not at every start (tms.lazy)
    scim2 = lazy_module("scim2_models")
    groups = lazy_module("tms.team.scim.groups")
    models = lazy_module("tms.team.scim.models")
    service = lazy_module("tms.team.scim.service")

MEDIA_TYPE = "application/scim+json"

SCIM: dict[str, Any] = {"opt": {"scope": "scim"}}
T = TypeVar("T")


async def scim_guard(connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler) -> None:
    """A Bearer token with the ``scim`` scope, checked as /api/v1 checks its tokens (the same cache,
    last-use tracking and audit actor). A guard rather than the API's middleware, so that refusals are
    SCIM error bodies like every other answer here."""
    header = connection.headers.get("authorization", "")
    scheme, _, presented = header.partition(" ")
    if scheme.lower() != "bearer" or not presented.strip():
        raise scim2.UnauthorizedException(
            detail="Missing or malformed Authorization header; use 'Bearer <token>'.")
    state = app_state(connection)
    principal = await verify_token(state.db, presented.strip())
    if principal is None:
        raise scim2.UnauthorizedException(detail="The token is invalid, revoked, or its tenant is suspended.")
    state.token_usage.mark(principal.token_id)
    acting_as(Actor("token", principal.token_id, principal.token_name))
    if "scim" not in principal.scopes:
        await service.record_refused(state.db, principal.tenant_id, principal.token_id,
                                     "token without the scim scope", _request_line(connection))
        raise scim2.ForbiddenException(detail="SCIM provisioning needs a token with the 'scim' scope.")
    connection.scope["user"] = principal


def _request_line(connection: ASGIConnection[Any, Any, Any, Any]) -> str:
    return f"{connection.scope.get('method', '')} {connection.url.path}"


async def _write(db: Database, request: ApiRequest, work: Awaitable[T]) -> T:
    """A write by id; one naming an id the team does not have (another team's: a 404 like any unknown id)
    is an audit entry too."""
    try:
        return await work
    except scim2.NotFoundException:
        await service.record_refused(db, request.user.tenant_id, request.user.token_id,
                                     "no such resource in this team", _request_line(request))
        raise


def _base(config: Config) -> str:
    return f"{config.base_url.rstrip('/')}/scim/v2"


def _answer(body: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None) -> Response[bytes]:
    return Response(msgspec.json.encode(body), status_code=status, media_type=MEDIA_TYPE, headers=headers)


async def _payload(request: ApiRequest) -> Any:
    raw = await request.body()
    try:
        return msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        raise scim2.InvalidSyntaxException(detail="the body is not readable JSON") from None


def _created(body: dict[str, Any]) -> Response[bytes]:
    return _answer(body, 201, {"Location": body["meta"]["location"]})


def _actor(request: ApiRequest) -> str:
    return request.user.token_id


# --- discovery --------------------------------------------------------------------------------------------

def _discovered(config: Config, item: Any, kind: str) -> Any:
    copy = item.model_copy(deep=True)
    copy.meta = scim2.Meta(resource_type=kind, location=f"{_base(config)}/{kind}s/{item.id}")
    return copy


@get("/ServiceProviderConfig", **SCIM)
async def service_provider_config(request: ApiRequest, config: ConfigDep) -> Response[bytes]:
    provider_config = models.PROVIDER.config
    assert provider_config is not None
    copy = provider_config.model_copy(deep=True)
    copy.meta = scim2.Meta(resource_type="ServiceProviderConfig",
                           location=f"{_base(config)}/ServiceProviderConfig")
    return _answer(copy.model_dump(mode="json"))


@get("/ResourceTypes", **SCIM)
async def resource_types(request: ApiRequest, config: ConfigDep) -> Response[bytes]:
    items = [_discovered(config, item, "ResourceType") for item in models.PROVIDER.resource_types]
    return _answer(service.discovery_list(items))


@get("/ResourceTypes/{type_id:str}", **SCIM)
async def resource_type(request: ApiRequest, config: ConfigDep, type_id: str) -> Response[bytes]:
    for item in models.PROVIDER.resource_types:
        if item.id == type_id:
            return _answer(_discovered(config, item, "ResourceType").model_dump(mode="json"))
    raise scim2.NotFoundException(detail=f"no resource type {type_id}")


@get("/Schemas", **SCIM)
async def schemas(request: ApiRequest, config: ConfigDep) -> Response[bytes]:
    items = [_discovered(config, item, "Schema") for item in models.PROVIDER.schemas]
    return _answer(service.discovery_list(items))


@get("/Schemas/{schema_id:str}", **SCIM)
async def schema(request: ApiRequest, config: ConfigDep, schema_id: str) -> Response[bytes]:
    for item in models.PROVIDER.schemas:
        if item.id == schema_id:
            return _answer(_discovered(config, item, "Schema").model_dump(mode="json"))
    raise scim2.NotFoundException(detail=f"no schema {schema_id}")


# --- users ------------------------------------------------------------------------------------------------

def _query_search(request: ApiRequest) -> dict[str, Any]:
    """The query parameters of a list (RFC 7644 §3.4.2) as a SearchRequest body."""
    names = {"filter": "filter", "startindex": "startIndex", "count": "count", "attributes": "attributes",
             "excludedattributes": "excludedAttributes", "sortby": "sortBy", "sortorder": "sortOrder"}
    body: dict[str, Any] = {}
    for key, value in request.query_params.items():
        name = names.get(key.casefold())
        if name in ("startIndex", "count"):
            try:
                body[name] = int(value)
            except ValueError:
                raise scim2.InvalidValueException(detail=f"{name} must be an integer") from None
        elif name is not None:
            body[name] = value
    return body


@get("/Users", **SCIM)
async def list_users(request: ApiRequest, db: DatabaseDep, config: ConfigDep) -> Response[bytes]:
    search = service.search_request(models.UserResource, _query_search(request))
    return _answer(await service.search_users(db, request.user.tenant_id, _base(config), search))


@post("/Users/.search", **SCIM)
async def search_users(request: ApiRequest, db: DatabaseDep, config: ConfigDep) -> Response[bytes]:
    search = service.search_request(models.UserResource, await _payload(request))
    return _answer(await service.search_users(db, request.user.tenant_id, _base(config), search))


@post("/Users", **SCIM)
async def create_user(request: ApiRequest, db: DatabaseDep, config: ConfigDep) -> Response[bytes]:
    body = await service.create_user(db, request.user.tenant_id, _base(config), _actor(request),
                                     await _payload(request))
    return _created(body)


@get("/Users/{user_id:str}", **SCIM)
async def get_user(request: ApiRequest, db: DatabaseDep, config: ConfigDep, user_id: str) -> Response[bytes]:
    params = service.response_parameters(models.UserResource, request.query_params.get("attributes"),
                                         request.query_params.get("excludedAttributes"))
    return _answer(await service.get_user(db, request.user.tenant_id, _base(config), user_id, params))


@put("/Users/{user_id:str}", **SCIM)
async def replace_user(request: ApiRequest, db: DatabaseDep, config: ConfigDep, user_id: str) -> Response[bytes]:
    return _answer(await _write(db, request, service.replace_user(db, request.user.tenant_id, _base(config),
                                                                  _actor(request), user_id, await _payload(request))))


@patch("/Users/{user_id:str}", **SCIM)
async def patch_user(request: ApiRequest, db: DatabaseDep, config: ConfigDep, user_id: str) -> Response[bytes]:
    return _answer(await _write(db, request, service.patch_user(db, request.user.tenant_id, _base(config),
                                                                _actor(request), user_id, await _payload(request))))


@delete("/Users/{user_id:str}", status_code=204, **SCIM)
async def delete_user(request: ApiRequest, db: DatabaseDep, user_id: str) -> None:
    await _write(db, request, service.delete_user(db, request.user.tenant_id, _actor(request), user_id))


# --- groups -----------------------------------------------------------------------------------------------

@get("/Groups", **SCIM)
async def list_groups(request: ApiRequest, db: DatabaseDep, config: ConfigDep) -> Response[bytes]:
    search = service.search_request(scim2.Group, _query_search(request))
    return _answer(await groups.search_groups(db, request.user.tenant_id, _base(config), search))


@post("/Groups/.search", **SCIM)
async def search_groups(request: ApiRequest, db: DatabaseDep, config: ConfigDep) -> Response[bytes]:
    search = service.search_request(scim2.Group, await _payload(request))
    return _answer(await groups.search_groups(db, request.user.tenant_id, _base(config), search))


@post("/Groups", **SCIM)
async def create_group(request: ApiRequest, db: DatabaseDep, config: ConfigDep) -> Response[bytes]:
    body = await groups.create_group(db, request.user.tenant_id, _base(config), _actor(request),
                                      await _payload(request))
    return _created(body)


@get("/Groups/{group_id:str}", **SCIM)
async def get_group(request: ApiRequest, db: DatabaseDep, config: ConfigDep, group_id: str) -> Response[bytes]:
    params = service.response_parameters(scim2.Group, request.query_params.get("attributes"),
                                         request.query_params.get("excludedAttributes"))
    return _answer(await groups.get_group(db, request.user.tenant_id, _base(config), group_id, params))


@put("/Groups/{group_id:str}", **SCIM)
async def replace_group(request: ApiRequest, db: DatabaseDep, config: ConfigDep, group_id: str) -> Response[bytes]:
    return _answer(await _write(db, request, groups.replace_group(db, request.user.tenant_id,
                                                                   _base(config), _actor(request), group_id,
                                                                   await _payload(request))))


@patch("/Groups/{group_id:str}", **SCIM)
async def patch_group(request: ApiRequest, db: DatabaseDep, config: ConfigDep, group_id: str) -> Response[bytes]:
    return _answer(await _write(db, request, groups.patch_group(db, request.user.tenant_id, _base(config),
                                                                 _actor(request), group_id,
                                                                 await _payload(request))))


@delete("/Groups/{group_id:str}", status_code=204, **SCIM)
async def delete_group(request: ApiRequest, db: DatabaseDep, group_id: str) -> None:
    await _write(db, request, groups.delete_group(db, request.user.tenant_id, _actor(request), group_id))


@post("/.search", **SCIM)
async def search_everything() -> None:
    raise scim2.NotImplementedException(detail="search /Users/.search or /Groups/.search: one resource type at a time")


@route("/{rest:path}", http_method=["GET", "POST", "PUT", "PATCH", "DELETE"], **SCIM)
async def nowhere(rest: str) -> None:
    raise scim2.NotFoundException(detail=f"nothing at /scim/v2{rest}")


# --- errors -----------------------------------------------------------------------------------------------

def _error(status: int, detail: str, scim_type: str | None = None,
           headers: dict[str, str] | None = None) -> Response[bytes]:
    body = scim2.Error(status=status, scim_type=scim_type, detail=detail).model_dump(mode="json")
    return Response(msgspec.json.encode(body), status_code=status, media_type=MEDIA_TYPE, headers=headers)


def _scim_error(request: Request[Any, Any, Any], exc: scim2.SCIMException) -> Response[bytes]:
    error = exc.to_error()
    status = int(error.status or exc.status)
    headers = {"WWW-Authenticate": 'Bearer realm="tms scim"'} if status == 401 else None
    return _error(status, error.detail or exc.detail, error.scim_type, headers)


def _http_error(request: Request[Any, Any, Any], exc: HTTPException) -> Response[bytes]:
    headers = {"WWW-Authenticate": 'Bearer realm="tms scim"'} if exc.status_code == 401 else None
    scim_type = "invalidValue" if isinstance(exc, ValidationException) else None
    detail = exc.detail
    if isinstance(exc, LitestarNotFound):
        detail = "Not found."
    return _error(exc.status_code, detail, scim_type, headers)


def _domain_error(request: Request[Any, Any, Any], exc: DomainError) -> Response[bytes]:
    if exc.status_code >= 500:
        return _error(exc.status_code, exc.detail)
    return _scim_error(request, service.domain_error(exc))


def _unexpected(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    # SCIM's own errors arrive here too: keying a handler on their class would load the library at start
    if isinstance(exc, scim2.SCIMException):
        return _scim_error(request, exc)
    answered = handle_unexpected(request, exc)  # logs it, as everywhere; a full disk is a 507
    if answered.status_code == 507:
        return _error(507, DISK_FULL_DETAIL)
    return _error(500, "An unexpected error occurred; it has been logged.")


def router() -> Router:
    return Router(
        path="/scim/v2",
        route_handlers=[
            service_provider_config, resource_types, resource_type, schemas, schema,
            list_users, search_users, create_user, get_user, replace_user, patch_user, delete_user,
            list_groups, search_groups, create_group, get_group, replace_group, patch_group, delete_group,
            search_everything, nowhere,
        ],
        guards=[scim_guard],
        exception_handlers={
            HTTPException: _http_error,
            DomainError: _domain_error,
            Exception: _unexpected,
        },
        include_in_schema=False,
        tags=["scim"],
    )
