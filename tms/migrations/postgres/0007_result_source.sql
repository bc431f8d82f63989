-- SQLite 0027: each result knows its `source` (automated | manual), and a run counts its manual results
-- to show its `kind` (automated | manual | mixed). The same columns and rules; see 0027_result_source.sql.
ALTER TABLE test_results ADD COLUMN source TEXT NOT NULL DEFAULT 'automated'
    CHECK (source IN ('automated', 'manual'));
ALTER TABLE unlinked_test_results ADD COLUMN source TEXT NOT NULL DEFAULT 'automated'
    CHECK (source IN ('automated', 'manual'));
ALTER TABLE test_runs ADD COLUMN results_manual INTEGER NOT NULL DEFAULT 0;

UPDATE test_results SET source = 'manual'
WHERE updated_by IS NOT NULL OR step_results IS NOT NULL
   OR (status = 'UNKNOWN' AND framework IS NULL AND executed_at IS NULL);
UPDATE test_runs SET results_manual = (
    SELECT COUNT(*) FROM test_results r WHERE r.run_id = test_runs.id AND r.source = 'manual')
WHERE id IN (SELECT run_id FROM test_results WHERE source = 'manual');
