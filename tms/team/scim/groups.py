"""SCIM Groups (RFC 7643 section 4.2): a group's members and its name, which the tenant's
group -> role mapping turns into roles; each change audited. Users are in ``service.py``."""

from __future__ import annotations

from typing import Any

from scim2_models import (
    Context,
    Group,
    InvalidValueException,
    NotFoundException,
    ResponseParameters,
    SearchRequest,
)

from tms.db import Database, Row
from tms.ids import new_id, now_iso
from tms.team.audit import service as audit
from tms.team.scim import store
from tms.team.scim.models import PROVIDER
from tms.team.scim.roles import apply_roles
from tms.team.scim.service import Json, dump, guard_nul, page_of, patched, replacement, validated

# --- groups -----------------------------------------------------------------------------------------------

def _group_resource(row: Row, members: list[Row], base: str) -> Group:
    data: Json = {
        "id": row["id"], "displayName": row["display_name"],
        "members": [{"value": m["user_id"], "$ref": f"{base}/Users/{m['user_id']}", "display": m["display"],
                     "type": "User"} for m in members] or None,
        "meta": {"resourceType": "Group", "created": row["created_at"], "lastModified": row["updated_at"],
                 "location": f"{base}/Groups/{row['id']}"},
    }
    if row["external_id"] is not None:
        data["externalId"] = row["external_id"]
    with PROVIDER:
        return Group.model_validate(data, scim_ctx=Context.DEFAULT)


async def _group_resources(db: Database, tenant_id: str, rows: list[Row], base: str) -> list[Group]:
    members: dict[str, list[Row]] = {row["id"]: [] for row in rows}
    for member in await store.members_of_groups(db, tenant_id, list(members)):
        members[member["group_id"]].append(member)
    return [_group_resource(row, members[row["id"]], base) for row in rows]


async def _load_group(db: Database, tenant_id: str, group_id: str, base: str) -> Group:
    row = await store.get_group(db, tenant_id, group_id)
    if row is None:
        raise NotFoundException(detail=f"Group {group_id} not found")
    return (await _group_resources(db, tenant_id, [row], base))[0]


async def get_group(db: Database, tenant_id: str, base: str, group_id: str,
                    params: ResponseParameters[Any] | None = None) -> Json:
    return dump(await _load_group(db, tenant_id, group_id, base), params)


async def _members(db: Database, tenant_id: str, group: Group) -> dict[str, str | None]:
    """The users a group names (id -> display); each must be a provisioned user of this tenant (groups in
    groups are not supported: roles come from direct membership)."""
    members: dict[str, str | None] = {}
    for member in group.members or []:
        if member.type not in (None, "User"):
            raise InvalidValueException(detail="members: only users can be members of a group here")
        if not member.value:
            raise InvalidValueException(detail="members: every member needs its value (a User id)")
        members[str(member.value)] = member.display
    known = await store.linked_user_ids(db, tenant_id, list(members))
    missing = [user_id for user_id in members if user_id not in known]
    if missing:
        raise InvalidValueException(detail=f"members: no provisioned User {missing[0]}")
    return members


def _display_name(group: Group) -> str:
    name = (group.display_name or "").strip()
    if not name:
        raise InvalidValueException(detail="displayName is required")
    return name


async def create_group(db: Database, tenant_id: str, base: str, actor_id: str, payload: Any) -> Json:
    guard_nul(payload)
    group = validated(Group, payload, Context.RESOURCE_CREATION_REQUEST)
    name = _display_name(group)
    members = await _members(db, tenant_id, group)
    group_id, now = new_id(), now_iso()
    async with db.transaction() as tx:
        await store.insert_group(tx, group_id, tenant_id, name, group.external_id, now)
        await store.set_members(tx, group_id, members)
        await audit.record(tx, tenant_id, "group.created", "scim_group", group_id,
                           {"display_name": name, "members": len(members)})
    await apply_roles(db, tenant_id, actor_id, members)
    return dump(await _load_group(db, tenant_id, group_id, base), context=Context.RESOURCE_CREATION_RESPONSE)


async def _write_group(db: Database, tenant_id: str, actor_id: str, before: Group, after: Group) -> None:
    name = _display_name(after)
    old_members = [str(m.value) for m in before.members or []]
    members = await _members(db, tenant_id, after)
    async with db.transaction() as tx:
        if await store.get_group(tx, tenant_id, str(before.id)) is None:
            raise NotFoundException(detail=f"Group {before.id} not found")
        await store.update_group(tx, tenant_id, str(before.id), name, after.external_id, now_iso())
        await store.set_members(tx, str(before.id), members)
        changes: dict[str, Any] = audit.changes_between(
            {"display_name": before.display_name, "external_id": before.external_id},
            {"display_name": name, "external_id": after.external_id}, ("display_name", "external_id"))
        added, removed = set(members) - set(old_members), set(old_members) - set(members)
        if added:
            changes["members_added"] = sorted(added)
        if removed:
            changes["members_removed"] = sorted(removed)
        if changes:
            await audit.record(tx, tenant_id, "group.updated", "scim_group", str(before.id), changes)
    # a renamed group may map to another role: every member is checked
    await apply_roles(db, tenant_id, actor_id, [*members, *old_members])


async def replace_group(db: Database, tenant_id: str, base: str, actor_id: str, group_id: str, payload: Any) -> Json:
    guard_nul(payload)
    before = await _load_group(db, tenant_id, group_id, base)
    after = replacement(Group, payload, before)
    await _write_group(db, tenant_id, actor_id, before, after)
    return dump(await _load_group(db, tenant_id, group_id, base), context=Context.RESOURCE_REPLACEMENT_RESPONSE)


async def patch_group(db: Database, tenant_id: str, base: str, actor_id: str, group_id: str, payload: Any) -> Json:
    guard_nul(payload)
    before = await _load_group(db, tenant_id, group_id, base)
    after = patched(Group, payload, before)
    await _write_group(db, tenant_id, actor_id, before, after)
    return dump(await _load_group(db, tenant_id, group_id, base), context=Context.RESOURCE_PATCH_RESPONSE)


async def delete_group(db: Database, tenant_id: str, actor_id: str, group_id: str) -> None:
    row = await store.get_group(db, tenant_id, group_id)
    if row is None:
        raise NotFoundException(detail=f"Group {group_id} not found")
    members = [m["user_id"] for m in await store.members_of_groups(db, tenant_id, [group_id])]
    async with db.transaction() as tx:
        if await store.delete_group(tx, tenant_id, group_id):
            await audit.record(tx, tenant_id, "group.deleted", "scim_group", group_id,
                               {"display_name": row["display_name"], "members": len(members)})
    await apply_roles(db, tenant_id, actor_id, members)


async def search_groups(db: Database, tenant_id: str, base: str, request: SearchRequest[Any]) -> Json:
    rows = await store.list_groups(db, tenant_id)
    return page_of(Group, request, await _group_resources(db, tenant_id, rows, base))
