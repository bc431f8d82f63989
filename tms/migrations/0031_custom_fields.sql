-- Custom fields (issue 26, CONTRACT third wave "Case design"): typed fields a project defines for its
-- cases (entity 'case') or results (entity 'result'). PostgreSQL: postgres/0011_custom_fields.sql.
--
-- A case keeps its values in test_cases.custom_fields, a JSON object {key: value} (what every response
-- and version shows). case_field_values holds the same values one row each (a multiselect's options
-- one row per option), kept by triggers like case_tags, so that `cf.<key>=value` is an index range
-- however many cases there are: text kinds, dates, options and checkboxes ('true'/'false') in
-- value_text, numbers in value_number. A retired field keeps its values (retired_at is set, nothing
-- else changes).
CREATE TABLE custom_fields (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    project_id    TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    key           TEXT NOT NULL,
    name          TEXT NOT NULL,
    type          TEXT NOT NULL,
    entity        TEXT NOT NULL CHECK (entity IN ('case', 'result')),
    options       TEXT NOT NULL DEFAULT '[]',   -- JSON array of strings (select, multiselect)
    required      INTEGER NOT NULL DEFAULT 0,
    default_value TEXT,                         -- JSON, NULL = no default
    position      INTEGER NOT NULL DEFAULT 0,
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
    value_number REAL,
    case_rowid   INTEGER NOT NULL
);
CREATE INDEX case_field_values_text ON case_field_values (tenant_id, field_key, value_text, case_rowid);
CREATE INDEX case_field_values_number ON case_field_values (tenant_id, field_key, value_number, case_rowid);
CREATE INDEX case_field_values_case ON case_field_values (case_rowid);

-- json_each(f.value) only for arrays: a string value is not JSON text
CREATE TRIGGER test_cases_field_values_insert AFTER INSERT ON test_cases WHEN NEW.custom_fields <> '{}' BEGIN
    INSERT INTO case_field_values (tenant_id, field_key, value_text, value_number, case_rowid)
    SELECT NEW.tenant_id, f.key,
           CASE f.type WHEN 'text' THEN f.atom WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' END,
           CASE WHEN f.type IN ('integer', 'real') THEN f.atom END, NEW.rowid
    FROM json_each(NEW.custom_fields) f WHERE f.type IN ('text', 'integer', 'real', 'true', 'false')
    UNION ALL
    SELECT NEW.tenant_id, f.key, e.atom, NULL, NEW.rowid
    FROM json_each(NEW.custom_fields) f, json_each(CASE WHEN f.type = 'array' THEN f.value ELSE '[]' END) e
    WHERE e.type = 'text';
END;
CREATE TRIGGER test_cases_field_values_update AFTER UPDATE OF custom_fields ON test_cases
WHEN OLD.custom_fields IS NOT NEW.custom_fields BEGIN
    DELETE FROM case_field_values WHERE case_rowid = OLD.rowid;
    INSERT INTO case_field_values (tenant_id, field_key, value_text, value_number, case_rowid)
    SELECT NEW.tenant_id, f.key,
           CASE f.type WHEN 'text' THEN f.atom WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' END,
           CASE WHEN f.type IN ('integer', 'real') THEN f.atom END, NEW.rowid
    FROM json_each(NEW.custom_fields) f WHERE f.type IN ('text', 'integer', 'real', 'true', 'false')
    UNION ALL
    SELECT NEW.tenant_id, f.key, e.atom, NULL, NEW.rowid
    FROM json_each(NEW.custom_fields) f, json_each(CASE WHEN f.type = 'array' THEN f.value ELSE '[]' END) e
    WHERE e.type = 'text';
END;
CREATE TRIGGER test_cases_field_values_delete AFTER DELETE ON test_cases WHEN OLD.custom_fields <> '{}' BEGIN
    DELETE FROM case_field_values WHERE case_rowid = OLD.rowid;
END;

-- Full-text search also reads the text of a case's field values (every string: text, textarea, url,
-- date, options) from a new `fields` column of test_cases_fts; FTS5 cannot add a column, so the table
-- and its triggers are those of 0023 again, with `fields` and the custom_fields column added.
DROP TRIGGER test_cases_fts_insert;
DROP TRIGGER test_cases_fts_update;
DROP TRIGGER test_cases_fts_delete;
DROP TABLE test_cases_fts;

CREATE VIRTUAL TABLE test_cases_fts USING fts5 (
    code, title, bdd_content, tags, tickets, fields, facets,
    tokenize = 'porter unicode61',
    prefix = '2 3'
);

INSERT INTO test_cases_fts (rowid, code, title, bdd_content, tags, tickets, fields, facets)
SELECT rowid, code, title, bdd_content,
       (SELECT group_concat(value, ' ') FROM json_each(c.tags)),
       (SELECT group_concat(json_extract(value, '$.key'), ' ') FROM json_each(c.tickets)),
       (SELECT group_concat(atom, ' ') FROM json_tree(c.custom_fields) WHERE type = 'text'),
       'xn' || hex(tenant_id) || '0'
       || CASE WHEN project_id IS NULL THEN '' ELSE ' xj' || hex(tenant_id || ' ' || project_id) || '0' END
       || ' xs' || hex(status) || '0 xp' || hex(priority) || '0 xa' || hex(automation_status) || '0'
       || ' xl' || hex(layer) || '0 xc' || hex(section_id) || '0'
       || coalesce((SELECT ' ' || group_concat('xt' || hex(value) || '0', ' ') FROM json_each(c.tags)), '')
FROM test_cases c;

CREATE TRIGGER test_cases_fts_insert AFTER INSERT ON test_cases BEGIN
    INSERT INTO test_cases_fts (rowid, code, title, bdd_content, tags, tickets, fields, facets)
    VALUES (NEW.rowid, NEW.code, NEW.title, NEW.bdd_content,
            (SELECT group_concat(value, ' ') FROM json_each(NEW.tags)),
            (SELECT group_concat(json_extract(value, '$.key'), ' ') FROM json_each(NEW.tickets)),
            (SELECT group_concat(atom, ' ') FROM json_tree(NEW.custom_fields) WHERE type = 'text'),
            'xn' || hex(NEW.tenant_id) || '0'
            || CASE WHEN NEW.project_id IS NULL THEN '' ELSE ' xj' || hex(NEW.tenant_id || ' ' || NEW.project_id) || '0' END
            || ' xs' || hex(NEW.status) || '0 xp' || hex(NEW.priority) || '0 xa' || hex(NEW.automation_status) || '0'
            || ' xl' || hex(NEW.layer) || '0 xc' || hex(NEW.section_id) || '0'
            || coalesce((SELECT ' ' || group_concat('xt' || hex(value) || '0', ' ') FROM json_each(NEW.tags)), ''));
END;
CREATE TRIGGER test_cases_fts_update AFTER UPDATE OF project_id, code, title, bdd_content, tags, tickets, status,
    priority, layer, automation_status, section_id, custom_fields ON test_cases BEGIN
    DELETE FROM test_cases_fts WHERE rowid = OLD.rowid;
    INSERT INTO test_cases_fts (rowid, code, title, bdd_content, tags, tickets, fields, facets)
    VALUES (NEW.rowid, NEW.code, NEW.title, NEW.bdd_content,
            (SELECT group_concat(value, ' ') FROM json_each(NEW.tags)),
            (SELECT group_concat(json_extract(value, '$.key'), ' ') FROM json_each(NEW.tickets)),
            (SELECT group_concat(atom, ' ') FROM json_tree(NEW.custom_fields) WHERE type = 'text'),
            'xn' || hex(NEW.tenant_id) || '0'
            || CASE WHEN NEW.project_id IS NULL THEN '' ELSE ' xj' || hex(NEW.tenant_id || ' ' || NEW.project_id) || '0' END
            || ' xs' || hex(NEW.status) || '0 xp' || hex(NEW.priority) || '0 xa' || hex(NEW.automation_status) || '0'
            || ' xl' || hex(NEW.layer) || '0 xc' || hex(NEW.section_id) || '0'
            || coalesce((SELECT ' ' || group_concat('xt' || hex(value) || '0', ' ') FROM json_each(NEW.tags)), ''));
END;
CREATE TRIGGER test_cases_fts_delete AFTER DELETE ON test_cases BEGIN
    DELETE FROM test_cases_fts WHERE rowid = OLD.rowid;
END;
