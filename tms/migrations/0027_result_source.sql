-- Results you can trust (issue 24, CONTRACT third wave): each result knows its `source`, and a run counts
-- its manual results so that it can show its `kind` (automated | manual | mixed) without reading them.
-- Written by tms/runs/writes.py, the one writer of results. PostgreSQL: postgres/0007_result_source.sql.
--
-- source: 'manual' when a person last set the result's outcome (status or step results) through the
-- execution view or PATCH /api/v1/results/{id}, and for the UNKNOWN rows a run is pre-populated with
-- (cases waiting for a tester); 'automated' when ingest, a shard or POST /runs/{id}/results wrote it.
ALTER TABLE test_results ADD COLUMN source TEXT NOT NULL DEFAULT 'automated'
    CHECK (source IN ('automated', 'manual'));
ALTER TABLE unlinked_test_results ADD COLUMN source TEXT NOT NULL DEFAULT 'automated'
    CHECK (source IN ('automated', 'manual'));
-- the run's results whose source is manual (results_total counts them all)
ALTER TABLE test_runs ADD COLUMN results_manual INTEGER NOT NULL DEFAULT 0;

-- Rows stored before: automated, except what the stored data shows a person wrote. A manual save is
-- the only writer of `updated_by` and `step_results`; an UNKNOWN row with no framework and no execution
-- time is a placeholder of a pre-populated run that nobody reported yet. (Unlinked rows keep no trace
-- of a manual save: they stay automated, as nearly all of them are.)
UPDATE test_results SET source = 'manual'
WHERE updated_by IS NOT NULL OR step_results IS NOT NULL
   OR (status = 'UNKNOWN' AND framework IS NULL AND executed_at IS NULL);
UPDATE test_runs SET results_manual = (
    SELECT COUNT(*) FROM test_results r WHERE r.run_id = test_runs.id AND r.source = 'manual')
WHERE id IN (SELECT run_id FROM test_results WHERE source = 'manual');
