-- Flaky detection reads automated results only (issue 24, CONTRACT third wave). The partial index of
-- the linked results that are not a plain pass (0024) also holds the manual ones now, with their source:
-- /flaky still reads a test's outcomes in a window of runs from the index alone, and a manual result
-- there (a tester's re-run inside a CI run) reads as "no automated outcome" instead of as a plain pass.
-- Manual results are a small share of rows. PostgreSQL: postgres/0013_marks_by_source.sql.
DROP INDEX test_results_marks;
CREATE INDEX test_results_marks ON test_results (run_id, test_case_id, status, passed_on_retry, source)
    WHERE status <> 'PASSED' OR passed_on_retry = 1 OR source = 'manual';
