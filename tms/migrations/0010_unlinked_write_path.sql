-- Ingest writes unlinked results in bulk, and every index on native_test_results costs each of those
-- rows a B-tree insert. The (tenant_id, project_id) index only served the dashboard's unlinked count;
-- that count now goes through the project's runs, so the run index also carries tenant_id to answer
-- it from the index alone.
DROP INDEX native_results_project;
DROP INDEX native_results_run;
CREATE INDEX native_results_run ON native_test_results (run_id, tenant_id);
