-- Failure intelligence: fingerprints on failed results, the first time a project saw each one, daily
-- counts for the dashboard, known issues, quarantine, and the evidence of passing on retry.

-- Set at write time on every FAILED or BROKEN result (tms.services.fingerprints), NULL otherwise.
ALTER TABLE test_results ADD COLUMN fingerprint TEXT;
ALTER TABLE unlinked_test_results ADD COLUMN fingerprint TEXT;
-- 1 when the reporter saw earlier attempts fail and the last one pass (pass-on-retry evidence)
ALTER TABLE test_results ADD COLUMN passed_on_retry INTEGER NOT NULL DEFAULT 0;
ALTER TABLE unlinked_test_results ADD COLUMN passed_on_retry INTEGER NOT NULL DEFAULT 0;

-- A run's failures (about one row in twelve) without reading its passes: partial indexes cost an
-- ingest nothing for the rows they leave out.
CREATE INDEX test_results_failures ON test_results (run_id, fingerprint) WHERE fingerprint IS NOT NULL;
CREATE INDEX unlinked_results_failures ON unlinked_test_results (run_id, fingerprint) WHERE fingerprint IS NOT NULL;
CREATE INDEX test_results_retried ON test_results (run_id) WHERE passed_on_retry = 1;
CREATE INDEX unlinked_results_retried ON unlinked_test_results (run_id) WHERE passed_on_retry = 1;

-- One row per (project, fingerprint): where and when it was first seen, so "new" is one key lookup
-- instead of a scan of the project's history. Maintained by every write of failed results.
CREATE TABLE failure_fingerprints (
    tenant_id     TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    project_id    TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    fingerprint   TEXT NOT NULL,
    first_run_id  TEXT NOT NULL,
    first_seen_at TEXT NOT NULL,
    last_run_id   TEXT NOT NULL,
    last_seen_at  TEXT NOT NULL,
    occurrences   INTEGER NOT NULL DEFAULT 0,
    error_message TEXT,                     -- a representative message (the first one seen)
    PRIMARY KEY (tenant_id, project_id, fingerprint)
) WITHOUT ROWID;

-- Failures per project, fingerprint and UTC day: the dashboard's "top clusters of the last 30 days"
-- sums at most 30 rows per fingerprint instead of reading 30 days of results.
CREATE TABLE failure_daily (
    tenant_id   TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    project_id  TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    day         TEXT NOT NULL,              -- YYYY-MM-DD
    fingerprint TEXT NOT NULL,
    failures    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, project_id, day, fingerprint)
) WITHOUT ROWID;

CREATE TABLE known_issues (
    id             TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    project_id     TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    fingerprint    TEXT,
    pattern        TEXT,                    -- an RE2 regular expression over message and stack
    bug_ticket_key TEXT NOT NULL,
    bug_ticket_url TEXT,
    note           TEXT,
    status         TEXT NOT NULL DEFAULT 'OPEN' CHECK (status IN ('OPEN', 'CLOSED')),
    closed_at      TEXT,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    CHECK (fingerprint IS NOT NULL OR pattern IS NOT NULL)
);
CREATE INDEX known_issues_project ON known_issues (tenant_id, project_id, status);
CREATE INDEX known_issues_bug ON known_issues (tenant_id, bug_ticket_key) WHERE status = 'OPEN';

-- A test set aside: its failures are stored and shown (marked) but do not fail a gate.
-- Either test_case_code or title names it; expires_at (optional) ends it by itself.
CREATE TABLE quarantine (
    id             TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    project_id     TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    test_case_code TEXT,
    title          TEXT,
    reason         TEXT NOT NULL,
    expires_at     TEXT,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    CHECK ((test_case_code IS NULL) != (title IS NULL))
);
CREATE INDEX quarantine_project ON quarantine (tenant_id, project_id, created_at);
