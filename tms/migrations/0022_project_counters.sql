-- The dashboard's "unlinked results" figure, kept at write time: counting a project's unlinked rows on
-- each page load grew with its history (0.8 s with 3 million results). Every writer and deleter of
-- unlinked_test_results adjusts it in the same transaction (tms/store/results.py, run_retention.py).
CREATE TABLE project_counters (
    project_id       TEXT PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    tenant_id        TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    unlinked_results INTEGER NOT NULL DEFAULT 0
);
-- one pass on upgrade, then never again
INSERT INTO project_counters (project_id, tenant_id, unlinked_results)
SELECT project_id, tenant_id, COUNT(*) FROM unlinked_test_results GROUP BY project_id, tenant_id;
