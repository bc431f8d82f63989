"""The tenant's SCIM group -> role map (Settings -> Sign-in; LDAP reads the same map) and how it turns a
provisioned user's groups into a role: the highest a group maps to, else the default role. Roles change
through ``tms.team.service.change_role`` (a demotion below admin revokes what the user issued)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import msgspec

from tms.db import Database
from tms.errors import InvalidInput
from tms.ids import now_iso
from tms.team import service as team
from tms.team.audit import service as audit
from tms.team.scim import store

ROLE_ORDER = ("viewer", "tester", "admin")
# a tenant that never saved its map (here, not in .models: LDAP reads the map without loading SCIM's models)
DEFAULT_GROUP_ROLE_MAP = {"tms-admins": "admin", "tms-testers": "tester", "tms-viewers": "viewer"}
DEFAULT_ROLE = "viewer"


@dataclass(frozen=True, slots=True)
class Settings:
    group_role_map: dict[str, str]
    default_role: str
    customised: bool = False


async def get_settings(db: Database, tenant_id: str) -> Settings:
    row = await store.get_settings(db, tenant_id)
    if row is None:
        return Settings(dict(DEFAULT_GROUP_ROLE_MAP), DEFAULT_ROLE)
    return Settings(msgspec.json.decode(row["group_role_map"]), row["default_role"], True)


def parse_group_role_map(text: str, field: str = "group_role_map") -> dict[str, str]:
    """``group = role`` lines (the form's spelling) into a map; every role must be assignable."""
    mapping: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        group, sep, role = line.rpartition("=")
        group, role = group.strip(), role.strip().lower()
        if not sep or not group:
            raise InvalidInput(f"line {number}: write it as 'group = role'", field=field)
        if role not in ROLE_ORDER:
            raise InvalidInput(f"line {number}: role must be one of admin, tester, viewer", field=field)
        mapping[group] = role
    return mapping


def format_group_role_map(mapping: Mapping[str, str]) -> str:
    return "".join(f"{group} = {role}\n" for group, role in mapping.items())


async def save_settings(db: Database, tenant_id: str, group_role_map: dict[str, str], default_role: str) -> None:
    if default_role not in ROLE_ORDER:
        raise InvalidInput("role must be one of admin, tester, viewer", field="scim_default_role")
    before = await get_settings(db, tenant_id)
    async with db.transaction() as tx:
        await store.put_settings(tx, tenant_id, msgspec.json.encode(group_role_map).decode(), default_role, now_iso())
        await audit.record(tx, tenant_id, "scim.settings_updated", "tenant", tenant_id, audit.changes_between(
            {"group_role_map": before.group_role_map, "default_role": before.default_role},
            {"group_role_map": group_role_map, "default_role": default_role}, ("group_role_map", "default_role")))


def mapped_role(settings: Settings, group_names: Iterable[str]) -> str:
    """The highest role the groups map to (group names compared case-insensitively), else the default."""
    by_name = {name.casefold(): role for name, role in settings.group_role_map.items()}
    roles = [by_name[name.casefold()] for name in group_names if name.casefold() in by_name]
    return max(roles, key=ROLE_ORDER.index) if roles else settings.default_role


async def apply_roles(db: Database, tenant_id: str, actor_id: str, user_ids: Iterable[str]) -> None:
    """Gives each user the role their groups map to (through the team service: a demotion revokes)."""
    ids = sorted(set(user_ids))
    if not ids:
        return
    settings = await get_settings(db, tenant_id)
    groups: dict[str, list[str]] = {user_id: [] for user_id in ids}
    for membership in await store.groups_of_users(db, tenant_id, ids):
        groups[membership["user_id"]].append(membership["display_name"])
    for user_id in ids:
        row = await store.get_user(db, tenant_id, user_id)
        if row is None or row["role"] == "owner":
            continue
        role = mapped_role(settings, groups[user_id])
        if role != row["role"]:
            await team.change_role(db, tenant_id, actor_id, user_id, role)
