"""Single sign-on's settings, per tenant (Settings -> Sign-in, admins): issuer, client id and secret
(write-only: stored encrypted, never shown again; left empty on a later save it is kept), scopes,
allowed email domains, whether first sign-ins create users and with which role, the groups claim and
its group -> role mapping, and "SSO required". Checked all at once (``SettingsErrors`` names every
wrong field); every change is an audit entry. The sign-in flow that uses them is ``service.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from tms.config import Config
from tms.db import Database
from tms.errors import InvalidInput
from tms.ids import now_iso
from tms.team.audit import service as audit
from tms.team.signin import secret_box
from tms.team.sso import protocol
from tms.team.sso import store as sso_store
from tms.team.sso.models import DEFAULT_SCOPES, PROVIDER_ROLES, REQUIRED_SCOPES, ProviderSettings

SECRET_PURPOSE = "oidc-client-secret"  # noqa: S105 - the name of a key derivation purpose
_DOMAIN = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")
_SCOPE = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]+$")  # RFC 6749 3.3 scope-token


@dataclass(frozen=True, slots=True)
class SettingsForm:
    """The settings page's fields as typed (``client_secret`` empty = keep the stored one)."""

    name: str = ""
    issuer: str = ""
    client_id: str = ""
    client_secret: str = ""
    scopes: str = DEFAULT_SCOPES
    allowed_domains: str = ""
    create_users: bool = False
    default_role: str = "viewer"
    groups_claim: str = ""
    group_roles: str = ""
    sso_required: bool = False
    enabled: bool = True


def form_of(settings: ProviderSettings | None) -> SettingsForm:
    """The page's form for stored settings (the secret stays empty: it is never shown again)."""
    if settings is None:
        return SettingsForm()
    return SettingsForm(
        name=settings.name, issuer=settings.issuer, client_id=settings.client_id, scopes=settings.scopes,
        allowed_domains=" ".join(settings.allowed_domains), create_users=settings.create_users,
        default_role=settings.default_role, groups_claim=settings.groups_claim,
        group_roles="\n".join(f"{group} = {role}" for group, role in settings.group_roles.items()),
        sso_required=settings.sso_required, enabled=settings.enabled)


class SettingsErrors(InvalidInput):
    def __init__(self, errors: dict[str, str]) -> None:
        first = next(iter(errors))
        super().__init__(errors[first], field=first, errors=[{"field": k, "message": v} for k, v in errors.items()])
        self.fields = errors


def _check_issuer(issuer: str, production: bool) -> str | None:
    parts = urlsplit(issuer)
    if parts.scheme not in ("https", "http") or not parts.hostname or parts.query or parts.fragment:
        return "Enter the issuer URL, e.g. https://accounts.google.com (without /.well-known/...)."
    if production and parts.scheme != "https":
        return "The issuer must use https:// (this service runs with an https base_url)."
    if issuer.rstrip("/").endswith("/.well-known/openid-configuration"):
        return "Enter the issuer itself; TMS adds /.well-known/openid-configuration."
    return None


def _parse_group_roles(text: str) -> tuple[dict[str, str], str | None]:
    mapping: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        group, sep, role = line.rpartition("=")
        group, role = group.strip(), role.strip().lower()
        if not sep or not group:
            return {}, f"Line {number}: write “group = role”."
        if role not in PROVIDER_ROLES:
            return {}, f"Line {number}: the role must be one of {', '.join(PROVIDER_ROLES)}."
        mapping[group] = role
    if len(mapping) > 200:
        return {}, "At most 200 groups."
    return mapping, None


def _validate(form: SettingsForm, tenant_id: str, *, secret: str,
              production: bool) -> tuple[ProviderSettings, dict[str, str]]:
    errors: dict[str, str] = {}
    name, issuer, client_id = form.name.strip(), form.issuer.strip(), form.client_id.strip()
    if not name or len(name) > 60:
        errors["name"] = "Enter the provider's name as people know it (at most 60 characters), e.g. Okta."
    issuer_problem = _check_issuer(issuer, production) if issuer and len(issuer) <= 500 else (
        "Enter the issuer URL, e.g. https://accounts.google.com.")
    if issuer_problem:
        errors["issuer"] = issuer_problem
    if not client_id or len(client_id) > 500:
        errors["client_id"] = "Enter the client id the provider gave TMS."
    if not form.client_secret and not secret:
        errors["client_secret"] = "Enter the client secret."  # noqa: S105 - a message
    elif len(form.client_secret) > 2000:
        errors["client_secret"] = "At most 2,000 characters."  # noqa: S105 - a message
    scopes = form.scopes.split()
    if any(not _SCOPE.match(scope) for scope in scopes) or len(form.scopes) > 500:
        errors["scopes"] = "Scopes are words separated by spaces."
    elif missing := [scope for scope in REQUIRED_SCOPES if scope not in scopes]:
        errors["scopes"] = f"The scopes must include {' and '.join(missing)}."
    domains = [domain.lower().lstrip("@") for domain in re.split(r"[\s,]+", form.allowed_domains) if domain]
    if bad := [domain for domain in domains if not _DOMAIN.match(domain)]:
        errors["allowed_domains"] = f"Not a domain: {bad[0]}"
    elif len(domains) > 100:
        errors["allowed_domains"] = "At most 100 domains."
    if form.default_role not in PROVIDER_ROLES:
        errors["default_role"] = f"Choose one of {', '.join(PROVIDER_ROLES)}."
    groups_claim = form.groups_claim.strip()
    if len(groups_claim) > 100 or " " in groups_claim:
        errors["groups_claim"] = "A claim name, e.g. groups."
    group_roles, mapping_problem = _parse_group_roles(form.group_roles)
    if mapping_problem:
        errors["group_roles"] = mapping_problem
    elif group_roles and not groups_claim:
        errors["groups_claim"] = "Name the claim that carries the groups (e.g. groups) to map them to roles."
    settings = ProviderSettings(
        tenant_id=tenant_id, name=name, issuer=issuer, client_id=client_id, client_secret=secret,
        scopes=" ".join(dict.fromkeys(scopes)), allowed_domains=sorted(set(domains)), create_users=form.create_users,
        default_role=form.default_role, groups_claim=groups_claim, group_roles=group_roles,
        sso_required=form.sso_required, enabled=form.enabled, updated_at=now_iso())
    return settings, errors


async def get_settings(db: Database, tenant_id: str) -> ProviderSettings | None:
    return await sso_store.get_provider(db, tenant_id)


async def save_settings(db: Database, config: Config, tenant_id: str, form: SettingsForm) -> ProviderSettings:
    """Stores the tenant's provider (the secret encrypted; an empty secret keeps the stored one).
    Raises ``SettingsErrors`` naming every wrong field at once."""
    old = await sso_store.get_provider(db, tenant_id)
    settings, errors = _validate(form, tenant_id, secret=old.client_secret if old is not None else "",
                                 production=config.production)
    if errors:
        raise SettingsErrors(errors)
    if form.client_secret:
        settings = replace(settings, client_secret=secret_box.encrypt(config, SECRET_PURPOSE, form.client_secret))
    async with db.transaction() as tx:
        await sso_store.save_provider(tx, settings)
        await audit.record(tx, tenant_id, "sso.settings_changed", "sso", tenant_id,
                           _settings_changes(old, settings, secret_changed=bool(form.client_secret)))
    protocol.forget(tenant_id)
    return settings


def _settings_changes(old: ProviderSettings | None, new: ProviderSettings, *,
                      secret_changed: bool) -> dict[str, object]:
    fields = ("name", "issuer", "client_id", "scopes", "allowed_domains", "create_users", "default_role",
              "groups_claim", "group_roles", "sso_required", "enabled")
    changes: dict[str, object] = {}
    for name in fields:
        before = getattr(old, name) if old is not None else None
        after = getattr(new, name)
        if before != after:
            changes[name] = [before, after]
    if secret_changed:
        changes["client_secret"] = ["(old)" if old is not None else None, "(changed)"]
    return changes


async def remove_settings(db: Database, tenant_id: str) -> bool:
    async with db.transaction() as tx:
        removed = await sso_store.delete_provider(tx, tenant_id)
        if removed:
            await audit.record(tx, tenant_id, "sso.settings_removed", "sso", tenant_id)
    protocol.forget(tenant_id)
    return bool(removed)
