-- PostgreSQL only: test_runs.results_manual (postgres/0007) was a 32-bit INTEGER; SQLite's integers
-- are 64-bit, and the baseline spells every other count (results_total, results_passed, …) BIGINT.
-- Found by tests/test_schema_agreement.py. The values are kept (the table is rewritten once).
ALTER TABLE test_runs ALTER COLUMN results_manual TYPE BIGINT;
