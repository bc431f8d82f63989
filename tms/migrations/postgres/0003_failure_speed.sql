-- SQLite 0024: flaky tests read from an index of the results that are not a plain pass, and run
-- references that retention can clear (set to NULL when it removes the run they name).
CREATE INDEX test_results_marks ON test_results (run_id, test_case_id, status, passed_on_retry)
    WHERE status <> 'PASSED' OR passed_on_retry = 1;
ALTER TABLE failure_fingerprints ALTER COLUMN first_run_id DROP NOT NULL;
ALTER TABLE failure_fingerprints ALTER COLUMN last_run_id DROP NOT NULL;
CREATE INDEX failure_fingerprints_first_run ON failure_fingerprints (first_run_id);
CREATE INDEX failure_fingerprints_last_run ON failure_fingerprints (last_run_id);
-- the flaky list names its tests by the rowid of their latest marked result (SQLite's rowid is its key)
CREATE UNIQUE INDEX test_results_rowid ON test_results (rowid);
