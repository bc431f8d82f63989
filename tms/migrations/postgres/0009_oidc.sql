-- SQLite 0029: OpenID Connect sign-in per tenant (the same tables, columns and indexes).

CREATE TABLE oidc_providers (
    tenant_id       TEXT PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    issuer          TEXT NOT NULL,
    client_id       TEXT NOT NULL,
    client_secret   TEXT NOT NULL,
    scopes          TEXT NOT NULL,
    allowed_domains TEXT NOT NULL DEFAULT '[]',
    create_users    BIGINT NOT NULL DEFAULT 0 CHECK (create_users IN (0, 1)),
    default_role    TEXT NOT NULL DEFAULT 'viewer' CHECK (default_role IN ('admin', 'tester', 'viewer')),
    groups_claim    TEXT NOT NULL DEFAULT '',
    group_roles     TEXT NOT NULL DEFAULT '{}',
    sso_required    BIGINT NOT NULL DEFAULT 0 CHECK (sso_required IN (0, 1)),
    enabled         BIGINT NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    updated_at      TEXT NOT NULL
);

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
