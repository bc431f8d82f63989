"""The SQL of single sign-on: tenants' identity providers and the sign-ins under way."""

from __future__ import annotations

import msgspec

from tms.db import Database, Row, Transaction
from tms.team.sso.models import PendingLogin, ProviderSettings

_COLUMNS = ("tenant_id, name, issuer, client_id, client_secret, scopes, allowed_domains, create_users, default_role, "
            "groups_claim, group_roles, sso_required, enabled, updated_at")


def _settings(row: Row) -> ProviderSettings:
    return ProviderSettings(
        tenant_id=row["tenant_id"], name=row["name"], issuer=row["issuer"], client_id=row["client_id"],
        client_secret=row["client_secret"], scopes=row["scopes"],
        allowed_domains=msgspec.json.decode(row["allowed_domains"], type=list[str]),
        create_users=bool(row["create_users"]), default_role=row["default_role"], groups_claim=row["groups_claim"],
        group_roles=msgspec.json.decode(row["group_roles"], type=dict[str, str]),
        sso_required=bool(row["sso_required"]), enabled=bool(row["enabled"]), updated_at=row["updated_at"])


async def get_provider(db: Database | Transaction, tenant_id: str) -> ProviderSettings | None:
    row = await db.fetch_one(f"SELECT {_COLUMNS} FROM oidc_providers WHERE tenant_id = ?", (tenant_id,))
    return None if row is None else _settings(row)


async def save_provider(tx: Transaction, settings: ProviderSettings) -> None:
    await tx.execute(
        f"INSERT INTO oidc_providers ({_COLUMNS}) VALUES (:tenant_id, :name, :issuer, :client_id, :client_secret, "
        ":scopes, :allowed_domains, :create_users, :default_role, :groups_claim, :group_roles, :sso_required, "
        ":enabled, :updated_at) ON CONFLICT (tenant_id) DO UPDATE SET name = excluded.name, issuer = excluded.issuer, "
        "client_id = excluded.client_id, client_secret = excluded.client_secret, scopes = excluded.scopes, "
        "allowed_domains = excluded.allowed_domains, create_users = excluded.create_users, "
        "default_role = excluded.default_role, groups_claim = excluded.groups_claim, "
        "group_roles = excluded.group_roles, sso_required = excluded.sso_required, enabled = excluded.enabled, "
        "updated_at = excluded.updated_at",
        {
            "tenant_id": settings.tenant_id, "name": settings.name, "issuer": settings.issuer,
            "client_id": settings.client_id, "client_secret": settings.client_secret, "scopes": settings.scopes,
            "allowed_domains": msgspec.json.encode(settings.allowed_domains).decode(),
            "create_users": int(settings.create_users), "default_role": settings.default_role,
            "groups_claim": settings.groups_claim, "group_roles": msgspec.json.encode(settings.group_roles).decode(),
            "sso_required": int(settings.sso_required), "enabled": int(settings.enabled),
            "updated_at": settings.updated_at,
        },
    )


async def delete_provider(tx: Transaction, tenant_id: str) -> int:
    return await tx.execute("DELETE FROM oidc_providers WHERE tenant_id = ?", (tenant_id,))


async def enabled_providers(db: Database, tenant_id: str | None) -> tuple[list[Row], int]:
    """The enabled provider of ``tenant_id`` (or of the only tenant that has one), and how many tenants
    have one: what the sign-in page offers. Two indexed reads."""
    count = int(await db.fetch_value("SELECT COUNT(*) FROM oidc_providers WHERE enabled = 1"))
    if tenant_id:
        rows = await db.fetch_all("SELECT tenant_id, name, sso_required FROM oidc_providers "
                                  "WHERE enabled = 1 AND tenant_id = ?", (tenant_id,))
    elif count == 1:
        rows = await db.fetch_all("SELECT tenant_id, name, sso_required FROM oidc_providers WHERE enabled = 1")
    else:
        rows = []
    return rows, count


async def tenants_for_domain(db: Database, domain: str) -> list[str]:
    """Tenants whose enabled provider lists ``domain`` among its allowed email domains."""
    rows = await db.fetch_all("SELECT tenant_id, allowed_domains FROM oidc_providers WHERE enabled = 1")
    return [row["tenant_id"] for row in rows
            if domain in msgspec.json.decode(row["allowed_domains"], type=list[str])]


async def sso_required(db: Database, tenant_id: str) -> bool:
    return bool(await db.fetch_value(
        "SELECT 1 FROM oidc_providers WHERE tenant_id = ? AND enabled = 1 AND sso_required = 1", (tenant_id,)))


async def insert_login(tx: Transaction, state_sha256: str, login: PendingLogin, created_at: str) -> None:
    await tx.execute(
        "INSERT INTO oidc_logins (state_sha256, tenant_id, browser_sha256, nonce, code_verifier, next_path, "
        "created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (state_sha256, login.tenant_id, login.browser_sha256, login.nonce, login.code_verifier, login.next_path,
         created_at, login.expires_at),
    )


async def take_login(tx: Transaction, state_sha256: str) -> PendingLogin | None:
    """The sign-in a state names, deleted in the same transaction: a state works once."""
    row = await tx.fetch_one(
        "SELECT tenant_id, browser_sha256, nonce, code_verifier, next_path, expires_at FROM oidc_logins "
        "WHERE state_sha256 = ?", (state_sha256,))
    if row is None:
        return None
    await tx.execute("DELETE FROM oidc_logins WHERE state_sha256 = ?", (state_sha256,))
    return PendingLogin(row["tenant_id"], row["browser_sha256"], row["nonce"], row["code_verifier"],
                        row["next_path"], row["expires_at"])


async def forget_expired_logins(tx: Transaction, now: str) -> int:
    return await tx.execute("DELETE FROM oidc_logins WHERE expires_at <= ?", (now,))
