-- SQLite 0036 in PostgreSQL terms (issue 26): shared steps and the two link tables that keep
-- "used by" an index read (see tms/migrations/0036_shared_steps.sql for the design).
CREATE TABLE shared_steps (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    project_id  TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    steps       TEXT NOT NULL,
    version     BIGINT NOT NULL DEFAULT 1,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE UNIQUE INDEX shared_steps_project_name ON shared_steps (tenant_id, project_id, name);

CREATE TABLE shared_step_uses (
    tenant_id       TEXT NOT NULL,
    shared_step_id  TEXT NOT NULL REFERENCES shared_steps (id) ON DELETE CASCADE,
    case_id         TEXT NOT NULL REFERENCES test_cases (id) ON DELETE CASCADE,
    PRIMARY KEY (shared_step_id, case_id)
);
CREATE INDEX shared_step_uses_case ON shared_step_uses (case_id);

CREATE TABLE shared_step_nesting (
    tenant_id       TEXT NOT NULL,
    shared_step_id  TEXT NOT NULL REFERENCES shared_steps (id) ON DELETE CASCADE,
    parent_id       TEXT NOT NULL REFERENCES shared_steps (id) ON DELETE CASCADE,
    PRIMARY KEY (shared_step_id, parent_id)
);
CREATE INDEX shared_step_nesting_parent ON shared_step_nesting (parent_id);
