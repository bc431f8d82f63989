"""OpenID Connect, spoken by authlib: discovery, the authorization URL with PKCE and a nonce, the code
exchange, and the ID token's signature and claims checked against the provider's JWKS.

Nothing here hand-writes the protocol: authlib's client builds the authorization request (S256 code
challenge, nonce), exchanges the code with the code verifier, fetches the JWKS and verifies the ID
token (signature with the provider's keys, ``iss``, ``aud``, ``exp``, ``iat``, ``nonce``, ``at_hash``);
a token signed with a key id the cached JWKS does not know makes it fetch the JWKS again once, so a
provider's key rotation needs nothing from us.

One client per tenant is kept in this process with the discovery document and the JWKS it fetched,
for an hour (``METADATA_TTL``) or until the tenant's settings change. An unreachable, slow or broken
provider raises ``ProviderUnavailable``; a token or answer that does not verify raises ``TokenRefused``.
Neither message carries a secret, a token or the provider's answer body.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx
from authlib.common.errors import AuthlibBaseError
from authlib.integrations.base_client import BaseApp
from authlib.integrations.base_client.async_app import AsyncOAuth2Mixin
from authlib.integrations.base_client.async_openid import AsyncOpenIDMixin
from authlib.integrations.httpx_client import AsyncOAuth2Client
from joserfc.errors import JoseError

from tms.team.sso.models import Identity

try:  # authlib's httpx client runs on httpx2 when it is installed (another dependency brings it), else httpx
    import httpx2

    _HTTP_ERRORS: tuple[type[Exception], ...] = (httpx.HTTPError, httpx2.HTTPError, OSError)
except ImportError:  # pragma: no cover - depends on what else is installed
    _HTTP_ERRORS = (httpx.HTTPError, OSError)

METADATA_TTL = 3600.0  # seconds a discovery document (and its JWKS) is reused
TIMEOUT = 10.0  # seconds for each request to the provider
DISCOVERY_PATH = "/.well-known/openid-configuration"


class ProviderUnavailable(Exception):
    """The provider could not be reached or answered something that is not OpenID Connect."""


class TokenRefused(Exception):
    """The provider's answer or ID token failed a check (signature, issuer, audience, nonce, expiry...)."""


class _Client(AsyncOAuth2Mixin, AsyncOpenIDMixin, BaseApp):  # type: ignore[misc] # authlib has no types
    """authlib's framework-neutral asynchronous OpenID Connect client (its Starlette app, minus Starlette)."""

    client_cls = AsyncOAuth2Client


@dataclass(frozen=True, slots=True)
class Authorization:
    url: str
    state: str
    nonce: str
    code_verifier: str


@dataclass
class _Cached:
    key: tuple[str, ...]
    client: _Client
    created: float


_clients: dict[str, _Cached] = {}


def discovery_url(issuer: str) -> str:
    return issuer.rstrip("/") + DISCOVERY_PATH


def _client(tenant_id: str, issuer: str, client_id: str, client_secret: str, scopes: str, version: str) -> _Client:
    key = (issuer, client_id, client_secret, scopes, version)
    cached = _clients.get(tenant_id)
    if cached is None or cached.key != key or time.monotonic() - cached.created > METADATA_TTL:
        client = _Client(
            None, name=tenant_id, client_id=client_id, client_secret=client_secret,
            server_metadata_url=discovery_url(issuer),
            client_kwargs={"scope": scopes, "code_challenge_method": "S256", "timeout": TIMEOUT,
                           "follow_redirects": False, "trust_env": False},
        )
        cached = _clients[tenant_id] = _Cached(key, client, time.monotonic())
    return cached.client


def forget(tenant_id: str) -> None:
    """Drops the tenant's cached discovery document and keys (its settings changed)."""
    _clients.pop(tenant_id, None)


async def _metadata(client: _Client, issuer: str) -> dict[str, Any]:
    try:
        metadata: dict[str, Any] = await client.load_server_metadata()
    except _HTTP_ERRORS as exc:
        raise ProviderUnavailable(f"could not read {discovery_url(issuer)}: {type(exc).__name__}") from exc
    except ValueError as exc:  # not JSON
        raise ProviderUnavailable(f"{discovery_url(issuer)} is not a discovery document") from exc
    # OpenID Connect Discovery 1.0, section 4.3: the document must name the issuer it was fetched for
    if str(metadata.get("issuer", "")).rstrip("/") != issuer.rstrip("/"):
        client.server_metadata.pop("_loaded_at", None)
        raise ProviderUnavailable(f"the discovery document names the issuer {metadata.get('issuer')!r}, "
                                  f"not {issuer!r}")
    for needed in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        if not metadata.get(needed):
            raise ProviderUnavailable(f"the discovery document has no {needed}")
    algorithms = [alg for alg in metadata.get("id_token_signing_alg_values_supported") or ["RS256"] if alg != "none"]
    metadata["id_token_signing_alg_values_supported"] = algorithms  # unsigned ID tokens: never
    return metadata


async def authorization(tenant_id: str, issuer: str, client_id: str, client_secret: str, scopes: str, version: str,
                        redirect_uri: str) -> Authorization:
    """The provider's authorization URL for a new sign-in, with a fresh state, nonce and code verifier."""
    client = _client(tenant_id, issuer, client_id, client_secret, scopes, version)
    await _metadata(client, issuer)
    created = await client.create_authorization_url(redirect_uri)
    return Authorization(created["url"], created["state"], created["nonce"], created["code_verifier"])


async def verified_identity(tenant_id: str, issuer: str, client_id: str, client_secret: str, scopes: str,
                            version: str, *, redirect_uri: str, code: str, code_verifier: str, nonce: str,
                            groups_claim: str) -> Identity:
    """Exchanges the code, verifies the ID token and returns who signed in."""
    client = _client(tenant_id, issuer, client_id, client_secret, scopes, version)
    await _metadata(client, issuer)
    try:
        token = await client.fetch_access_token(redirect_uri=redirect_uri, code=code, code_verifier=code_verifier)
    except _HTTP_ERRORS as exc:
        raise ProviderUnavailable(f"the token endpoint failed: {type(exc).__name__}") from exc
    except AuthlibBaseError as exc:  # an OAuth error answer: invalid_grant (code used or expired), ...
        raise TokenRefused(f"the provider refused the code: {getattr(exc, 'error', 'error')}") from exc
    except ValueError as exc:
        raise ProviderUnavailable("the token endpoint answered something that is not JSON") from exc
    if "id_token" not in token:
        raise TokenRefused("the provider sent no ID token (is the openid scope set?)")
    try:
        claims = await client.parse_id_token(token, nonce=nonce)
    except _HTTP_ERRORS as exc:
        raise ProviderUnavailable(f"could not read the provider's keys (JWKS): {type(exc).__name__}") from exc
    except (JoseError, AuthlibBaseError, ValueError) as exc:
        # a bad signature, an unknown key even after refetching the JWKS, a wrong iss/aud/nonce, expired
        raise TokenRefused(f"the ID token does not verify: {_reason(exc)}") from exc
    data: dict[str, Any] = dict(claims)
    if "email" not in data and client.server_metadata.get("userinfo_endpoint"):
        data = await _with_userinfo(client, token, data)
    return _identity(data, groups_claim)


async def _with_userinfo(client: _Client, token: dict[str, Any], claims: dict[str, Any]) -> dict[str, Any]:
    """Some providers put email and groups in the UserInfo answer only (OIDC Core 5.3.2: its sub must match)."""
    try:
        info = dict(await client.userinfo(token=token))
    except (*_HTTP_ERRORS, AuthlibBaseError, ValueError) as exc:
        raise ProviderUnavailable(f"the userinfo endpoint failed: {type(exc).__name__}") from exc
    if info.get("sub") != claims.get("sub"):
        raise TokenRefused("the userinfo answer is about another subject than the ID token")
    return {**info, **claims}


def _reason(exc: Exception) -> str:
    return str(getattr(exc, "description", "") or getattr(exc, "error", "") or type(exc).__name__)[:200]


def _verified(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


def _identity(claims: dict[str, Any], groups_claim: str) -> Identity:
    email = claims.get("email")
    # Microsoft Entra ID sends no email_verified; its optional claim xms_edov says the same thing
    verified = _verified(claims.get("email_verified")) or _verified(claims.get("xms_edov"))
    groups: list[str] = []
    raw = claims.get(groups_claim) if groups_claim else None
    if isinstance(raw, str):
        groups = [raw]
    elif isinstance(raw, list):
        groups = [str(item) for item in raw if isinstance(item, str | int)]
    return Identity(subject=str(claims.get("sub", "")), email=email.strip() if isinstance(email, str) else "",
                    email_verified=verified, name=str(claims.get("name") or "")[:200], groups=groups)
