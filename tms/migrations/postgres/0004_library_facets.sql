-- SQLite 0023, in PostgreSQL terms. SQLite's facet tokens in its FTS5 index are not needed here: the
-- planner combines the (tenant, project, column) B-tree indexes, case_tags and the GIN index on
-- `search` in one bitmap scan. What 0023 adds that every backend needs is below.

-- cases per section, kept by a trigger for every writer (the section delete's SET NULL included):
-- section_key is the section id, '' for the cases filed in no section; rows may reach 0 and stay
CREATE TABLE section_case_counts (
    tenant_id   TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    project_id  TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    section_key TEXT NOT NULL,
    cases       BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, project_id, section_key)
);
INSERT INTO section_case_counts (tenant_id, project_id, section_key, cases)
SELECT tenant_id, project_id, coalesce(section_id, ''), COUNT(*) FROM test_cases
WHERE project_id IS NOT NULL GROUP BY tenant_id, project_id, coalesce(section_id, '');

CREATE FUNCTION test_cases_counts_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.project_id IS NOT DISTINCT FROM NEW.project_id
       AND OLD.section_id IS NOT DISTINCT FROM NEW.section_id THEN
        RETURN NULL;
    END IF;
    IF TG_OP <> 'INSERT' AND OLD.project_id IS NOT NULL THEN
        UPDATE section_case_counts SET cases = cases - 1
        WHERE tenant_id = OLD.tenant_id AND project_id = OLD.project_id AND section_key = coalesce(OLD.section_id, '');
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.project_id IS NOT NULL THEN
        INSERT INTO section_case_counts (tenant_id, project_id, section_key, cases)
        VALUES (NEW.tenant_id, NEW.project_id, coalesce(NEW.section_id, ''), 1)
        ON CONFLICT (tenant_id, project_id, section_key) DO UPDATE SET cases = section_case_counts.cases + 1;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER test_cases_counts AFTER INSERT OR DELETE OR UPDATE OF project_id, section_id ON test_cases
    FOR EACH ROW EXECUTE FUNCTION test_cases_counts_sync();

-- a page sorted by priority walks this index in order (the expression of SORTS["priority"])
CREATE INDEX test_cases_project_priority_rank ON test_cases (tenant_id, project_id,
    (CASE priority WHEN 'CRITICAL' THEN 4 WHEN 'HIGH' THEN 3 WHEN 'MEDIUM' THEN 2 ELSE 1 END));
