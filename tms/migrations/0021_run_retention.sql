-- retention.runs_days: the sweep finds the oldest runs through this index, never by a scan.
CREATE INDEX test_runs_created ON test_runs (created_at);
