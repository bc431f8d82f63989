-- Team work: results are assigned to testers and executed step by step; users are invited and
-- reset their passwords through one-time links.

-- who should execute a result (a user of the same tenant); cleared when that user row is deleted
ALTER TABLE test_results ADD COLUMN assignee_id TEXT REFERENCES users (id) ON DELETE SET NULL;
-- JSON [{index, status, comment?}] written by the step-by-step execution view or PATCH /results/{id}
ALTER TABLE test_results ADD COLUMN step_results TEXT;
-- the display name of whoever last changed the result by hand: "changed by X at …" for a second tester
ALTER TABLE test_results ADD COLUMN updated_by TEXT;
-- "My work": untested results assigned to one user, across runs
CREATE INDEX test_results_assignee ON test_results (tenant_id, assignee_id, status) WHERE assignee_id IS NOT NULL;

-- One-time links: an invitation (48 h) creates a user; a password reset (1 h) sets one user's password.
-- Only a SHA-256 digest of the secret part of the link is stored; used_at makes a link single use.
CREATE TABLE user_links (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    kind         TEXT NOT NULL CHECK (kind IN ('invitation', 'reset')),
    email        TEXT NOT NULL COLLATE NOCASE,
    role         TEXT CHECK (role IN ('admin', 'tester', 'viewer')),
    user_id      TEXT REFERENCES users (id) ON DELETE CASCADE,   -- the user a reset is for
    token_sha256 BLOB NOT NULL UNIQUE,
    created_by   TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    used_at      TEXT,
    revoked_at   TEXT
);
CREATE INDEX user_links_tenant ON user_links (tenant_id, kind, created_at);

-- what the lead wrote when closing a run (the web UI's "Complete run", PATCH /runs/{id} `summary`)
ALTER TABLE test_runs ADD COLUMN summary TEXT;
