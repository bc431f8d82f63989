-- Two-factor sign-in (issue 25): a TOTP seed per user, encrypted at rest, its single-use recovery codes,
-- and the tenant switch that requires two-factor of every member. PostgreSQL: postgres/0008_two_factor.sql
-- (the same tables, columns and indexes).

CREATE TABLE user_two_factor (
    user_id          TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    tenant_id        TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    seed_encrypted   TEXT NOT NULL,   -- Fernet token of the base32 seed (tms/team/signin/secret_box.py)
    created_at       TEXT NOT NULL,
    confirmed_at     TEXT,            -- NULL while the enrolment waits for its first code
    last_time_step   INTEGER          -- the time step of the last accepted code: it and older ones are refused
);
CREATE INDEX user_two_factor_tenant ON user_two_factor (tenant_id);

-- Ten per user, shown once at enrolment; only a SHA-256 digest of each 80-bit code is stored.
CREATE TABLE two_factor_recovery_codes (
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    code_sha256 BLOB NOT NULL,
    created_at  TEXT NOT NULL,
    used_at     TEXT,
    PRIMARY KEY (user_id, code_sha256)
);

CREATE TABLE tenant_two_factor (
    tenant_id  TEXT PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    required   INTEGER NOT NULL DEFAULT 0,  -- 1: members without two-factor are sent to enrolment
    updated_at TEXT NOT NULL
);
