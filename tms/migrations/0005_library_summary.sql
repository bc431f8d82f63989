-- Library list speed and per-run result counts.

-- "All cases/runs of a tenant" pages order by rowid: an index on tenant_id alone keeps rowid order,
-- so a page is read straight off the index (no sort of 100k rowids per request).
CREATE INDEX test_cases_tenant ON test_cases (tenant_id);
CREATE INDEX test_runs_tenant ON test_runs (tenant_id);

-- Counts of a run's results by status, linked and unlinked together, kept up to date by every write of
-- results (ingest, POST results) in the same transaction. A list page of 500 runs would otherwise
-- aggregate every result of every run on it. They describe the run as reported: the retention sweep
-- removes unlinked detail rows but leaves the run's summary as it was.
ALTER TABLE test_runs ADD COLUMN results_total INTEGER NOT NULL DEFAULT 0;
ALTER TABLE test_runs ADD COLUMN results_passed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE test_runs ADD COLUMN results_failed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE test_runs ADD COLUMN results_broken INTEGER NOT NULL DEFAULT 0;
ALTER TABLE test_runs ADD COLUMN results_skipped INTEGER NOT NULL DEFAULT 0;
ALTER TABLE test_runs ADD COLUMN results_unknown INTEGER NOT NULL DEFAULT 0;
