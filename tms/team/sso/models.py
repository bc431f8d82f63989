"""What the single sign-on settings hold, and who a verified ID token says signed in."""

from __future__ import annotations

from dataclasses import dataclass, field

# Roles a provider may give; the owner is never made, changed or taken away by a provider.
PROVIDER_ROLES = ("admin", "tester", "viewer")
REQUIRED_SCOPES = ("openid", "email")
DEFAULT_SCOPES = "openid email profile"


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    """A tenant's identity provider as stored (``client_secret`` is the Fernet token, never shown)."""

    tenant_id: str
    name: str
    issuer: str
    client_id: str
    client_secret: str
    scopes: str
    allowed_domains: list[str] = field(default_factory=list)  # lower case; [] = any
    create_users: bool = False
    default_role: str = "viewer"
    groups_claim: str = ""
    group_roles: dict[str, str] = field(default_factory=dict)  # group -> role
    sso_required: bool = False
    enabled: bool = True
    updated_at: str = ""

    def allows_domain(self, email: str) -> bool:
        domain = email.rpartition("@")[2].lower()
        return not self.allowed_domains or domain in self.allowed_domains


@dataclass(frozen=True, slots=True)
class PendingLogin:
    """A sign-in under way between /auth/oidc/start and the callback (stored by its state's digest)."""

    tenant_id: str
    browser_sha256: str
    nonce: str
    code_verifier: str
    next_path: str
    expires_at: str


@dataclass(frozen=True, slots=True)
class Identity:
    """The verified claims of an ID token that sign-in uses."""

    subject: str
    email: str
    email_verified: bool
    name: str
    groups: list[str]


@dataclass(frozen=True, slots=True)
class Button:
    """A "Sign in with <name>" link on the sign-in page."""

    name: str
    url: str


@dataclass(frozen=True, slots=True)
class SignInChoices:
    """What the sign-in page offers beside the password form."""

    buttons: list[Button] = field(default_factory=list)
    by_email: bool = False  # another tenant has single sign-on: offer "continue with your work email"
    message: str = ""  # why a work email found no team
    email: str = ""  # the work email typed, kept in its field
    password_hidden: bool = False  # the team named (or found by email) requires SSO: the password is the owner's
