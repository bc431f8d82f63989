-- Filters that combine, answered by one index: the full-text index also holds each case's filter values
-- as "facet" tokens, so q + priority + layer + tags + sections (any mix) is one FTS5 query whose
-- doclists are intersected, instead of one SQL index plus a check of every candidate row.
--
-- A facet token is "x", a letter naming the field, the value's UTF-8 bytes in hex, and a final "0":
-- hex keeps any value (spaces, punctuation, case) one exact token, and a token ending in a digit is
-- never changed by the porter stemmer. The letters: n tenant, j tenant + project (the scope of a search
-- within a project, one token), s status, p priority, a automation status, l layer, c section, t tag
-- (one token per tag). hex(NULL) is '', so a null layer or section is "xl0" or "xc0". The tenant and
-- project columns of 0017 are now these tokens; tms/store/cases.py builds the same tokens for queries.
-- The update trigger now also fires on the filtered fields. SQLite-only (FTS5, hex(), triggers).
DROP TRIGGER test_cases_fts_insert;
DROP TRIGGER test_cases_fts_update;
DROP TRIGGER test_cases_fts_delete;
DROP TABLE test_cases_fts;

CREATE VIRTUAL TABLE test_cases_fts USING fts5 (
    code, title, bdd_content, tags, tickets, facets,
    tokenize = 'porter unicode61',
    prefix = '2 3'
);

INSERT INTO test_cases_fts (rowid, code, title, bdd_content, tags, tickets, facets)
SELECT rowid, code, title, bdd_content,
       (SELECT group_concat(value, ' ') FROM json_each(c.tags)),
       (SELECT group_concat(json_extract(value, '$.key'), ' ') FROM json_each(c.tickets)),
       'xn' || hex(tenant_id) || '0'
       || CASE WHEN project_id IS NULL THEN '' ELSE ' xj' || hex(tenant_id || ' ' || project_id) || '0' END
       || ' xs' || hex(status) || '0 xp' || hex(priority) || '0 xa' || hex(automation_status) || '0'
       || ' xl' || hex(layer) || '0 xc' || hex(section_id) || '0'
       || coalesce((SELECT ' ' || group_concat('xt' || hex(value) || '0', ' ') FROM json_each(c.tags)), '')
FROM test_cases c;

CREATE TRIGGER test_cases_fts_insert AFTER INSERT ON test_cases BEGIN
    INSERT INTO test_cases_fts (rowid, code, title, bdd_content, tags, tickets, facets)
    VALUES (NEW.rowid, NEW.code, NEW.title, NEW.bdd_content,
            (SELECT group_concat(value, ' ') FROM json_each(NEW.tags)),
            (SELECT group_concat(json_extract(value, '$.key'), ' ') FROM json_each(NEW.tickets)),
            'xn' || hex(NEW.tenant_id) || '0'
            || CASE WHEN NEW.project_id IS NULL THEN '' ELSE ' xj' || hex(NEW.tenant_id || ' ' || NEW.project_id) || '0' END
            || ' xs' || hex(NEW.status) || '0 xp' || hex(NEW.priority) || '0 xa' || hex(NEW.automation_status) || '0'
            || ' xl' || hex(NEW.layer) || '0 xc' || hex(NEW.section_id) || '0'
            || coalesce((SELECT ' ' || group_concat('xt' || hex(value) || '0', ' ') FROM json_each(NEW.tags)), ''));
END;
CREATE TRIGGER test_cases_fts_update AFTER UPDATE OF project_id, code, title, bdd_content, tags, tickets, status,
    priority, layer, automation_status, section_id ON test_cases BEGIN
    DELETE FROM test_cases_fts WHERE rowid = OLD.rowid;
    INSERT INTO test_cases_fts (rowid, code, title, bdd_content, tags, tickets, facets)
    VALUES (NEW.rowid, NEW.code, NEW.title, NEW.bdd_content,
            (SELECT group_concat(value, ' ') FROM json_each(NEW.tags)),
            (SELECT group_concat(json_extract(value, '$.key'), ' ') FROM json_each(NEW.tickets)),
            'xn' || hex(NEW.tenant_id) || '0'
            || CASE WHEN NEW.project_id IS NULL THEN '' ELSE ' xj' || hex(NEW.tenant_id || ' ' || NEW.project_id) || '0' END
            || ' xs' || hex(NEW.status) || '0 xp' || hex(NEW.priority) || '0 xa' || hex(NEW.automation_status) || '0'
            || ' xl' || hex(NEW.layer) || '0 xc' || hex(NEW.section_id) || '0'
            || coalesce((SELECT ' ' || group_concat('xt' || hex(value) || '0', ' ') FROM json_each(NEW.tags)), ''));
END;
CREATE TRIGGER test_cases_fts_delete AFTER DELETE ON test_cases BEGIN
    DELETE FROM test_cases_fts WHERE rowid = OLD.rowid;
END;

-- Cases per section, kept by triggers (every writer, the section delete's SET NULL included): the tree's
-- counts are a read of at most one row per section instead of a grouped pass over the project's cases.
-- section_key is the section id, '' for the cases filed in no section. Rows may reach 0 and stay.
CREATE TABLE section_case_counts (
    tenant_id   TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    project_id  TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    section_key TEXT NOT NULL,
    cases       INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, project_id, section_key)
) WITHOUT ROWID;

INSERT INTO section_case_counts (tenant_id, project_id, section_key, cases)
SELECT tenant_id, project_id, coalesce(section_id, ''), COUNT(*) FROM test_cases
WHERE project_id IS NOT NULL GROUP BY tenant_id, project_id, coalesce(section_id, '');

CREATE TRIGGER test_cases_counts_insert AFTER INSERT ON test_cases WHEN NEW.project_id IS NOT NULL BEGIN
    INSERT INTO section_case_counts (tenant_id, project_id, section_key, cases)
    VALUES (NEW.tenant_id, NEW.project_id, coalesce(NEW.section_id, ''), 1)
    ON CONFLICT (tenant_id, project_id, section_key) DO UPDATE SET cases = cases + 1;
END;
CREATE TRIGGER test_cases_counts_delete AFTER DELETE ON test_cases WHEN OLD.project_id IS NOT NULL BEGIN
    UPDATE section_case_counts SET cases = cases - 1
    WHERE tenant_id = OLD.tenant_id AND project_id = OLD.project_id AND section_key = coalesce(OLD.section_id, '');
END;
CREATE TRIGGER test_cases_counts_update AFTER UPDATE OF project_id, section_id ON test_cases
WHEN OLD.project_id IS NOT NEW.project_id OR OLD.section_id IS NOT NEW.section_id BEGIN
    UPDATE section_case_counts SET cases = cases - 1
    WHERE OLD.project_id IS NOT NULL AND tenant_id = OLD.tenant_id AND project_id = OLD.project_id
      AND section_key = coalesce(OLD.section_id, '');
    INSERT INTO section_case_counts (tenant_id, project_id, section_key, cases)
    SELECT NEW.tenant_id, NEW.project_id, coalesce(NEW.section_id, ''), 1 WHERE NEW.project_id IS NOT NULL
    ON CONFLICT (tenant_id, project_id, section_key) DO UPDATE SET cases = cases + 1;
END;

-- A page sorted by priority (highest first by default in the UI) walks this index in order; the
-- expression is the one tms/store/cases.py sorts by (SORTS["priority"]), word for word.
CREATE INDEX test_cases_project_priority_rank ON test_cases (tenant_id, project_id,
    (CASE priority WHEN 'CRITICAL' THEN 4 WHEN 'HIGH' THEN 3 WHEN 'MEDIUM' THEN 2 ELSE 1 END));
