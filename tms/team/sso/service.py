"""Single sign-on with OpenID Connect, per tenant: the rules.

- **Settings** (Settings -> Sign-in, admins): issuer, client id and secret (write-only: stored encrypted,
  never shown again; left empty on a later save it is kept), scopes, allowed email domains, whether
  first sign-ins create users and with which role, the groups claim and its group -> role mapping, and
  "SSO required" (password sign-in off for everyone but the owner, who keeps it as the way back in).
- **Start** (``begin``): the tenant comes from the URL (``tenant=``) or from the email's domain. The
  state (only its SHA-256 is stored), the nonce and the PKCE code verifier are kept server-side for ten
  minutes, bound to the browser that started (a random cookie, stored as a digest).
- **Callback** (``finish``): the state is used once; the browser must be the one that started; the ID
  token is verified (``protocol``); only a verified email of an allowed domain signs in. The user is
  found by that email in the tenant, created on first sign-in when the tenant allows it, and takes the
  role the groups mapping gives (the owner's role never changes). Every sign-in, refusal and
  provisioning change is an audit entry.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from urllib.parse import quote, urlsplit

from tms.config import Config
from tms.db import Database
from tms.errors import DomainError, InvalidInput, NotFound
from tms.ids import iso, new_id, now_iso
from tms.team import service as team_service
from tms.team import store as user_store
from tms.team.audit import service as audit
from tms.team.signin import secret_box
from tms.team.sso import protocol
from tms.team.sso import store as sso_store
from tms.team.sso.models import (
    DEFAULT_SCOPES,
    PROVIDER_ROLES,
    REQUIRED_SCOPES,
    Button,
    Identity,
    PendingLogin,
    ProviderSettings,
    SignInChoices,
)

log = logging.getLogger(__name__)

LOGIN_TTL = timedelta(minutes=10)
SECRET_PURPOSE = "oidc-client-secret"  # noqa: S105 - the name of a key derivation purpose
CALLBACK_PATH = "/auth/oidc/callback"
NO_PASSWORD = "!sso"  # noqa: S105 - not a hash: no password ever matches it (argon2 refuses to read it)
_DOMAIN = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")
_SCOPE = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]+$")  # RFC 6749 3.3 scope-token


class SignInRefused(DomainError):
    """A sign-in that must not happen; the message is shown on the sign-in error page."""

    status_code = 403
    title = "Sign-in refused"


class ProviderDown(DomainError):
    """The identity provider could not be reached or did not answer as one."""

    status_code = 502
    title = "Identity provider unavailable"


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def redirect_uri(config: Config) -> str:
    return config.base_url.rstrip("/") + CALLBACK_PATH


# ---- settings ----------------------------------------------------------------------------------------------


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


# ---- the password sign-in's check ----------------------------------------------------------------------------


async def password_sign_in_refused(db: Database, user_id: str) -> str | None:
    """Why this user may not sign in with a password, or None when they may.

    The password sign-in calls it after the password matched: with "SSO required" on for the user's
    tenant only the owner (the way back in when the provider fails) signs in with a password. A refusal
    is an audit entry (``user.sign_in_failed``, reason ``SSO required``)."""
    user = await user_store.get_user(db, user_id)
    if user is None or user["role"] == "owner" or not await sso_store.sso_required(db, user["tenant_id"]):
        return None
    provider = await sso_store.get_provider(db, user["tenant_id"])
    name = provider.name if provider is not None else "single sign-on"
    audit.acting_as(audit.Actor("user", user["id"], user["name"] or user["email"]))
    async with db.transaction() as tx:
        await audit.record(tx, user["tenant_id"], "user.sign_in_failed", "user", user["id"],
                           {"method": "password", "reason": "SSO required"})
    return f"{user['tenant_name']} signs in with {name}: use “Sign in with {name}” instead of a password."


# ---- the sign-in page ----------------------------------------------------------------------------------------


async def sign_in_choices(db: Database, tenant_id: str | None, next_path: str = "/", *,
                          email: str | None = None) -> SignInChoices:
    """The "Sign in with <provider>" buttons the sign-in page shows: the tenant's named in the URL
    (``tenant=``) or found by the domain of ``email``, else the only one of the install; and whether to
    offer "continue with your work email" (its domain picks the tenant). When that team requires single
    sign-on, the page folds the password form away behind "Team owner?": only the owner's password works."""
    message = ""
    if not tenant_id and email:
        domain = email.strip().rpartition("@")[2].lower()
        tenants = await sso_store.tenants_for_domain(db, domain) if domain else []
        if len(tenants) == 1:
            tenant_id = tenants[0]
        elif tenants:
            message = f"Several teams sign in with {domain}: use the sign-in link your team gave you."
        else:
            message = f"No team signs in with single sign-on for {domain or 'that address'}."
    rows, count = await sso_store.enabled_providers(db, tenant_id)
    suffix = "" if next_path in ("", "/") else "&next=" + _quote(next_path)
    buttons = [Button(row["name"], f"/auth/oidc/start?tenant={_quote(row['tenant_id'])}{suffix}") for row in rows]
    # only for a team asked for by name or email: the only team of the install with SSO hides no one's password
    hidden = bool(tenant_id) and len(rows) == 1 and bool(rows[0]["sso_required"])
    return SignInChoices(buttons=buttons, by_email=count > len(buttons), message=message, email=email or "",
                         password_hidden=hidden)


def _quote(value: str) -> str:
    return quote(value, safe="/")


# ---- the flow ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Begun:
    url: str  # the provider's authorization URL
    browser_key: str  # the cookie that binds the sign-in to this browser


@dataclass(frozen=True, slots=True)
class SignedIn:
    user_id: str
    tenant_id: str
    next_path: str


def _actor(settings: ProviderSettings) -> audit.Actor:
    return audit.Actor("system", None, f"OpenID Connect ({settings.name})")


async def _refuse(db: Database, settings: ProviderSettings, reason: str, detail: Mapping[str, object],
                  error: type[DomainError] = SignInRefused, message: str | None = None) -> DomainError:
    """An audit entry for a refused sign-in; returns the error to raise (its message is the page's)."""
    audit.acting_as(_actor(settings))
    async with db.transaction() as tx:
        await audit.record(tx, settings.tenant_id, "sso.sign_in_refused", "sso", settings.tenant_id,
                           {"reason": reason, **detail})
    log.info("OpenID Connect sign-in refused for tenant %s: %s", settings.tenant_id, reason)
    return error(message or reason)


async def _tenant_for(db: Database, tenant_id: str | None, email: str | None) -> ProviderSettings:
    if tenant_id:
        settings = await sso_store.get_provider(db, tenant_id)
        if settings is None or not settings.enabled:
            raise NotFound("This team does not sign in with single sign-on, or does not exist.")
        return settings
    domain = (email or "").strip().rpartition("@")[2].lower()
    if not domain:
        raise InvalidInput("Enter your work email address: its domain tells which team to sign in to.", field="email")
    tenants = await sso_store.tenants_for_domain(db, domain)
    if not tenants:
        raise NotFound(f"No team signs in with single sign-on for {domain}. Sign in with your password, or use "
                       "the sign-in link your team gave you.")
    if len(tenants) > 1:
        raise InvalidInput(f"Several teams sign in with {domain}: use the sign-in link your team gave you.",
                           field="email")
    settings = await sso_store.get_provider(db, tenants[0])
    assert settings is not None
    return settings


def _client_secret(config: Config, settings: ProviderSettings) -> str:
    try:
        return secret_box.decrypt(config, SECRET_PURPOSE, settings.client_secret)
    except secret_box.SecretUnreadable as exc:
        raise ProviderDown("The client secret of this team's identity provider cannot be read with this server's "
                           "key ([auth] secret_key changed?): an admin must enter it again in Settings → Sign-in."
                           ) from exc


async def begin(db: Database, config: Config, *, tenant_id: str | None, email: str | None,
                next_path: str) -> Begun:
    settings = await _tenant_for(db, tenant_id, email)
    try:
        started = await protocol.authorization(
            settings.tenant_id, settings.issuer, settings.client_id, _client_secret(config, settings),
            settings.scopes, settings.updated_at, redirect_uri(config))
    except protocol.ProviderUnavailable as exc:
        raise await _refuse(db, settings, "provider unavailable", {"problem": str(exc)}, ProviderDown,
                            f"{settings.name} cannot be reached right now ({exc}). Try again in a moment, or "
                            "ask your admin.") from exc
    browser_key = secrets.token_urlsafe(32)
    now = datetime.now(UTC)
    login = PendingLogin(settings.tenant_id, _digest(browser_key), started.nonce, started.code_verifier, next_path,
                         iso(now + LOGIN_TTL))
    async with db.transaction() as tx:
        await sso_store.forget_expired_logins(tx, iso(now))
        await sso_store.insert_login(tx, _digest(started.state), login, iso(now))
    return Begun(started.url, browser_key)


async def finish(db: Database, config: Config, *, state: str, code: str, error: str, browser_key: str) -> SignedIn:
    """The callback: checks state, browser, code and ID token, then finds or creates the user."""
    if not state:
        raise SignInRefused("This sign-in link is incomplete (no state). Start again from the sign-in page.")
    async with db.transaction() as tx:
        login = await sso_store.take_login(tx, _digest(state))
    if login is None:
        log.info("OpenID Connect callback with an unknown or used state")
        raise SignInRefused("This sign-in is unknown, was already used or has expired. Start again from the "
                            "sign-in page.")
    settings = await sso_store.get_provider(db, login.tenant_id)
    if settings is None or not settings.enabled:
        raise SignInRefused("This team no longer signs in with single sign-on.")
    if login.expires_at <= now_iso():
        raise await _refuse(db, settings, "sign-in expired", {},
                            message="This sign-in took too long and has expired. Start again from the sign-in page.")
    if not browser_key or not secrets.compare_digest(_digest(browser_key), login.browser_sha256):
        raise await _refuse(db, settings, "started in another browser", {},
                            message="This sign-in was started in another browser. Start again from the sign-in page.")
    if error or not code:
        reason = f"the provider answered {error[:100] or 'no code'}"
        raise await _refuse(db, settings, reason, {}, message=f"{settings.name} did not sign you in ({reason}).")
    try:
        identity = await protocol.verified_identity(
            settings.tenant_id, settings.issuer, settings.client_id, _client_secret(config, settings),
            settings.scopes, settings.updated_at, redirect_uri=redirect_uri(config), code=code,
            code_verifier=login.code_verifier, nonce=login.nonce, groups_claim=settings.groups_claim)
    except protocol.ProviderUnavailable as exc:
        raise await _refuse(db, settings, "provider unavailable", {"problem": str(exc)}, ProviderDown,
                            f"{settings.name} cannot be reached right now ({exc}). Try again in a moment.") from exc
    except protocol.TokenRefused as exc:
        raise await _refuse(db, settings, str(exc), {}, message=f"The answer of {settings.name} was refused: {exc}."
                            ) from exc
    user_id = await _provision(db, settings, identity)
    return SignedIn(user_id, settings.tenant_id, login.next_path)


async def _claimed_by_another_team(db: Database, tenant_id: str, email: str) -> bool:
    domain = email.rpartition("@")[2].lower()
    return any(other != tenant_id for other in await sso_store.tenants_for_domain(db, domain))


def _mapped_role(settings: ProviderSettings, identity: Identity) -> str | None:
    """The highest role the user's groups map to; the default role when a mapping is set and none
    matches; None when the tenant maps no groups (roles are then managed in TMS)."""
    if not settings.groups_claim or not settings.group_roles:
        return None
    roles = {settings.group_roles[group] for group in identity.groups if group in settings.group_roles}
    for role in ("admin", "tester", "viewer"):
        if role in roles:
            return role
    return settings.default_role


async def _provision(db: Database, settings: ProviderSettings, identity: Identity) -> str:
    email = identity.email
    who = {"email": email, "subject": identity.subject}
    if not email:
        raise await _refuse(db, settings, "no email in the ID token", who,
                            message=f"{settings.name} sent no email address: add the email scope.")
    if not identity.email_verified:
        raise await _refuse(db, settings, "email not verified", who,
                            message=f"{settings.name} has not verified {email}; TMS signs in verified addresses "
                                    "only.")
    if not settings.allows_domain(email):
        raise await _refuse(db, settings, "email domain not allowed", who,
                            message=f"{email} is not an address of this team's allowed domains.")
    role = _mapped_role(settings, identity)
    found = await user_store.find_user_by_email(db, email)
    if found is not None and found["tenant_id"] != settings.tenant_id:
        raise await _refuse(db, settings, "email belongs to another team", who,
                            message=f"{email} belongs to another team on this server.")
    audit.acting_as(_actor(settings))
    if found is None:
        if not settings.create_users:
            raise await _refuse(db, settings, "no such member", who,
                                message=f"{email} is not a member of this team; ask an admin to invite you.")
        if not settings.allowed_domains and await _claimed_by_another_team(db, settings.tenant_id, email):
            # "any verified address" is any address no other team claims: no squatting another team's people
            raise await _refuse(db, settings, "email domain of another team", who,
                                message=f"Addresses of {email.rpartition('@')[2]} belong to another team on this "
                                        "server; ask an admin of this team to invite you.")
        user_id = new_id()
        role = role or settings.default_role
        async with db.transaction() as tx:  # one writer at a time: the check and the insert cannot race
            taken = await user_store.email_taken(tx, email)
            if not taken:
                await user_store.insert_member(tx, user_id, settings.tenant_id, email, identity.name, NO_PASSWORD,
                                               role, now_iso())
                await audit.record(tx, settings.tenant_id, "sso.user_created", "user", user_id,
                                   {"email": email, "role": role, "groups": identity.groups})
        if taken:
            raise await _refuse(db, settings, "email taken meanwhile", who,
                                message="This account was just created by another sign-in. Try again.")
        member = await user_store.get_user(db, user_id)
        assert member is not None
    else:
        member = await user_store.get_user(db, found["id"])
        assert member is not None
        if not member["active"]:
            raise await _refuse(db, settings, "member deactivated", who,
                                message=f"{email} is deactivated in this team; ask an admin.")
        if member["tenant_status"] != "ACTIVE":
            raise await _refuse(db, settings, "team suspended", who, message="This team is suspended.")
        if role is not None and member["role"] not in ("owner", role):
            await team_service.change_role(db, settings.tenant_id, member["id"], member["id"], role)
    audit.acting_as(audit.Actor("user", member["id"], member["name"] or member["email"]))
    async with db.transaction() as tx:
        await user_store.record_login(tx, member["id"], now_iso(), None)
        await audit.record(tx, settings.tenant_id, "sso.signed_in", "user", member["id"],
                           {"email": email, "provider": settings.name, "groups": identity.groups})
    return str(member["id"])
