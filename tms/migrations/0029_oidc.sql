-- OpenID Connect sign-in per tenant (issue 25). PostgreSQL: postgres/0009_oidc.sql (the same tables,
-- columns and indexes).

-- A tenant's identity provider, set by an admin in Settings -> Sign-in. The client secret is stored
-- encrypted (Fernet, tms.team.sso.crypto) and never shown again.
CREATE TABLE oidc_providers (
    tenant_id       TEXT PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    name            TEXT NOT NULL,                    -- "Sign in with <name>"
    issuer          TEXT NOT NULL,                    -- discovery: <issuer>/.well-known/openid-configuration
    client_id       TEXT NOT NULL,
    client_secret   TEXT NOT NULL,                    -- a Fernet token
    scopes          TEXT NOT NULL,                    -- space-separated, with openid and email
    allowed_domains TEXT NOT NULL DEFAULT '[]',       -- JSON array of lower-case domains; [] = any
    create_users    INTEGER NOT NULL DEFAULT 0 CHECK (create_users IN (0, 1)),
    default_role    TEXT NOT NULL DEFAULT 'viewer' CHECK (default_role IN ('admin', 'tester', 'viewer')),
    groups_claim    TEXT NOT NULL DEFAULT '',         -- '' = roles are not taken from the provider
    group_roles     TEXT NOT NULL DEFAULT '{}',       -- JSON object {group: role}
    sso_required    INTEGER NOT NULL DEFAULT 0 CHECK (sso_required IN (0, 1)),
    enabled         INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    updated_at      TEXT NOT NULL
);

-- Sign-ins under way: the state names one (only its SHA-256 is stored), bound to the browser that
-- started it (a cookie's digest), used once, within ten minutes.
CREATE TABLE oidc_logins (
    state_sha256   TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    browser_sha256 TEXT NOT NULL,
    nonce          TEXT NOT NULL,
    code_verifier  TEXT NOT NULL,
    next_path      TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    expires_at     TEXT NOT NULL
);
CREATE INDEX oidc_logins_expires ON oidc_logins (expires_at);
