"""LDAP / Active Directory sign-in, per tenant: settings (admins, Settings → Directory), the connection
test, and the sign-in that binds as the user.

A successful bind finds the TMS account by the entry's address (``mail``, else ``userPrincipalName``)
in the tenant, or creates it with the role the user's groups map to (``group_role_map``: a group's DN
or its CN → role; the highest wins), else the tenant's default role; with neither, the sign-in is
refused. An existing account's role follows the map at each sign-in (through the team service, so a
demotion below admin revokes what they issued); the owner's never changes. The bind password of the
service account is write-only: stored for the search, never shown, returned, audited or logged.

At rest the bind password is a Fernet token (``secret_box``, purpose ``ldap-bind-password``) in
``bind_password_sealed``. Values stored in clear before migration 0042 are sealed at start
(``seal_plain_passwords``, called by the app's lifespan: a migration cannot encrypt, the key is not in
the database) and by any save; until then, and for a value an older replica writes during an upgrade,
the plain column is read as it is.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

import msgspec

from tms.config import Config
from tms.db import Database, Row
from tms.errors import InvalidInput, NotFound
from tms.ids import new_id, now_iso
from tms.team import accounts
from tms.team import service as team
from tms.team.audit import service as audit
from tms.team.ldap import client, store
from tms.team.ldap.client import DirectoryError, WrongCredentials
from tms.team.scim.roles import ROLE_ORDER, format_group_role_map, parse_group_role_map
from tms.team.signin import secret_box

__all__ = ["DirectoryError", "SignInRefused", "WrongCredentials"]

log = logging.getLogger(__name__)
SECRET_PURPOSE = "ldap-bind-password"  # noqa: S105 - the name of a key derivation purpose


class SignInRefused(Exception):
    """The directory let the user in but TMS does not (no role maps, another tenant's address, …)."""


@dataclass(frozen=True, slots=True)
class LdapSettings:
    enabled: bool = False
    url: str = ""
    start_tls: bool = True
    ca_cert: str = ""
    user_dn_template: str = ""
    search_base: str = ""
    search_filter: str = ""
    bind_dn: str = ""
    has_bind_password: bool = False
    group_base: str = ""
    group_role_map: dict[str, str] = field(default_factory=dict)
    default_role: str = ""

    def form(self) -> dict[str, Any]:
        """The settings as the page's form shows them (the password never)."""
        return {"enabled": self.enabled, "url": self.url, "start_tls": self.start_tls, "ca_cert": self.ca_cert,
                "user_dn_template": self.user_dn_template, "search_base": self.search_base,
                "search_filter": self.search_filter, "bind_dn": self.bind_dn, "group_base": self.group_base,
                "group_role_map": format_group_role_map(self.group_role_map), "default_role": self.default_role}


def _settings(row: Row | None) -> LdapSettings:
    if row is None:
        return LdapSettings()
    return LdapSettings(
        enabled=bool(row["enabled"]), url=row["url"], start_tls=bool(row["start_tls"]), ca_cert=row["ca_cert"],
        user_dn_template=row["user_dn_template"], search_base=row["search_base"],
        search_filter=row["search_filter"], bind_dn=row["bind_dn"],
        has_bind_password=bool(row["bind_password"] or row["bind_password_sealed"]),
        group_base=row["group_base"], group_role_map=msgspec.json.decode(row["group_role_map"]),
        default_role=row["default_role"])


async def get_settings(db: Database, tenant_id: str) -> LdapSettings:
    return _settings(await store.get_settings(db, tenant_id))


def _checked(form: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The form's values as columns, and a message per wrong field."""
    errors: dict[str, str] = {}
    values: dict[str, Any] = {
        "enabled": 1 if form.get("enabled") else 0, "start_tls": 1 if form.get("start_tls") else 0,
        **{key: form.get(key, "").strip() for key in ("url", "user_dn_template", "search_base", "search_filter",
                                                       "bind_dn", "group_base", "default_role")},
        "ca_cert": form.get("ca_cert", "").strip(),
    }
    url = values["url"]
    if not url and values["enabled"]:
        errors["url"] = "Enter the directory's URL: ldaps://host:636, or ldap://host:389 with StartTLS."
    elif url and not url.lower().startswith(("ldap://", "ldaps://")):
        errors["url"] = "The URL starts with ldaps:// or ldap:// (with StartTLS)."
    template, base = values["user_dn_template"], values["search_base"]
    if template and "{username}" not in template:
        errors["user_dn_template"] = "The template names {username}, e.g. uid={username},ou=people,dc=example,dc=org."
    if values["enabled"] and not template and not base:
        errors["user_dn_template"] = "Give a user DN template, or a search base (and a service account) below."
    if values["search_filter"] and "{username}" not in values["search_filter"]:
        errors["search_filter"] = "The filter names {username}, e.g. (uid={username}) or (sAMAccountName={username})."
    if values["ca_cert"] and "-----BEGIN CERTIFICATE-----" not in values["ca_cert"]:
        errors["ca_cert"] = "Paste the CA certificate in PEM form (-----BEGIN CERTIFICATE----- …)."
    if values["default_role"] and values["default_role"] not in ROLE_ORDER:
        errors["default_role"] = "Choose admin, tester, viewer, or no default."
    try:
        values["group_role_map"] = parse_group_role_map(form.get("group_role_map", ""))
    except InvalidInput as exc:
        errors["group_role_map"] = exc.detail
    return values, errors


def _stored_password(config: Config, row: Row | None) -> str:
    """The bind password of stored settings, in clear ('' for none)."""
    if row is None:
        return ""
    if row["bind_password"]:  # not sealed yet (from before 0042, or written by an older replica)
        return str(row["bind_password"])
    if not row["bind_password_sealed"]:
        return ""
    try:
        return secret_box.decrypt(config, SECRET_PURPOSE, row["bind_password_sealed"])
    except secret_box.SecretUnreadable:
        raise DirectoryError("The stored service account password cannot be read with this server's key "
                             "([auth] secret_key changed?): enter it again in Settings → Directory.") from None


async def _directory(db: Database, config: Config, tenant_id: str, values: dict[str, Any],
                     password: str) -> client.Directory:
    bind_password = password or _stored_password(config, await store.get_settings(db, tenant_id))
    return client.Directory(
        url=values["url"], start_tls=bool(values["start_tls"]), ca_cert=values["ca_cert"],
        user_dn_template=values["user_dn_template"], search_base=values["search_base"],
        search_filter=values["search_filter"], bind_dn=values["bind_dn"], bind_password=bind_password,
        group_base=values["group_base"])


def _sealed_for_save(config: Config, before: Row | None, form: dict[str, str]) -> tuple[str, str | None]:
    """(what ``bind_password_sealed`` becomes, the audit's word for the password or None when it did
    not change). Typed: sealed anew; empty: the stored one kept (a plain one sealed now); cleared: ''."""
    typed = form.get("bind_password", "")
    try:
        old = _stored_password(config, before)
    except DirectoryError:  # unreadable with this key: whatever is typed replaces it
        old = None
    if form.get("clear_bind_password"):
        return "", "(removed)" if old != "" else None
    if typed:
        return secret_box.encrypt(config, SECRET_PURPOSE, typed), "(changed)" if typed != old else None
    if before is not None and before["bind_password"]:
        return secret_box.encrypt(config, SECRET_PURPOSE, before["bind_password"]), None
    return (before["bind_password_sealed"] if before is not None else ""), None


async def save_settings(db: Database, config: Config, tenant_id: str, form: dict[str, str]) -> None:
    """Stores the form; an empty password field keeps the stored one, ``clear_bind_password`` drops it."""
    values, errors = _checked(form)
    if errors:
        raise team.FormErrors(errors)
    before = await store.get_settings(db, tenant_id)
    sealed, password_change = _sealed_for_save(config, before, form)
    row = {**values, "group_role_map": msgspec.json.encode(values["group_role_map"]).decode(),
           "bind_password": "", "bind_password_sealed": sealed}
    async with db.transaction() as tx:
        await store.put_settings(tx, tenant_id, row, now_iso())
        old = dict(before) if before is not None else {}
        shown = [column for column in store.COLUMNS if not column.startswith("bind_password")]
        changes: dict[str, Any] = audit.changes_between(old, row, shown)
        if password_change:
            changes["bind_password"] = password_change
        await audit.record(tx, tenant_id, "ldap.settings_updated", "tenant", tenant_id, changes)


async def seal_plain_passwords(db: Database, config: Config) -> int:
    """Encrypts every bind password still stored in clear (from before migration 0042) and empties the
    plain column, in one transaction; returns how many. Run at each start: a no-op once done, and safe
    on several replicas at once (a row is updated only while it still holds the value read)."""
    rows = await store.plain_passwords(db)
    if not rows:
        return 0
    # one Fernet encryption each (tens of microseconds), off the event loop for a large install
    sealed = await asyncio.to_thread(lambda: [
        (secret_box.encrypt(config, SECRET_PURPOSE, row["bind_password"]), row["tenant_id"], row["bind_password"])
        for row in rows])
    async with db.transaction() as tx:
        await store.seal_passwords(tx, sealed)
    log.info("encrypted %d LDAP service account password(s) stored in clear before migration 0042", len(rows))
    return len(rows)


async def test_connection(db: Database, config: Config, tenant_id: str, form: dict[str, str]) -> str:
    """The form's settings (not yet saved; the stored password when the field is empty) tried out."""
    values, errors = _checked({**form, "enabled": ""})
    if not values["url"]:
        errors["url"] = "Enter the directory's URL to test it."
    if errors:
        raise team.FormErrors(errors)
    directory = await _directory(db, config, tenant_id, values, form.get("bind_password", ""))
    return await asyncio.to_thread(client.test_connection, directory)


def _mapped_role(settings: LdapSettings, groups: list[str]) -> str:
    by_key = {key.casefold(): role for key, role in settings.group_role_map.items()}
    roles = []
    for dn in groups:
        first = dn.split(",", 1)[0]
        cn = first.split("=", 1)[1] if "=" in first else first
        for key in (dn.casefold(), cn.strip().casefold()):
            if key in by_key:
                roles.append(by_key[key])
    if roles:
        return max(roles, key=ROLE_ORDER.index)
    return settings.default_role


async def sign_in_tenants(db: Database, tenant_id: str | None) -> tuple[str | None, str | None]:
    """(tenant id, name) the form signs in to: the one asked for, else the only tenant using LDAP."""
    if tenant_id:
        settings = await get_settings(db, tenant_id)
        name = await store.tenant_name(db, tenant_id)
        return (tenant_id, name) if settings.enabled and name else (None, None)
    tenants = await store.tenants_with_ldap(db)
    return (tenants[0]["id"], tenants[0]["name"]) if len(tenants) == 1 else (None, None)


async def _failed(db: Database, tenant_id: str, username: str, reason: str) -> None:
    async with db.transaction() as tx:
        await audit.record(tx, tenant_id, "user.sign_in_failed", "tenant", tenant_id,
                           {"method": "ldap", "username": username[:200], "reason": reason})


async def sign_in(db: Database, config: Config, tenant_id: str, username: str, password: str) -> Row:
    """The account a successful bind signs in (created on first sign-in). Raises WrongCredentials,
    DirectoryError or SignInRefused; each failure is an audit entry (never with the password)."""
    settings = await get_settings(db, tenant_id)
    if not settings.enabled:
        raise NotFound("This team does not sign in with LDAP.")
    try:
        directory = await _directory(db, config, tenant_id, {**settings.form(), "start_tls": settings.start_tls},
                                     "")
    except DirectoryError as exc:
        await _failed(db, tenant_id, username, str(exc))
        raise
    try:
        found = await asyncio.to_thread(client.authenticate, directory, username, password)
    except WrongCredentials:
        await _failed(db, tenant_id, username, "wrong username or password")
        raise
    except DirectoryError as exc:
        await _failed(db, tenant_id, username, str(exc))
        raise
    return await _account_for(db, tenant_id, settings, username, found)


async def _account_for(db: Database, tenant_id: str, settings: LdapSettings, username: str,
                       found: client.DirectoryUser) -> Row:
    try:
        email = accounts.clean_email(found.email)
    except InvalidInput:
        await _failed(db, tenant_id, username, "the directory entry has no email address (mail)")
        raise SignInRefused("Your directory entry has no email address; ask your administrator.") from None
    role = _mapped_role(settings, found.groups)
    if not role:
        await _failed(db, tenant_id, username, "no group of the user maps to a role, and there is no default role")
        raise SignInRefused("None of your directory groups gives access to this team; ask your administrator.")
    account = await store.account_by_email(db, email)
    if account is not None and (account["tenant_id"] != tenant_id or not account["active"]):
        reason = "the address belongs to another team" if account["tenant_id"] != tenant_id else "deactivated"
        await _failed(db, tenant_id, username, reason)
        raise SignInRefused("This account cannot sign in here; ask your administrator.")
    now = now_iso()
    if account is None:
        user_id = new_id()
        name = (found.name or username)[:200]
        async with db.transaction() as tx:
            if await store.account_by_email(tx, email) is not None:
                raise SignInRefused("This account was just created; sign in again.")
            audit.acting_as(audit.Actor("user", user_id, name))
            await store.insert_account(tx, user_id, tenant_id, email, name, role, now)
            await audit.record(tx, tenant_id, "user.created", "user", user_id,
                               {"email": email, "role": role, "method": "ldap", "dn": found.dn})
            await audit.record(tx, tenant_id, "user.signed_in", "user", user_id, {"method": "ldap"})
        return {"id": user_id, "tenant_id": tenant_id, "email": email, "role": role}
    user_id = account["id"]
    audit.acting_as(audit.Actor("user", user_id, account["name"] or email))
    if account["role"] != "owner" and account["role"] != role:
        await team.change_role(db, tenant_id, user_id, user_id, role)
    async with db.transaction() as tx:
        await store.record_login(tx, user_id, now)
        await audit.record(tx, tenant_id, "user.signed_in", "user", user_id, {"method": "ldap"})
    return {"id": user_id, "tenant_id": tenant_id, "email": email, "role": role}
