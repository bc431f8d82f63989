-- Team work: every web user has a role, a display name and can be deactivated;
-- and the audit log, written in the same transaction as every write it records.

ALTER TABLE users ADD COLUMN role TEXT NOT NULL DEFAULT 'admin'
    CHECK (role IN ('owner', 'admin', 'tester', 'viewer'));
ALTER TABLE users ADD COLUMN name TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1));
-- the first user of each tenant (the one setup or the first create-user made) is its owner
UPDATE users SET role = 'owner' WHERE rowid IN (SELECT MIN(rowid) FROM users GROUP BY tenant_id);

CREATE TABLE audit_log (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    actor_type  TEXT NOT NULL CHECK (actor_type IN ('user', 'token', 'system')),
    actor_id    TEXT,
    actor_name  TEXT NOT NULL,
    action      TEXT NOT NULL,            -- <entity>.<verb>: case.updated, run.created, token.revoked …
    entity_type TEXT NOT NULL,
    entity_id   TEXT,
    changes     TEXT,                     -- JSON: {field: [old, new]} for updates, counts for bulk writes
    created_at  TEXT NOT NULL
);
-- newest first per tenant, and one entity's history
CREATE INDEX audit_log_tenant ON audit_log (tenant_id, created_at, id);
CREATE INDEX audit_log_entity ON audit_log (tenant_id, entity_type, entity_id, created_at);

-- The log is append-only: no interface edits it, and the database refuses it too.
CREATE TRIGGER audit_log_append_only BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only');
END;
