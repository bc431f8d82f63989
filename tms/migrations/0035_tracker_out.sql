-- Issue 27: the tracker, both ways. An integration also calls its tracker (create a defect, read the
-- titles and statuses of requirements); a defect creation in flight is claimed per result; the
-- requirements' titles and statuses are cached here, refreshed by a background job.

ALTER TABLE integrations ADD COLUMN api_url TEXT;        -- GitHub API, GitLab instance or Jira site URL
ALTER TABLE integrations ADD COLUMN api_user TEXT;       -- Jira: the account's email (basic auth)
-- Fernet token (tms.team.signin.secret_box, purpose "tracker-api-token"): write-only, never returned
ALTER TABLE integrations ADD COLUMN api_token_encrypted TEXT;
ALTER TABLE integrations ADD COLUMN project_path TEXT;   -- GitLab: group/project or the numeric id
ALTER TABLE integrations ADD COLUMN project_key TEXT;    -- Jira: the project key, e.g. SHOP

-- One creation per result at a time, across replicas: the row is taken before the tracker is called
-- (outside any transaction) and removed after; a row older than a few minutes is a crash's leftover.
CREATE TABLE defect_requests (
    result_id      TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    integration_id TEXT NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
    started_at     TEXT NOT NULL
);

-- Requirements (ticket keys in cases' tickets) as the tracker last described them. Read by the
-- traceability matrix, written only by the refresh job and by a defect's creation: never on a page load.
CREATE TABLE tracker_issues (
    tenant_id      TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    source         TEXT NOT NULL,   -- JIRA | GITHUB | GITLAB, as in a ticket's source
    issue_key      TEXT NOT NULL,   -- upper(key) as a case names it: 'SHOP-12', 'ACME/SHOP#12', '#12'
    integration_id TEXT NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
    title          TEXT,
    status         TEXT,
    url            TEXT,
    error          TEXT,            -- the last refresh's failure (404, 401, …), shown on the matrix
    fetched_at     TEXT NOT NULL,
    PRIMARY KEY (tenant_id, source, issue_key)
);
CREATE INDEX tracker_issues_stale ON tracker_issues (integration_id, fetched_at);
