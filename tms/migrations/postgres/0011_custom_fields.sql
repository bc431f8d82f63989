-- SQLite 0031 in PostgreSQL terms (issue 26): the custom_fields definitions, the custom_fields column of
-- test_cases and case_versions, and case_field_values kept by a trigger (the same rows, the same
-- indexes). Full-text search (the `search` tsvector) also reads every string of a case's field values.
CREATE TABLE custom_fields (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    project_id    TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    key           TEXT NOT NULL,
    name          TEXT NOT NULL,
    type          TEXT NOT NULL,
    entity        TEXT NOT NULL CHECK (entity IN ('case', 'result')),
    options       TEXT NOT NULL DEFAULT '[]',
    required      BIGINT NOT NULL DEFAULT 0,
    default_value TEXT,
    position      BIGINT NOT NULL DEFAULT 0,
    retired_at    TEXT,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);
CREATE UNIQUE INDEX custom_fields_project_key ON custom_fields (tenant_id, project_id, key);
CREATE INDEX custom_fields_tenant_key ON custom_fields (tenant_id, key);

ALTER TABLE test_cases ADD COLUMN custom_fields TEXT NOT NULL DEFAULT '{}';
ALTER TABLE case_versions ADD COLUMN custom_fields TEXT NOT NULL DEFAULT '{}';

CREATE TABLE case_field_values (
    tenant_id    TEXT NOT NULL,
    field_key    TEXT NOT NULL,
    value_text   TEXT,
    value_number DOUBLE PRECISION,
    case_rowid   BIGINT NOT NULL
);
CREATE INDEX case_field_values_text ON case_field_values (tenant_id, field_key, value_text, case_rowid);
CREATE INDEX case_field_values_number ON case_field_values (tenant_id, field_key, value_number, case_rowid);
CREATE INDEX case_field_values_case ON case_field_values (case_rowid);

CREATE FUNCTION test_cases_field_values_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.custom_fields IS NOT DISTINCT FROM NEW.custom_fields THEN
        RETURN NULL;
    END IF;
    IF TG_OP <> 'INSERT' AND OLD.custom_fields <> '{}' THEN
        DELETE FROM case_field_values WHERE case_rowid = OLD.rowid;
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.custom_fields <> '{}' THEN
        INSERT INTO case_field_values (tenant_id, field_key, value_text, value_number, case_rowid)
        SELECT NEW.tenant_id, f.key,
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
CREATE TRIGGER test_cases_field_values AFTER INSERT OR DELETE OR UPDATE OF custom_fields ON test_cases
    FOR EACH ROW EXECUTE FUNCTION test_cases_field_values_sync();

CREATE OR REPLACE FUNCTION test_cases_search_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- punctuation separates words, as SQLite's unicode61 tokenizer has it ('TC-12' is 'tc' and '12';
    -- PostgreSQL's own parser would read '-12' as a signed number)
    NEW.search := to_tsvector('english', regexp_replace(concat_ws(' ', NEW.code, NEW.title, NEW.bdd_content,
        (SELECT string_agg(value, ' ') FROM json_array_elements_text(NEW.tags::json)),
        (SELECT string_agg(value ->> 'key', ' ') FROM json_array_elements(NEW.tickets::json)),
        (SELECT string_agg(v #>> '{}', ' ') FROM jsonb_path_query(NEW.custom_fields::jsonb, 'strict $.**') v
         WHERE jsonb_typeof(v) = 'string')),
        '[^[:alnum:]]+', ' ', 'g'));
    RETURN NEW;
END $$;
DROP TRIGGER test_cases_search_sync ON test_cases;
CREATE TRIGGER test_cases_search_sync BEFORE INSERT OR UPDATE OF code, title, bdd_content, tags, tickets,
    custom_fields ON test_cases FOR EACH ROW EXECUTE FUNCTION test_cases_search_sync();
