"""SQL of SCIM provisioning: the resources an identity provider wrote, their groups and the tenant's mapping."""

from __future__ import annotations

from tms.db import Database, Row, Transaction

Reader = Database | Transaction

_USER = (
    "SELECT s.user_id, s.user_name, s.external_id, s.resource, s.created_at, s.updated_at, u.email, u.name, "
    "u.role, u.active FROM scim_users s JOIN users u ON u.id = s.user_id"
)


async def get_user(db: Reader, tenant_id: str, user_id: str) -> Row | None:
    return await db.fetch_one(f"{_USER} WHERE s.tenant_id = ? AND s.user_id = ?", (tenant_id, user_id))


async def list_users(db: Reader, tenant_id: str, *, user_name: str | None = None) -> list[Row]:
    """Every provisioned user of the tenant (or the one with that userName), oldest first."""
    if user_name is not None:
        return await db.fetch_all(f"{_USER} WHERE s.tenant_id = ? AND s.user_name = ?", (tenant_id, user_name))
    return await db.fetch_all(f"{_USER} WHERE s.tenant_id = ? ORDER BY s.created_at, s.user_id", (tenant_id,))


async def user_name_owner(db: Reader, tenant_id: str, user_name: str) -> str | None:
    value = await db.fetch_value("SELECT user_id FROM scim_users WHERE tenant_id = ? AND user_name = ?",
                                 (tenant_id, user_name))
    return None if value is None else str(value)


async def account_by_email(db: Reader, email: str) -> Row | None:
    """The TMS account holding an address (any tenant: addresses are unique across the install)."""
    return await db.fetch_one(
        "SELECT u.id, u.tenant_id, u.role, u.active, s.user_id AS linked FROM users u "
        "LEFT JOIN scim_users s ON s.user_id = u.id WHERE u.email = ?", (email,))


async def insert_account(tx: Transaction, user_id: str, tenant_id: str, email: str, name: str, role: str,
                         active: bool, at: str) -> None:
    """A provisioned user signs in through the directory (OIDC, LDAP), never with a password: the hash
    is a value no password verifies against."""
    await tx.execute(
        "INSERT INTO users (id, tenant_id, email, name, password_hash, role, active, created_at) "
        "VALUES (?, ?, ?, ?, '!provisioned', ?, ?, ?)",
        (user_id, tenant_id, email, name, role, 1 if active else 0, at))


async def update_account(tx: Transaction, tenant_id: str, user_id: str, email: str, name: str) -> None:
    await tx.execute("UPDATE users SET email = ?, name = ? WHERE tenant_id = ? AND id = ?",
                     (email, name, tenant_id, user_id))


async def link_user(tx: Transaction, tenant_id: str, user_id: str, user_name: str, external_id: str | None,
                    resource: str, at: str) -> None:
    await tx.execute(
        "INSERT INTO scim_users (user_id, tenant_id, user_name, external_id, resource, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)", (user_id, tenant_id, user_name, external_id, resource, at, at))


async def update_user(tx: Transaction, tenant_id: str, user_id: str, user_name: str, external_id: str | None,
                      resource: str, at: str) -> None:
    await tx.execute(
        "UPDATE scim_users SET user_name = ?, external_id = ?, resource = ?, updated_at = ? "
        "WHERE tenant_id = ? AND user_id = ?", (user_name, external_id, resource, at, tenant_id, user_id))


async def unlink_user(tx: Transaction, tenant_id: str, user_id: str) -> int:
    await tx.execute("DELETE FROM scim_group_members WHERE user_id = ? AND group_id IN "
                     "(SELECT id FROM scim_groups WHERE tenant_id = ?)", (user_id, tenant_id))
    return await tx.execute("DELETE FROM scim_users WHERE tenant_id = ? AND user_id = ?", (tenant_id, user_id))


async def groups_of_users(db: Reader, tenant_id: str, user_ids: list[str]) -> list[Row]:
    """(user_id, group id, display_name) for each membership of these users."""
    if not user_ids:
        return []
    marks = ", ".join("?" for _ in user_ids)
    return await db.fetch_all(
        f"SELECT m.user_id, g.id, g.display_name FROM scim_group_members m JOIN scim_groups g ON g.id = m.group_id "
        f"WHERE g.tenant_id = ? AND m.user_id IN ({marks}) ORDER BY g.display_name, g.id", (tenant_id, *user_ids))


_GROUP = "SELECT id, display_name, external_id, created_at, updated_at FROM scim_groups"


async def get_group(db: Reader, tenant_id: str, group_id: str) -> Row | None:
    return await db.fetch_one(f"{_GROUP} WHERE tenant_id = ? AND id = ?", (tenant_id, group_id))


async def list_groups(db: Reader, tenant_id: str) -> list[Row]:
    return await db.fetch_all(f"{_GROUP} WHERE tenant_id = ? ORDER BY created_at, id", (tenant_id,))


async def members_of_groups(db: Reader, tenant_id: str, group_ids: list[str]) -> list[Row]:
    """(group_id, user_id, display) for each member of these groups."""
    if not group_ids:
        return []
    marks = ", ".join("?" for _ in group_ids)
    return await db.fetch_all(
        f"SELECT m.group_id, m.user_id, COALESCE(m.display, s.user_name) AS display FROM scim_group_members m "
        f"JOIN scim_users s ON s.user_id = m.user_id WHERE s.tenant_id = ? AND m.group_id IN ({marks}) "
        f"ORDER BY s.user_name, m.user_id", (tenant_id, *group_ids))


async def insert_group(tx: Transaction, group_id: str, tenant_id: str, display_name: str, external_id: str | None,
                       at: str) -> None:
    await tx.execute(
        "INSERT INTO scim_groups (id, tenant_id, display_name, external_id, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?)", (group_id, tenant_id, display_name, external_id, at, at))


async def update_group(tx: Transaction, tenant_id: str, group_id: str, display_name: str, external_id: str | None,
                       at: str) -> None:
    await tx.execute("UPDATE scim_groups SET display_name = ?, external_id = ?, updated_at = ? "
                     "WHERE tenant_id = ? AND id = ?", (display_name, external_id, at, tenant_id, group_id))


async def set_members(tx: Transaction, group_id: str, members: dict[str, str | None]) -> None:
    """The group's members: user id -> display name as the provider gave it (or None)."""
    await tx.execute("DELETE FROM scim_group_members WHERE group_id = ?", (group_id,))
    if members:
        await tx.executemany("INSERT INTO scim_group_members (group_id, user_id, display) VALUES (?, ?, ?)",
                             [(group_id, user_id, display) for user_id, display in members.items()])


async def delete_group(tx: Transaction, tenant_id: str, group_id: str) -> int:
    await tx.execute("DELETE FROM scim_group_members WHERE group_id IN "
                     "(SELECT id FROM scim_groups WHERE tenant_id = ? AND id = ?)", (tenant_id, group_id))
    return await tx.execute("DELETE FROM scim_groups WHERE tenant_id = ? AND id = ?", (tenant_id, group_id))


async def linked_user_ids(db: Reader, tenant_id: str, user_ids: list[str]) -> set[str]:
    """Those of ``user_ids`` that are provisioned users of the tenant."""
    if not user_ids:
        return set()
    marks = ", ".join("?" for _ in user_ids)
    rows = await db.fetch_all(f"SELECT user_id FROM scim_users WHERE tenant_id = ? AND user_id IN ({marks})",
                              (tenant_id, *user_ids))
    return {row["user_id"] for row in rows}


async def get_settings(db: Reader, tenant_id: str) -> Row | None:
    return await db.fetch_one("SELECT group_role_map, default_role, updated_at FROM scim_settings WHERE tenant_id = ?",
                              (tenant_id,))


async def put_settings(tx: Transaction, tenant_id: str, group_role_map: str, default_role: str, at: str) -> None:
    await tx.execute(
        "INSERT INTO scim_settings (tenant_id, group_role_map, default_role, updated_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (tenant_id) DO UPDATE SET group_role_map = excluded.group_role_map, "
        "default_role = excluded.default_role, updated_at = excluded.updated_at",
        (tenant_id, group_role_map, default_role, at))
