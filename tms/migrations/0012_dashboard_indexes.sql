-- The dashboard's "Flaky" card lists and counts a project's FLAKY cases on every load; without this
-- small partial index that is a walk over every case of the project (10,000 rows: ~35 ms).
CREATE INDEX test_cases_flaky ON test_cases (tenant_id, project_id) WHERE automation_status = 'FLAKY';
