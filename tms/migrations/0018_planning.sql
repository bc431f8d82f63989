-- Planning: archived projects, milestones, test plans, and the runs that belong to them.

-- NULL = open; an archived project is hidden from the UI's lists and refuses new runs and ingests.
ALTER TABLE projects ADD COLUMN archived_at TEXT;

CREATE TABLE milestones (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    project_id   TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    description  TEXT,
    due_on       TEXT,                    -- YYYY-MM-DD
    status       TEXT NOT NULL DEFAULT 'OPEN' CHECK (status IN ('OPEN', 'COMPLETED')),
    completed_at TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);
-- lists page in creation order per tenant and per project (see store.paging)
CREATE INDEX milestones_tenant ON milestones (tenant_id);
CREATE INDEX milestones_tenant_project ON milestones (tenant_id, project_id);

-- A plan is what was selected and why; its runs carry the results. `selection` keeps the request's
-- case_ids, section_ids and tags (JSON) so the page can say how the cases were chosen.
CREATE TABLE test_plans (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    project_id   TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    milestone_id TEXT REFERENCES milestones (id) ON DELETE SET NULL,
    name         TEXT NOT NULL,
    description  TEXT,
    selection    TEXT NOT NULL DEFAULT '{}',
    case_count   INTEGER NOT NULL DEFAULT 0,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);
CREATE INDEX test_plans_tenant ON test_plans (tenant_id);
CREATE INDEX test_plans_tenant_project ON test_plans (tenant_id, project_id);
CREATE INDEX test_plans_milestone ON test_plans (milestone_id) WHERE milestone_id IS NOT NULL;

-- Deleting a milestone or a plan keeps its runs: the foreign keys only forget the link.
ALTER TABLE test_runs ADD COLUMN milestone_id TEXT REFERENCES milestones (id) ON DELETE SET NULL;
ALTER TABLE test_runs ADD COLUMN plan_id TEXT REFERENCES test_plans (id) ON DELETE SET NULL;
-- Led by the link so the foreign keys' SET NULL finds the runs without a scan; with tenant_id second
-- the runs list filtered by milestone or plan still reads its page in creation order off the index,
-- and a milestone's or plan's totals sum the run summaries found through it.
CREATE INDEX test_runs_milestone ON test_runs (milestone_id, tenant_id) WHERE milestone_id IS NOT NULL;
CREATE INDEX test_runs_plan ON test_runs (plan_id, tenant_id) WHERE plan_id IS NOT NULL;
