-- Custom field filters at 100,000 cases (issue 26, bench/custom_fields.py). PostgreSQL:
-- postgres/0024_field_values_project.sql.
--
-- case_field_values rows carry their case's project, and its indexes start with it: a `cf.<key>=`
-- filter in a project is one index range that is also the project's list, so the page (in case order)
-- and the count are read off the index alone. Before, each match was checked against test_cases for
-- its project (about 3 us a match: a select held by 1 case in 5 of 100,000 cost 60 ms for its count).
-- A filter without a project reads the range of each project that defines the key.
-- The indexes hold only the rows they answer for (value_text or value_number is set, never both):
-- fewer entries to write on every insert of a case.
ALTER TABLE case_field_values ADD COLUMN project_id TEXT;
UPDATE case_field_values SET project_id = (
    SELECT project_id FROM test_cases WHERE test_cases.rowid = case_field_values.case_rowid);

DROP INDEX case_field_values_text;
DROP INDEX case_field_values_number;
CREATE INDEX case_field_values_text ON case_field_values (tenant_id, project_id, field_key, value_text, case_rowid)
    WHERE value_text IS NOT NULL;
CREATE INDEX case_field_values_number ON case_field_values (tenant_id, project_id, field_key, value_number, case_rowid)
    WHERE value_number IS NOT NULL;

-- the triggers of 0031, writing project_id; a case moved to another project moves its rows
DROP TRIGGER test_cases_field_values_insert;
DROP TRIGGER test_cases_field_values_update;
CREATE TRIGGER test_cases_field_values_insert AFTER INSERT ON test_cases WHEN NEW.custom_fields <> '{}' BEGIN
    INSERT INTO case_field_values (tenant_id, project_id, field_key, value_text, value_number, case_rowid)
    SELECT NEW.tenant_id, NEW.project_id, f.key,
           CASE f.type WHEN 'text' THEN f.atom WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' END,
           CASE WHEN f.type IN ('integer', 'real') THEN f.atom END, NEW.rowid
    FROM json_each(NEW.custom_fields) f WHERE f.type IN ('text', 'integer', 'real', 'true', 'false')
    UNION ALL
    SELECT NEW.tenant_id, NEW.project_id, f.key, e.atom, NULL, NEW.rowid
    FROM json_each(NEW.custom_fields) f, json_each(CASE WHEN f.type = 'array' THEN f.value ELSE '[]' END) e
    WHERE e.type = 'text';
END;
CREATE TRIGGER test_cases_field_values_update AFTER UPDATE OF custom_fields, project_id ON test_cases
WHEN OLD.custom_fields IS NOT NEW.custom_fields OR OLD.project_id IS NOT NEW.project_id BEGIN
    DELETE FROM case_field_values WHERE case_rowid = OLD.rowid;
    INSERT INTO case_field_values (tenant_id, project_id, field_key, value_text, value_number, case_rowid)
    SELECT NEW.tenant_id, NEW.project_id, f.key,
           CASE f.type WHEN 'text' THEN f.atom WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' END,
           CASE WHEN f.type IN ('integer', 'real') THEN f.atom END, NEW.rowid
    FROM json_each(NEW.custom_fields) f WHERE f.type IN ('text', 'integer', 'real', 'true', 'false')
    UNION ALL
    SELECT NEW.tenant_id, NEW.project_id, f.key, e.atom, NULL, NEW.rowid
    FROM json_each(NEW.custom_fields) f, json_each(CASE WHEN f.type = 'array' THEN f.value ELSE '[]' END) e
    WHERE e.type = 'text';
END;
