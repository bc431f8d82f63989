-- The bug loop: issue-tracker integrations (inbound webhooks), the deliveries they received, and the
-- retest flag on test cases that a resolved bug (or a person) sets and a new result clears.

CREATE TABLE integrations (
    id               TEXT PRIMARY KEY,     -- appears in the inbound URL /api/integrations/{id}
    tenant_id        TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    kind             TEXT NOT NULL CHECK (kind IN ('JIRA', 'GITHUB', 'GITLAB')),
    name             TEXT NOT NULL,
    -- owner/repo (GitHub) or group/project (GitLab): lets a short '#12' key match this tracker's issues
    repository       TEXT,
    -- needed in clear to verify HMAC signatures; shown once at creation, never again
    secret           TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    last_delivery_at TEXT
);
CREATE INDEX integrations_tenant ON integrations (tenant_id, created_at);

-- One row per verified tracker delivery. A redelivery repeats the tracker's delivery id (GitHub,
-- GitLab) and the exact body (all of them, Jira included, which sends no stable id everywhere):
-- either unique key makes it a no-op. The outcome lets Settings show that the tracker is connected.
CREATE TABLE integration_deliveries (
    integration_id TEXT NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
    delivery_key   TEXT NOT NULL,          -- X-GitHub-Delivery, X-Gitlab-Event-UUID, else the body's sha256
    payload_sha256 TEXT NOT NULL,
    tenant_id      TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    event          TEXT NOT NULL,          -- the tracker's event name as received
    outcome        TEXT NOT NULL,          -- resolved | ignored | ping
    bug_key        TEXT,
    cases_linked   INTEGER NOT NULL DEFAULT 0,
    detail         TEXT,
    received_at    TEXT NOT NULL,
    PRIMARY KEY (integration_id, delivery_key)
);
CREATE UNIQUE INDEX integration_deliveries_payload ON integration_deliveries (integration_id, payload_sha256);
CREATE INDEX integration_deliveries_recent ON integration_deliveries (integration_id, received_at);

ALTER TABLE test_cases ADD COLUMN needs_retest INTEGER NOT NULL DEFAULT 0 CHECK (needs_retest IN (0, 1));
ALTER TABLE test_cases ADD COLUMN retest_reason TEXT;
ALTER TABLE test_cases ADD COLUMN retest_bug_key TEXT;
ALTER TABLE test_cases ADD COLUMN retest_flagged_at TEXT;
-- the retest queue is small next to the library: a partial index keeps it one short range scan
CREATE INDEX test_cases_retest_queue ON test_cases (tenant_id, project_id) WHERE needs_retest = 1;
