"""Single sign-on with OpenID Connect, per tenant: the sign-in's rules.

- **Settings** (``settings.py``, Settings -> Sign-in, admins): the provider, its client, the allowed
  domains, provisioning and roles, and "SSO required" (password sign-in off for everyone but the
  owner, who keeps it as the way back in).
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
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

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
    Button,
    Identity,
    PendingLogin,
    ProviderSettings,
    SignInChoices,
)
from tms.team.sso.settings import SECRET_PURPOSE

log = logging.getLogger(__name__)

LOGIN_TTL = timedelta(minutes=10)
CALLBACK_PATH = "/auth/oidc/callback"
NO_PASSWORD = "!sso"  # noqa: S105 - not a hash: no password ever matches it (argon2 refuses to read it)


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
