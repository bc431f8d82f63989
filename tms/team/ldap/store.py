"""SQL of LDAP sign-in: the tenant's directory settings and the accounts a bind finds or creates."""

from __future__ import annotations

from tms.db import Database, Row, Transaction

Reader = Database | Transaction
# bind_password: a plain value from before migration 0042, emptied at start (and by every save);
# bind_password_sealed: the password as a Fernet token (tms.team.signin.secret_box)
COLUMNS = ("enabled", "url", "start_tls", "ca_cert", "user_dn_template", "search_base", "search_filter",
           "bind_dn", "bind_password", "bind_password_sealed", "group_base", "group_role_map", "default_role")


async def get_settings(db: Reader, tenant_id: str) -> Row | None:
    return await db.fetch_one(f"SELECT {', '.join(COLUMNS)}, updated_at FROM ldap_settings WHERE tenant_id = ?",
                              (tenant_id,))


async def put_settings(tx: Transaction, tenant_id: str, values: dict[str, object], at: str) -> None:
    names = ", ".join(COLUMNS)
    marks = ", ".join(f":{column}" for column in COLUMNS)
    updates = ", ".join(f"{column} = excluded.{column}" for column in COLUMNS)
    await tx.execute(
        f"INSERT INTO ldap_settings (tenant_id, {names}, updated_at) VALUES (:tenant_id, {marks}, :updated_at) "
        f"ON CONFLICT (tenant_id) DO UPDATE SET {updates}, updated_at = excluded.updated_at",
        {**values, "tenant_id": tenant_id, "updated_at": at})


async def plain_passwords(db: Reader) -> list[Row]:
    """Settings that still hold a plain bind password (from before migration 0042)."""
    return await db.fetch_all("SELECT tenant_id, bind_password FROM ldap_settings WHERE bind_password != ''")


async def seal_passwords(tx: Transaction, sealed: list[tuple[str, str, str]]) -> None:
    """(sealed, tenant id, the plain value read) each: the plain value goes, unless it changed meanwhile."""
    await tx.executemany("UPDATE ldap_settings SET bind_password_sealed = ?, bind_password = '' "
                         "WHERE tenant_id = ? AND bind_password = ?", sealed)


async def tenants_with_ldap(db: Reader) -> list[Row]:
    return await db.fetch_all(
        "SELECT t.id, t.name FROM ldap_settings l JOIN tenants t ON t.id = l.tenant_id "
        "WHERE l.enabled = 1 AND t.status = 'ACTIVE' ORDER BY t.name")


async def tenant_name(db: Reader, tenant_id: str) -> str | None:
    value = await db.fetch_value("SELECT name FROM tenants WHERE id = ? AND status = 'ACTIVE'", (tenant_id,))
    return None if value is None else str(value)


async def account_by_email(db: Reader, email: str) -> Row | None:
    return await db.fetch_one("SELECT id, tenant_id, name, role, active FROM users WHERE email = ?", (email,))


async def insert_account(tx: Transaction, user_id: str, tenant_id: str, email: str, name: str, role: str,
                         at: str) -> None:
    """A directory user signs in with the directory's password: the stored hash is a value no password
    verifies against, so the password form never lets them in."""
    await tx.execute(
        "INSERT INTO users (id, tenant_id, email, name, password_hash, role, created_at, last_login_at) "
        "VALUES (?, ?, ?, ?, '!ldap', ?, ?, ?)", (user_id, tenant_id, email, name, role, at, at))


async def record_login(tx: Transaction, user_id: str, at: str) -> None:
    await tx.execute("UPDATE users SET last_login_at = ? WHERE id = ?", (at, user_id))
