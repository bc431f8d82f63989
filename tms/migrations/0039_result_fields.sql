-- Result fields and source locations (issues 26 and 24, CONTRACT third wave): a result carries the
-- values of its project's result fields (custom fields of entity 'result') and the source location of
-- the test (`file`, `line`) that a report gave. Written by tms/runs/writes.py, the one writer of
-- results. PostgreSQL: postgres/0020_result_fields.sql.
--
-- custom_fields: a JSON object {key: value}, as on test_cases (tms.library.fields checks the values).
-- result_field_values holds the same values one row each (a multiselect's options one row per option),
-- so that a value is an index range however many results there are: text kinds, dates, options and
-- checkboxes ('true'/'false') in value_text, numbers in value_number. Result ids are unique across both
-- tables, so one table serves linked and unlinked results. Triggers keep it on UPDATE and DELETE (a
-- changed value, a run's cascade, the retention sweep); a new result's rows are written by the writer
-- (tms.runs.results.store) in one bulk statement, only for results holding values: a row trigger on
-- INSERT costs every row of an ingest a trigger program, even for the results without values.
ALTER TABLE test_results ADD COLUMN custom_fields TEXT NOT NULL DEFAULT '{}';
ALTER TABLE test_results ADD COLUMN location_file TEXT;
ALTER TABLE test_results ADD COLUMN location_line INTEGER;
ALTER TABLE unlinked_test_results ADD COLUMN custom_fields TEXT NOT NULL DEFAULT '{}';
ALTER TABLE unlinked_test_results ADD COLUMN location_file TEXT;
ALTER TABLE unlinked_test_results ADD COLUMN location_line INTEGER;

CREATE TABLE result_field_values (
    tenant_id    TEXT NOT NULL,
    field_key    TEXT NOT NULL,
    value_text   TEXT,
    value_number REAL,
    result_id    TEXT NOT NULL
);
CREATE INDEX result_field_values_text ON result_field_values (tenant_id, field_key, value_text, result_id);
CREATE INDEX result_field_values_number ON result_field_values (tenant_id, field_key, value_number, result_id);
CREATE INDEX result_field_values_result ON result_field_values (result_id);

-- json_each(f.value) only for arrays: a string value is not JSON text
CREATE TRIGGER test_results_field_values_update AFTER UPDATE OF custom_fields ON test_results
WHEN OLD.custom_fields IS NOT NEW.custom_fields BEGIN
    DELETE FROM result_field_values WHERE result_id = OLD.id;
    INSERT INTO result_field_values (tenant_id, field_key, value_text, value_number, result_id)
    SELECT NEW.tenant_id, f.key,
           CASE f.type WHEN 'text' THEN f.atom WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' END,
           CASE WHEN f.type IN ('integer', 'real') THEN f.atom END, NEW.id
    FROM json_each(NEW.custom_fields) f WHERE f.type IN ('text', 'integer', 'real', 'true', 'false')
    UNION ALL
    SELECT NEW.tenant_id, f.key, e.atom, NULL, NEW.id
    FROM json_each(NEW.custom_fields) f, json_each(CASE WHEN f.type = 'array' THEN f.value ELSE '[]' END) e
    WHERE e.type = 'text';
END;
CREATE TRIGGER test_results_field_values_delete AFTER DELETE ON test_results WHEN OLD.custom_fields <> '{}' BEGIN
    DELETE FROM result_field_values WHERE result_id = OLD.id;
END;

CREATE TRIGGER unlinked_results_field_values_update AFTER UPDATE OF custom_fields ON unlinked_test_results
WHEN OLD.custom_fields IS NOT NEW.custom_fields BEGIN
    DELETE FROM result_field_values WHERE result_id = OLD.id;
    INSERT INTO result_field_values (tenant_id, field_key, value_text, value_number, result_id)
    SELECT NEW.tenant_id, f.key,
           CASE f.type WHEN 'text' THEN f.atom WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' END,
           CASE WHEN f.type IN ('integer', 'real') THEN f.atom END, NEW.id
    FROM json_each(NEW.custom_fields) f WHERE f.type IN ('text', 'integer', 'real', 'true', 'false')
    UNION ALL
    SELECT NEW.tenant_id, f.key, e.atom, NULL, NEW.id
    FROM json_each(NEW.custom_fields) f, json_each(CASE WHEN f.type = 'array' THEN f.value ELSE '[]' END) e
    WHERE e.type = 'text';
END;
CREATE TRIGGER unlinked_results_field_values_delete AFTER DELETE ON unlinked_test_results
WHEN OLD.custom_fields <> '{}' BEGIN
    DELETE FROM result_field_values WHERE result_id = OLD.id;
END;
