-- SQLite 0033: the index of linked results that are not a plain pass also holds the manual ones, with
-- their source, so flaky detection reads automated outcomes from the index alone.
DROP INDEX test_results_marks;
CREATE INDEX test_results_marks ON test_results (run_id, test_case_id, status, passed_on_retry, source)
    WHERE status <> 'PASSED' OR passed_on_retry = 1 OR source = 'manual';
