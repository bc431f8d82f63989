-- Flaky tests read from an index, and run references that retention can clear.

-- Every linked result that is not a plain pass (failed, broken, skipped, unknown, or passed on a retry):
-- with it, /flaky reads a test's outcomes in a window of runs from the index alone, and a result absent
-- from it is a pass. About one row in ten, so an ingest barely pays for it.
CREATE INDEX test_results_marks ON test_results (run_id, test_case_id, status, passed_on_retry)
    WHERE status <> 'PASSED' OR passed_on_retry = 1;

-- failure_fingerprints' run ids become nullable: the retention sweep (retention.runs_days) sets them to
-- NULL when it removes the run they name, instead of leaving them pointing at nothing. SQLite cannot
-- drop a NOT NULL in place, hence the copy (one row per project and fingerprint: a small table).
CREATE TABLE failure_fingerprints_0024 (
    tenant_id     TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    project_id    TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    fingerprint   TEXT NOT NULL,
    first_run_id  TEXT,                     -- NULL once retention removed that run
    first_seen_at TEXT NOT NULL,
    last_run_id   TEXT,                     -- NULL once retention removed that run
    last_seen_at  TEXT NOT NULL,
    occurrences   INTEGER NOT NULL DEFAULT 0,
    error_message TEXT,
    PRIMARY KEY (tenant_id, project_id, fingerprint)
) WITHOUT ROWID;
INSERT INTO failure_fingerprints_0024 (tenant_id, project_id, fingerprint, first_run_id, first_seen_at, last_run_id,
                                       last_seen_at, occurrences, error_message)
    SELECT tenant_id, project_id, fingerprint, first_run_id, first_seen_at, last_run_id, last_seen_at, occurrences,
           error_message FROM failure_fingerprints;
DROP TABLE failure_fingerprints;
ALTER TABLE failure_fingerprints_0024 RENAME TO failure_fingerprints;
-- the sweep finds the rows naming a removed run by these, not by a scan
CREATE INDEX failure_fingerprints_first_run ON failure_fingerprints (first_run_id);
CREATE INDEX failure_fingerprints_last_run ON failure_fingerprints (last_run_id);
