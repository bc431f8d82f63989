-- "Unlinked" is the one word for an ingested result that names no library case (API, code, docs);
-- the table follows. RENAME only rewrites the schema entry, however many rows the table holds.
-- SQLite cannot rename an index in place and rebuilding both would cost a full pass over the
-- table on upgrade, so the indexes keep their names (native_results_run, native_results_sweep).
ALTER TABLE native_test_results RENAME TO unlinked_test_results;
