"""SCIM 2.0 provisioning: an identity provider creates, updates, deactivates and deletes a tenant's users
and maps its groups to roles.

scim2-models validates every payload in its request context (read-only attributes dropped, required
ones checked), applies PATCH operations and evaluates filters; this module maps the resources onto TMS:

- a user's resource is stored as the provider wrote it (``scim_users.resource``, never a password) and
  gives the TMS account its email (the primary, else the first of ``emails``, else ``userName`` when it
  is an address) and name. A POST naming the address of an account of the same tenant that no provider
  manages adopts that account (its role is kept) instead of failing: an IdP switched on after the team
  was invited links its people.
- ``active: false`` is a deactivation through ``tms.team.service.set_active``: the same revocations and
  ended sessions as in Settings → Team. DELETE deactivates the account the same way and unlinks it from
  SCIM (TMS keeps the person's history: results, comments and audit entries name them).
- a group's members get the role its display name maps to in the tenant's setting (the highest when
  several groups map); a provisioned user in no mapped group has the default role. Roles change through
  ``tms.team.service.change_role`` (a demotion below admin revokes what the user issued). The owner's
  role and state never change.

Each change is one audit entry by the token that made it (``user.provisioned``, ``user.updated``,
``user.deprovisioned``, ``group.created``, ``group.updated``, ``group.deleted``), beside the entries of
the team service for deactivations and role changes.
"""

from __future__ import annotations

from typing import Any

import msgspec
from pydantic import ValidationError
from scim2_models import (
    Context,
    Error,
    InvalidFilterException,
    InvalidValueException,
    ListResponse,
    MutabilityException,
    NotFoundException,
    PatchOp,
    ResponseParameters,
    SCIMException,
    SearchRequest,
    UniquenessException,
)

from tms.db import Database, Row
from tms.errors import Conflict, DomainError, InvalidInput
from tms.ids import new_id, now_iso
from tms.team import accounts
from tms.team import service as team
from tms.team.audit import service as audit
from tms.team.scim import store
from tms.team.scim.models import MAX_RESULTS, PROVIDER, UserResource
from tms.team.scim.roles import get_settings

Json = dict[str, Any]
PLACEHOLDER_DOMAIN = "provisioned.invalid"


class ScimValidationError(SCIMException):
    """A payload scim2-models refused: carries the library's own error body."""

    def __init__(self, error: Error) -> None:
        super().__init__(detail=error.detail or "invalid payload")
        self._error = error
        self.status = int(error.status or 400)
        self.scim_type = error.scim_type or ""


def validated(model: Any, payload: Any, context: Context) -> Any:
    if not isinstance(payload, dict):
        raise ScimValidationError(Error(status=400, scim_type="invalidSyntax", detail="the body is not a JSON object"))
    try:
        with PROVIDER:
            return model.model_validate(payload, scim_ctx=context)
    except ValidationError as exc:
        errors = Error.from_validation_errors(exc)
        raise ScimValidationError(errors[0]) from None
    except SCIMException:
        raise


def replacement(model: Any, payload: Any, before: Any) -> Any:
    """A PUT's resource (RFC 7644 §3.5.1): the body, checked, with what it may not change kept from
    ``before`` (immutable attributes, the id). Users and Groups alike."""
    after = validated(model, payload, Context.RESOURCE_REPLACEMENT_REQUEST)
    with PROVIDER:
        after.replace(before)
    after.id = before.id
    return after


def patched(model: Any, payload: Any, before: Any) -> Any:
    """A PATCH's resource (RFC 7644 §3.5.2): a copy of ``before`` with the body's operations applied."""
    patch = validated(PatchOp[model], payload, Context.RESOURCE_PATCH_REQUEST)
    after = before.model_copy(deep=True)
    with PROVIDER:
        patch.patch(after)
    return after


def dump(resource: Any, params: ResponseParameters[Any] | None = None,
          context: Context = Context.RESOURCE_QUERY_RESPONSE) -> Json:
    with PROVIDER:
        return dict(resource.model_dump(scim_ctx=context, response_parameters=params, mode="json"))


def response_parameters(model: Any, attributes: str | None, excluded: str | None) -> ResponseParameters[Any] | None:
    if not attributes and not excluded:
        return None
    params: ResponseParameters[Any] = validated(
        ResponseParameters[model], {"attributes": attributes, "excludedAttributes": excluded}, Context.DEFAULT)
    return params


# --- users ------------------------------------------------------------------------------------------------

def _user_resource(row: Row, groups: list[Row], base: str) -> Any:
    data = msgspec.json.decode(row["resource"])
    data.update({
        "id": row["user_id"], "userName": row["user_name"],
        "groups": [{"value": g["id"], "$ref": f"{base}/Groups/{g['id']}", "display": g["display_name"],
                    "type": "direct"} for g in groups] or None,
        "meta": {"resourceType": "User", "created": row["created_at"], "lastModified": row["updated_at"],
                 "location": f"{base}/Users/{row['user_id']}"},
    })
    if "active" in data or not row["active"]:  # a deactivated account reads inactive, set or not
        data["active"] = bool(row["active"])
    if row["external_id"] is not None:
        data["externalId"] = row["external_id"]
    with PROVIDER:
        return UserResource.model_validate(data, scim_ctx=Context.DEFAULT)


async def _user_resources(db: Database, tenant_id: str, rows: list[Row], base: str) -> list[Any]:
    groups: dict[str, list[Row]] = {row["user_id"]: [] for row in rows}
    for membership in await store.groups_of_users(db, tenant_id, list(groups)):
        groups[membership["user_id"]].append(membership)
    return [_user_resource(row, groups[row["user_id"]], base) for row in rows]


async def _load_user(db: Database, tenant_id: str, user_id: str, base: str) -> Any:
    row = await store.get_user(db, tenant_id, user_id)
    if row is None:
        raise NotFoundException(detail=f"User {user_id} not found")
    return (await _user_resources(db, tenant_id, [row], base))[0]


async def get_user(db: Database, tenant_id: str, base: str, user_id: str,
                   params: ResponseParameters[Any] | None = None) -> Json:
    return dump(await _load_user(db, tenant_id, user_id, base), params)


def _email_of(user: Any, user_id: str) -> str:
    """The account's address: the primary of ``emails``, else a work one, else the first, else ``userName``
    when it is an address. RFC 7643 makes emails optional, so a user with none gets a placeholder in the
    reserved ``.invalid`` domain (RFC 2606), which no mail or directory sign-in ever matches."""
    emails = [email for email in user.emails or [] if email.value]
    chosen = next((e for e in emails if e.primary), None) or next((e for e in emails if e.type == "work"), None)
    value = chosen or (emails[0] if emails else None)
    address = str(value.value) if value else str(user.user_name)
    try:
        return accounts.clean_email(address)
    except InvalidInput:
        if value is not None:
            raise InvalidValueException(detail=f"emails: {address!r} is not an email address") from None
        return f"{user_id}@{PLACEHOLDER_DOMAIN}"


def _name_of(user: Any) -> str:
    name = user.display_name or (user.name.formatted if user.name else None)
    if not name and user.name:
        name = " ".join(part for part in (user.name.given_name, user.name.family_name) if part)
    return str(name or user.user_name)[:200]


def _stored(user: Any) -> str:
    """The resource as stored: never a password (write-only, and TMS signs provisioned users in through
    the directory), nor what the server owns (id, meta, groups)."""
    with PROVIDER:
        data = user.model_dump(scim_ctx=Context.DEFAULT)
    for key in ("id", "meta", "groups", "password", "userName", "externalId"):
        data.pop(key, None)
    # ``active`` is the account's state; only whether the provider set it is kept here
    if "active" in data:
        data["active"] = True
    return msgspec.json.encode(data).decode()


def guard_nul(payload: Any) -> None:
    from tms.http.bodies import nul_paths  # the one NUL check of request bodies

    paths = nul_paths(payload)
    if paths:
        raise InvalidValueException(detail=f"{paths[0]}: text may not contain NUL characters (U+0000)")


async def create_user(db: Database, tenant_id: str, base: str, actor_id: str, payload: Any) -> Json:
    guard_nul(payload)
    user = validated(UserResource, payload, Context.RESOURCE_CREATION_REQUEST)
    fresh_id = new_id()
    email, name, active = _email_of(user, fresh_id), _name_of(user), user.active is not False
    settings = await get_settings(db, tenant_id)
    now = now_iso()
    async with db.transaction() as tx:
        if await store.user_name_owner(tx, tenant_id, user.user_name) is not None:
            raise UniquenessException(detail=f"userName {user.user_name!r} is already provisioned")
        account = await store.account_by_email(tx, email)
        if account is not None and (account["tenant_id"] != tenant_id or account["linked"]):
            raise UniquenessException(detail=f"{email} already has an account")
        adopted = account is not None
        user_id = account["id"] if account is not None else fresh_id
        if account is None:
            await store.insert_account(tx, user_id, tenant_id, email, name, settings.default_role, active, now)
        else:
            await store.update_account(tx, tenant_id, user_id, email, name)
        await store.link_user(tx, tenant_id, user_id, user.user_name, user.external_id, _stored(user), now)
        await audit.record(tx, tenant_id, "user.provisioned", "user", user_id, {
            "email": email, "user_name": user.user_name, "external_id": user.external_id, "active": active,
            **({"adopted": True} if adopted else {"role": settings.default_role})})
    if adopted and account is not None and bool(account["active"]) != active:
        await _set_active(db, tenant_id, actor_id, user_id, active)
    return dump(await _load_user(db, tenant_id, user_id, base), context=Context.RESOURCE_CREATION_RESPONSE)


async def _set_active(db: Database, tenant_id: str, actor_id: str, user_id: str, active: bool) -> None:
    try:
        await team.set_active(db, tenant_id, actor_id, user_id, active)
    except Conflict as exc:
        raise MutabilityException(detail=exc.detail) from None


async def _write_user(db: Database, tenant_id: str, actor_id: str, before: Any, after: Any) -> None:
    """Stores a replaced or patched user: the account's email and name, the resource, then its state."""
    row = await store.get_user(db, tenant_id, before.id)
    if row is None:
        raise NotFoundException(detail=f"User {before.id} not found")
    active = after.active is not False
    if row["role"] == "owner" and not active:
        raise MutabilityException(detail="The owner of the team cannot be deactivated")
    email, name = _email_of(after, before.id), _name_of(after)
    async with db.transaction() as tx:
        owner = await store.user_name_owner(tx, tenant_id, after.user_name)
        if owner is not None and owner != before.id:
            raise UniquenessException(detail=f"userName {after.user_name!r} is already provisioned")
        account = await store.account_by_email(tx, email)
        if account is not None and account["id"] != before.id:
            raise UniquenessException(detail=f"{email} already has an account")
        await store.update_account(tx, tenant_id, before.id, email, name)
        await store.update_user(tx, tenant_id, before.id, after.user_name, after.external_id, _stored(after), now_iso())
        changes: dict[str, Any] = audit.changes_between(
            {"email": row["email"], "name": row["name"], "user_name": row["user_name"],
             "external_id": row["external_id"]},
            {"email": email, "name": name, "user_name": after.user_name, "external_id": after.external_id},
            ("email", "name", "user_name", "external_id"))
        if _stored(before) != _stored(after):
            changes.setdefault("attributes", "(changed)")
        if changes:
            await audit.record(tx, tenant_id, "user.updated", "user", before.id, changes)
    if bool(row["active"]) != active:
        await _set_active(db, tenant_id, actor_id, before.id, active)


async def replace_user(db: Database, tenant_id: str, base: str, actor_id: str, user_id: str, payload: Any) -> Json:
    guard_nul(payload)
    before = await _load_user(db, tenant_id, user_id, base)
    after = replacement(UserResource, payload, before)
    await _write_user(db, tenant_id, actor_id, before, after)
    return dump(await _load_user(db, tenant_id, user_id, base), context=Context.RESOURCE_REPLACEMENT_RESPONSE)


async def patch_user(db: Database, tenant_id: str, base: str, actor_id: str, user_id: str, payload: Any) -> Json:
    guard_nul(payload)
    before = await _load_user(db, tenant_id, user_id, base)
    after = patched(UserResource, payload, before)
    await _write_user(db, tenant_id, actor_id, before, after)
    return dump(await _load_user(db, tenant_id, user_id, base), context=Context.RESOURCE_PATCH_RESPONSE)


async def delete_user(db: Database, tenant_id: str, actor_id: str, user_id: str) -> None:
    """Deprovisioning: the account is deactivated (revocations, sessions ended) and no longer in SCIM."""
    row = await store.get_user(db, tenant_id, user_id)
    if row is None:
        raise NotFoundException(detail=f"User {user_id} not found")
    if row["role"] == "owner":
        raise MutabilityException(detail="The owner of the team cannot be deprovisioned")
    if row["active"]:
        await _set_active(db, tenant_id, actor_id, user_id, False)
    async with db.transaction() as tx:
        if await store.unlink_user(tx, tenant_id, user_id):
            await audit.record(tx, tenant_id, "user.deprovisioned", "user", user_id,
                               {"email": row["email"], "user_name": row["user_name"]})


# --- lists and searches -----------------------------------------------------------------------------------

def search_request(model: Any, payload: Any) -> SearchRequest[Any]:
    return validated(SearchRequest[model], payload, Context.SEARCH_REQUEST)  # type: ignore[no-any-return]


def _user_name_filter(request: SearchRequest[Any]) -> str | None:
    """The userName of ``userName eq "…"`` (what IdPs send before a create), answered by the index."""
    from scim2_models.path.expressions import Comparison

    node = request.filter.ast if request.filter is not None else None
    if (isinstance(node, Comparison) and node.op.value == "eq" and node.attr_path.uri is None
            and node.attr_path.attr.casefold() == "username" and node.attr_path.sub_attr is None
            and isinstance(node.value, str)):
        return node.value
    return None


def page_of(model: Any, request: SearchRequest[Any], resources: list[Any]) -> Json:
    if request.filter is not None:
        try:
            resources = [r for r in resources if request.filter.match(r)]
        except SCIMException:
            raise
        except (TypeError, ValueError) as exc:
            raise InvalidFilterException(detail=str(exc)) from None
    total = len(resources)
    start = max(request.start_index or 1, 1)
    count = MAX_RESULTS if request.count is None else min(request.count, MAX_RESULTS)
    window = resources[start - 1:start - 1 + count]
    with PROVIDER:
        listing: Any = ListResponse[model]
        body = listing(total_results=total, start_index=start, items_per_page=len(window), resources=window)
        return dict(body.model_dump(scim_ctx=Context.SEARCH_RESPONSE, response_parameters=request, mode="json"))


async def search_users(db: Database, tenant_id: str, base: str, request: SearchRequest[Any]) -> Json:
    user_name = _user_name_filter(request)
    rows = await store.list_users(db, tenant_id, user_name=user_name)
    return page_of(UserResource, request, await _user_resources(db, tenant_id, rows, base))


def discovery_list(items: list[Any]) -> Json:
    with PROVIDER:
        listing: Any = ListResponse[type(items[0])]  # type: ignore[misc]
        body = listing(total_results=len(items), start_index=1, items_per_page=len(items), resources=items)
        return dict(body.model_dump(scim_ctx=Context.SEARCH_RESPONSE, mode="json"))


def domain_error(exc: DomainError) -> SCIMException:
    """A TMS error met while provisioning, in SCIM's words."""
    if isinstance(exc, Conflict):
        return UniquenessException(detail=exc.detail)
    return InvalidValueException(detail=exc.detail)


async def record_refused(db: Database, tenant_id: str, token_id: str, reason: str, request: str) -> None:
    """An audit entry for a refused SCIM request: a token without the ``scim`` scope (a read or write token
    pasted into the provider by mistake, or one trying what it may not), or a write naming an id this
    team does not have (another team's, or one the provider's mapping lost): the admins see who and what."""
    async with db.transaction() as tx:
        await audit.record(tx, tenant_id, "scim.request_refused", "token", token_id,
                           {"reason": reason, "request": request[:300]})
