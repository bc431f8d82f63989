-- SQLite 0026: sessions know their user (ended on a password change, a reset, a deactivation or a
-- demotion; listed at /account/sessions), and the audit log refuses DELETE as it refuses UPDATE.

ALTER TABLE web_sessions ADD COLUMN user_id TEXT;
ALTER TABLE web_sessions ADD COLUMN created_at TEXT;
ALTER TABLE web_sessions ADD COLUMN last_seen_at TEXT;
ALTER TABLE web_sessions ADD COLUMN user_agent TEXT;
ALTER TABLE web_sessions ADD COLUMN ip TEXT;
UPDATE web_sessions SET user_id = substring(convert_from(value, 'UTF8') from '"user_id":\s*"([^"]+)"');
DELETE FROM web_sessions WHERE user_id IN (SELECT id FROM users WHERE active = 0);
CREATE INDEX web_sessions_user ON web_sessions (user_id);

-- a tenant's removal still takes its entries with it: its cascade runs after the tenant row is gone
CREATE FUNCTION audit_log_no_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM tenants WHERE id = OLD.tenant_id) THEN
        RAISE EXCEPTION 'the audit log is append-only';
    END IF;
    RETURN OLD;
END $$;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_no_delete();
CREATE FUNCTION audit_log_no_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only';
END $$;
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_no_truncate();
