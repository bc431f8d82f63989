-- Tenants, their users and API tokens, web sessions, projects, and the event outbox.
-- Every tenant-owned table carries tenant_id, and every query filters on it.

CREATE TABLE instance_settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE tenants (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    status     TEXT NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'SUSPENDED')),
    -- next number of the server-assigned TC-<n> codes; only ever grows, so a number is never reused
    case_seq   INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);

CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    email         TEXT NOT NULL COLLATE NOCASE UNIQUE,
    password_hash TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    last_login_at TEXT
);
CREATE INDEX users_tenant ON users (tenant_id);

CREATE TABLE api_tokens (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    created_by    TEXT REFERENCES users (id) ON DELETE SET NULL,
    name          TEXT NOT NULL,
    prefix        TEXT NOT NULL UNIQUE,
    secret_sha256 BLOB NOT NULL,
    scopes        TEXT NOT NULL,          -- comma separated: read,write
    created_at    TEXT NOT NULL,
    last_used_at  TEXT,
    revoked_at    TEXT
);
CREATE INDEX api_tokens_tenant ON api_tokens (tenant_id, created_at);

-- Litestar server-side sessions (tms.store.sessions.SQLiteSessionStore).
CREATE TABLE web_sessions (
    key        TEXT PRIMARY KEY,
    value      BLOB NOT NULL,
    expires_at REAL
);
CREATE INDEX web_sessions_expiry ON web_sessions (expires_at);

CREATE TABLE projects (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    description  TEXT,
    active       INTEGER NOT NULL DEFAULT 0 CHECK (active IN (0, 1)),
    environments TEXT NOT NULL DEFAULT '[]',   -- JSON array of strings
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);
CREATE INDEX projects_tenant ON projects (tenant_id, created_at);
-- at most one active project per tenant, enforced by the database itself
CREATE UNIQUE INDEX projects_one_active ON projects (tenant_id) WHERE active = 1;

-- Transactional outbox: written in the same transaction as the change that causes the event.
-- `body` is the exact JSON envelope that is delivered and signed.
CREATE TABLE events (
    id         TEXT PRIMARY KEY,
    tenant_id  TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    event      TEXT NOT NULL,
    body       BLOB NOT NULL,
    created_at TEXT NOT NULL,
    fanned_out INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX events_pending ON events (fanned_out, created_at) WHERE fanned_out = 0;
CREATE INDEX events_tenant ON events (tenant_id, created_at);
