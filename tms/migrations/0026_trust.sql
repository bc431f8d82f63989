-- Trust that outlives a change (issue 22): sessions know their user, so a password change, a reset, a
-- deactivation or a demotion can end them, and /account/sessions can list them; the audit log refuses
-- DELETE as it refuses UPDATE. PostgreSQL: postgres/0006_trust.sql (the same columns and indexes).

ALTER TABLE web_sessions ADD COLUMN user_id TEXT;       -- the signed-in user; NULL for an anonymous session
ALTER TABLE web_sessions ADD COLUMN created_at TEXT;    -- ISO 8601 UTC, as every other timestamp
ALTER TABLE web_sessions ADD COLUMN last_seen_at TEXT;  -- written at most every 5 minutes per session
ALTER TABLE web_sessions ADD COLUMN user_agent TEXT;
ALTER TABLE web_sessions ADD COLUMN ip TEXT;
-- sessions stored before this migration: their user is in the session's JSON
UPDATE web_sessions SET user_id = json_extract(CAST(value AS TEXT), '$.user_id')
    WHERE json_valid(CAST(value AS TEXT));
-- a deactivated user's sessions were only refused while deactivated: reactivation revived them
DELETE FROM web_sessions WHERE user_id IN (SELECT id FROM users WHERE active = 0);
CREATE INDEX web_sessions_user ON web_sessions (user_id);

-- The log is append-only for DELETE too; only a tenant's own removal (its cascade runs once the tenant
-- row is gone) takes its entries with it.
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
WHEN EXISTS (SELECT 1 FROM tenants WHERE id = OLD.tenant_id)
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only');
END;
