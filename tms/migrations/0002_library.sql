-- The test library and its results: cases, runs, results, unlinked results, attachments, idempotency.

CREATE TABLE test_cases (
    id                TEXT PRIMARY KEY,
    tenant_id         TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    project_id        TEXT REFERENCES projects (id) ON DELETE SET NULL,
    code              TEXT NOT NULL,
    title             TEXT NOT NULL,
    bdd_content       TEXT NOT NULL,
    status            TEXT NOT NULL DEFAULT 'DRAFT',
    priority          TEXT NOT NULL DEFAULT 'MEDIUM',
    layer             TEXT,
    is_e2e            INTEGER NOT NULL DEFAULT 0,
    automation_status TEXT NOT NULL DEFAULT 'MANUAL',
    tags              TEXT NOT NULL DEFAULT '[]',   -- JSON array of strings
    tickets           TEXT NOT NULL DEFAULT '[]',   -- JSON array of {key, source}
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    UNIQUE (tenant_id, code)
);
-- list pages order by rowid (creation order); each filter combination has an index that keeps that order
CREATE INDEX test_cases_tenant_project ON test_cases (tenant_id, project_id);
CREATE INDEX test_cases_tenant_status ON test_cases (tenant_id, status);
CREATE INDEX test_cases_tenant_project_status ON test_cases (tenant_id, project_id, status);

CREATE TABLE test_runs (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    project_id   TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    environment  TEXT,
    status       TEXT NOT NULL DEFAULT 'PENDING',
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    completed_at TEXT
);
CREATE INDEX test_runs_tenant_project ON test_runs (tenant_id, project_id);
CREATE INDEX test_runs_tenant_status ON test_runs (tenant_id, status);
CREATE INDEX test_runs_tenant_project_status ON test_runs (tenant_id, project_id, status);

-- Results linked to a library case. test_case_id has no foreign key on purpose: a case's past
-- results survive its deletion and keep their code and status in their runs.
CREATE TABLE test_results (
    id             TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    run_id         TEXT NOT NULL REFERENCES test_runs (id) ON DELETE CASCADE,
    test_case_id   TEXT NOT NULL,
    test_case_code TEXT NOT NULL,
    title          TEXT,
    status         TEXT NOT NULL,
    comment        TEXT,
    bug_ticket_key TEXT,
    bug_ticket_url TEXT,
    duration_ms    INTEGER,
    framework      TEXT,
    error_message  TEXT,
    error_stack    TEXT,
    executed_at    TEXT,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    UNIQUE (run_id, test_case_id)
);
CREATE INDEX test_results_case ON test_results (tenant_id, test_case_id, created_at);
CREATE INDEX test_results_bug ON test_results (tenant_id, bug_ticket_key) WHERE bug_ticket_key IS NOT NULL;

-- NativeTestResult: an ingested result that names no library case. Swept after the retention period.
CREATE TABLE native_test_results (
    id             TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    project_id     TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    run_id         TEXT NOT NULL REFERENCES test_runs (id) ON DELETE CASCADE,
    title          TEXT,
    status         TEXT NOT NULL,
    comment        TEXT,
    bug_ticket_key TEXT,
    bug_ticket_url TEXT,
    duration_ms    INTEGER,
    framework      TEXT,
    error_message  TEXT,
    error_stack    TEXT,
    executed_at    TEXT,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL
);
CREATE INDEX native_results_run ON native_test_results (run_id);
CREATE INDEX native_results_sweep ON native_test_results (tenant_id, created_at);
CREATE INDEX native_results_project ON native_test_results (tenant_id, project_id);

-- Files stored under data_dir/attachments/<storage_name>; result_id names a linked or unlinked result.
CREATE TABLE attachments (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    result_id    TEXT NOT NULL,
    file_name    TEXT NOT NULL,
    mime_type    TEXT NOT NULL,
    size         INTEGER NOT NULL,
    storage_name TEXT NOT NULL UNIQUE,
    created_at   TEXT NOT NULL
);
CREATE INDEX attachments_result ON attachments (tenant_id, result_id);

-- Idempotency-Key of ingest: a retried request returns the first answer.
CREATE TABLE idempotency_keys (
    tenant_id       TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    key             TEXT NOT NULL,
    request_sha256  TEXT NOT NULL,
    response_status INTEGER NOT NULL,
    response_body   BLOB NOT NULL,
    created_at      TEXT NOT NULL,
    PRIMARY KEY (tenant_id, key)
);
