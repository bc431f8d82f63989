-- SQLite 0043: case_field_values rows carry their case's project, and the indexes a `cf.<key>=`
-- filter reads start with it (the page and the count of a filter in a project come off the index
-- alone); each index holds only the rows it answers for. The trigger writes project_id and moves a
-- case's rows when the case moves to another project.
ALTER TABLE case_field_values ADD COLUMN project_id TEXT;
UPDATE case_field_values v SET project_id = c.project_id FROM test_cases c WHERE c.rowid = v.case_rowid;

DROP INDEX case_field_values_text;
DROP INDEX case_field_values_number;
CREATE INDEX case_field_values_text ON case_field_values (tenant_id, project_id, field_key, value_text, case_rowid)
    WHERE value_text IS NOT NULL;
CREATE INDEX case_field_values_number ON case_field_values (tenant_id, project_id, field_key, value_number, case_rowid)
    WHERE value_number IS NOT NULL;

CREATE OR REPLACE FUNCTION test_cases_field_values_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.custom_fields IS NOT DISTINCT FROM NEW.custom_fields
            AND OLD.project_id IS NOT DISTINCT FROM NEW.project_id THEN
        RETURN NULL;
    END IF;
    IF TG_OP <> 'INSERT' AND OLD.custom_fields <> '{}' THEN
        DELETE FROM case_field_values WHERE case_rowid = OLD.rowid;
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.custom_fields <> '{}' THEN
        INSERT INTO case_field_values (tenant_id, project_id, field_key, value_text, value_number, case_rowid)
        SELECT NEW.tenant_id, NEW.project_id, f.key,
               CASE WHEN jsonb_typeof(e) = 'number' THEN NULL ELSE e #>> '{}' END,
               CASE WHEN jsonb_typeof(e) = 'number' THEN (e #>> '{}')::double precision END,
               NEW.rowid
        FROM jsonb_each(NEW.custom_fields::jsonb) f
        CROSS JOIN LATERAL jsonb_array_elements(
            CASE WHEN jsonb_typeof(f.value) = 'array' THEN f.value ELSE jsonb_build_array(f.value) END) e
        WHERE jsonb_typeof(e) IN ('string', 'number', 'boolean');
    END IF;
    RETURN NULL;
END $$;
DROP TRIGGER test_cases_field_values ON test_cases;
CREATE TRIGGER test_cases_field_values AFTER INSERT OR DELETE OR UPDATE OF custom_fields, project_id ON test_cases
    FOR EACH ROW EXECUTE FUNCTION test_cases_field_values_sync();
