-- AI generations, counted per tenant and calendar month for the quota.
CREATE TABLE ai_generations (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    project_id   TEXT REFERENCES projects (id) ON DELETE SET NULL,
    user_id      TEXT REFERENCES users (id) ON DELETE SET NULL,
    month        TEXT NOT NULL,          -- YYYY-MM (UTC) the generation counts against
    model        TEXT NOT NULL,
    drafts       INTEGER NOT NULL,
    created_at   TEXT NOT NULL
);
CREATE INDEX ai_generations_quota ON ai_generations (tenant_id, month);
