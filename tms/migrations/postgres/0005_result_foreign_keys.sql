-- PostgreSQL only (SQLite keeps its foreign keys: its checks are cheap index probes).
-- PostgreSQL checks a foreign key with a per-row trigger that runs a query and locks the parent row;
-- the tenant, project and run keys of the two results tables took three quarters of the time of a
-- 100,000-result COPY (bench/README.md, "Scale-out"). Those keys are redundant for the writers: every
-- result is written in the transaction that creates or loads its run, with the tenant and project of
-- that run, and write transactions are serialized by the write lock (tms/db/postgres.py), so no run can
-- vanish under them. What the keys also did, the cascade, is kept below: deleting a run (directly,
-- or through its tenant or project) deletes its results.
ALTER TABLE test_results DROP CONSTRAINT test_results_tenant_id_fkey;
ALTER TABLE test_results DROP CONSTRAINT test_results_run_id_fkey;
ALTER TABLE unlinked_test_results DROP CONSTRAINT unlinked_test_results_tenant_id_fkey;
ALTER TABLE unlinked_test_results DROP CONSTRAINT unlinked_test_results_project_id_fkey;
ALTER TABLE unlinked_test_results DROP CONSTRAINT unlinked_test_results_run_id_fkey;

CREATE FUNCTION test_runs_delete_results() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM test_results WHERE run_id = OLD.id;
    DELETE FROM unlinked_test_results WHERE run_id = OLD.id;
    RETURN OLD;
END $$;
CREATE TRIGGER test_runs_delete_results BEFORE DELETE ON test_runs
    FOR EACH ROW EXECUTE FUNCTION test_runs_delete_results();
