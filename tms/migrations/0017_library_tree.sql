-- Organising the library: sections (a folder tree per project), case versions, indexed search and tags.

-- A section's place in the tree is kept twice: parent_id (what the API shows) and path, the ids from
-- the root down to it ("/<root>/<child>/<it>/"). A subtree is then one index range
-- (path >= '/a/b/' AND path < '/a/b0'), a move rewrites the paths of the subtree with one UPDATE, and
-- "is the new parent inside the moved section?" is a prefix test.
CREATE TABLE sections (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    project_id  TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    parent_id   TEXT REFERENCES sections (id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    description TEXT,
    position    INTEGER NOT NULL DEFAULT 0,
    path        TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX sections_project_path ON sections (tenant_id, project_id, path);
CREATE INDEX sections_parent ON sections (parent_id);
-- siblings have distinct names, so a path "Parent / Child" (CSV import/export) names one section
CREATE UNIQUE INDEX sections_sibling_name ON sections (tenant_id, project_id, coalesce(parent_id, ''), name);

ALTER TABLE test_cases ADD COLUMN section_id TEXT REFERENCES sections (id) ON DELETE SET NULL;
ALTER TABLE test_cases ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
-- the section filter (one section or the sections of a subtree) and the foreign key's own lookups
CREATE INDEX test_cases_section ON test_cases (section_id);
-- the tree's counts: one grouped pass over this covering index per project
CREATE INDEX test_cases_project_section ON test_cases (tenant_id, project_id, section_id);
-- the list filters, so a filtered page's total is an index count, not a walk over the project's rows
CREATE INDEX test_cases_project_priority ON test_cases (tenant_id, project_id, priority);
CREATE INDEX test_cases_project_automation ON test_cases (tenant_id, project_id, automation_status);
CREATE INDEX test_cases_project_layer ON test_cases (tenant_id, project_id, layer);
-- sorted pages of a project read in index order (entries end with the rowid, the tie-breaker)
CREATE INDEX test_cases_project_title ON test_cases (tenant_id, project_id, title COLLATE NOCASE);
CREATE INDEX test_cases_project_updated ON test_cases (tenant_id, project_id, updated_at);

-- Every state a case has had: version 1 on create, one row per change, with who made it.
CREATE TABLE case_versions (
    tenant_id         TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    case_id           TEXT NOT NULL,
    version           INTEGER NOT NULL,
    code              TEXT NOT NULL,
    title             TEXT NOT NULL,
    bdd_content       TEXT NOT NULL,
    status            TEXT NOT NULL,
    priority          TEXT NOT NULL,
    layer             TEXT,
    is_e2e            INTEGER NOT NULL,
    automation_status TEXT NOT NULL,
    tags              TEXT NOT NULL,
    tickets           TEXT NOT NULL,
    section_id        TEXT,
    project_id        TEXT,
    actor_type        TEXT NOT NULL,
    actor_id          TEXT,
    actor_name        TEXT NOT NULL,
    created_at        TEXT NOT NULL,
    PRIMARY KEY (case_id, version)
) WITHOUT ROWID;

INSERT INTO case_versions
SELECT tenant_id, id, 1, code, title, bdd_content, status, priority, layer, is_e2e, automation_status, tags,
       tickets, NULL, project_id, 'system', NULL, 'system', created_at
FROM test_cases;

-- The case's version a result was written against (null for results written before versions existed).
ALTER TABLE test_results ADD COLUMN case_version INTEGER;

-- Tags as rows, so "any of these tags" is an index lookup instead of parsing every case's JSON.
-- Kept by triggers: every writer of test_cases (API, UI, import, AI drafts) keeps it right.
CREATE TABLE case_tags (
    tenant_id  TEXT NOT NULL,
    tag        TEXT NOT NULL,
    case_rowid INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, tag, case_rowid)
) WITHOUT ROWID;
CREATE INDEX case_tags_case ON case_tags (case_rowid);

INSERT OR IGNORE INTO case_tags SELECT c.tenant_id, j.value, c.rowid FROM test_cases c, json_each(c.tags) j;

CREATE TRIGGER test_cases_tags_insert AFTER INSERT ON test_cases BEGIN
    INSERT OR IGNORE INTO case_tags SELECT NEW.tenant_id, value, NEW.rowid FROM json_each(NEW.tags);
END;
CREATE TRIGGER test_cases_tags_update AFTER UPDATE OF tags ON test_cases BEGIN
    DELETE FROM case_tags WHERE case_rowid = OLD.rowid;
    INSERT OR IGNORE INTO case_tags SELECT NEW.tenant_id, value, NEW.rowid FROM json_each(NEW.tags);
END;
CREATE TRIGGER test_cases_tags_delete AFTER DELETE ON test_cases BEGIN
    DELETE FROM case_tags WHERE case_rowid = OLD.rowid;
END;

-- Full-text search over title, code, Gherkin, tags and ticket keys (q on GET /cases and the cases page).
-- The tenant and project ids are columns too: a search is "tenant:<id> [AND project:<id>] AND words",
-- so the index itself keeps tenants apart, and a search within a project (the common case) is answered
-- by the index alone, page and count. Keyed by the case's rowid (VACUUM keeps rowids); kept by
-- triggers like case_tags.
CREATE VIRTUAL TABLE test_cases_fts USING fts5 (
    tenant, project, code, title, bdd_content, tags, tickets,
    tokenize = 'porter unicode61',
    prefix = '2 3'
);

INSERT INTO test_cases_fts (rowid, tenant, project, code, title, bdd_content, tags, tickets)
SELECT rowid, tenant_id, coalesce(project_id, ''), code, title, bdd_content,
       (SELECT group_concat(value, ' ') FROM json_each(test_cases.tags)),
       (SELECT group_concat(json_extract(value, '$.key'), ' ') FROM json_each(test_cases.tickets))
FROM test_cases;

CREATE TRIGGER test_cases_fts_insert AFTER INSERT ON test_cases BEGIN
    INSERT INTO test_cases_fts (rowid, tenant, project, code, title, bdd_content, tags, tickets)
    VALUES (NEW.rowid, NEW.tenant_id, coalesce(NEW.project_id, ''), NEW.code, NEW.title, NEW.bdd_content,
            (SELECT group_concat(value, ' ') FROM json_each(NEW.tags)),
            (SELECT group_concat(json_extract(value, '$.key'), ' ') FROM json_each(NEW.tickets)));
END;
CREATE TRIGGER test_cases_fts_update AFTER UPDATE OF project_id, code, title, bdd_content, tags, tickets ON test_cases BEGIN
    DELETE FROM test_cases_fts WHERE rowid = OLD.rowid;
    INSERT INTO test_cases_fts (rowid, tenant, project, code, title, bdd_content, tags, tickets)
    VALUES (NEW.rowid, NEW.tenant_id, coalesce(NEW.project_id, ''), NEW.code, NEW.title, NEW.bdd_content,
            (SELECT group_concat(value, ' ') FROM json_each(NEW.tags)),
            (SELECT group_concat(json_extract(value, '$.key'), ' ') FROM json_each(NEW.tickets)));
END;
CREATE TRIGGER test_cases_fts_delete AFTER DELETE ON test_cases BEGIN
    DELETE FROM test_cases_fts WHERE rowid = OLD.rowid;
END;
