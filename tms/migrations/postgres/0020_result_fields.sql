-- SQLite 0039: result fields and source locations (issues 26 and 24). The same columns on both results
-- tables and result_field_values kept by triggers on UPDATE and DELETE (the same rows, the same indexes;
-- a new result's rows are written by tms.runs.results.store, as on SQLite); see 0039_result_fields.sql.
-- Each trigger's WHEN skips a result without values before any function call.
ALTER TABLE test_results ADD COLUMN custom_fields TEXT NOT NULL DEFAULT '{}';
ALTER TABLE test_results ADD COLUMN location_file TEXT;
ALTER TABLE test_results ADD COLUMN location_line BIGINT;
ALTER TABLE unlinked_test_results ADD COLUMN custom_fields TEXT NOT NULL DEFAULT '{}';
ALTER TABLE unlinked_test_results ADD COLUMN location_file TEXT;
ALTER TABLE unlinked_test_results ADD COLUMN location_line BIGINT;

CREATE TABLE result_field_values (
    tenant_id    TEXT NOT NULL,
    field_key    TEXT NOT NULL,
    value_text   TEXT,
    value_number DOUBLE PRECISION,
    result_id    TEXT NOT NULL
);
CREATE INDEX result_field_values_text ON result_field_values (tenant_id, field_key, value_text, result_id);
CREATE INDEX result_field_values_number ON result_field_values (tenant_id, field_key, value_number, result_id);
CREATE INDEX result_field_values_result ON result_field_values (result_id);

CREATE FUNCTION results_field_values_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM result_field_values WHERE result_id = OLD.id;
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.custom_fields <> '{}' THEN
        INSERT INTO result_field_values (tenant_id, field_key, value_text, value_number, result_id)
        SELECT NEW.tenant_id, f.key,
               CASE WHEN jsonb_typeof(e) = 'number' THEN NULL ELSE e #>> '{}' END,
               CASE WHEN jsonb_typeof(e) = 'number' THEN (e #>> '{}')::double precision END,
               NEW.id
        FROM jsonb_each(NEW.custom_fields::jsonb) f
        CROSS JOIN LATERAL jsonb_array_elements(
            CASE WHEN jsonb_typeof(f.value) = 'array' THEN f.value ELSE jsonb_build_array(f.value) END) e
        WHERE jsonb_typeof(e) IN ('string', 'number', 'boolean');
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER test_results_field_values_update AFTER UPDATE OF custom_fields ON test_results FOR EACH ROW
    WHEN (OLD.custom_fields IS DISTINCT FROM NEW.custom_fields) EXECUTE FUNCTION results_field_values_sync();
CREATE TRIGGER test_results_field_values_delete AFTER DELETE ON test_results FOR EACH ROW
    WHEN (OLD.custom_fields <> '{}') EXECUTE FUNCTION results_field_values_sync();
CREATE TRIGGER unlinked_results_field_values_update AFTER UPDATE OF custom_fields ON unlinked_test_results
    FOR EACH ROW WHEN (OLD.custom_fields IS DISTINCT FROM NEW.custom_fields)
    EXECUTE FUNCTION results_field_values_sync();
CREATE TRIGGER unlinked_results_field_values_delete AFTER DELETE ON unlinked_test_results FOR EACH ROW
    WHEN (OLD.custom_fields <> '{}') EXECUTE FUNCTION results_field_values_sync();
