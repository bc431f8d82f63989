-- Shared steps (issue 26, CONTRACT third wave "Case design"): a named list of Gherkin step lines a
-- project's cases use through the step line `* shared: <name>`. PostgreSQL: postgres/0017_shared_steps.sql.
--
-- `steps` is the step lines as text (arguments, doc strings and tables included); a name is unique in
-- its project. The links keep "used by" an index read instead of a scan of every case's text, and are
-- written by the case's save (tms.library.shared_steps.uses): shared_step_uses holds the shared steps a
-- case's text names itself, shared_step_nesting those another shared step's steps name (no cycles: a
-- save that would make one is refused). A case using one through another is found by walking
-- shared_step_nesting upwards (WITH RECURSIVE), then shared_step_uses.
CREATE TABLE shared_steps (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    project_id  TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    steps       TEXT NOT NULL,
    version     INTEGER NOT NULL DEFAULT 1,
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
