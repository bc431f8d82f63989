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

-- what members already deactivated or demoted below admin had issued stops working now (SQLite 0026)
INSERT INTO audit_log (id, tenant_id, actor_type, actor_id, actor_name, action, entity_type, entity_id, changes,
                       created_at)
SELECT 'm0026' || substr(md5(random()::text || k.id), 1, 20), k.tenant_id, 'system', NULL, 'system',
       'token.revoked', 'token', k.id,
       json_build_object('name', k.name, 'prefix', k.prefix, 'created_by', k.created_by,
                         'reason', 'its creator was deactivated or is no longer an admin')::text,
       to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
FROM api_tokens k JOIN users u ON u.id = k.created_by
WHERE k.revoked_at IS NULL AND (u.active = 0 OR u.role NOT IN ('owner', 'admin'));
UPDATE api_tokens SET revoked_at = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
WHERE revoked_at IS NULL AND created_by IN (SELECT id FROM users WHERE active = 0 OR role NOT IN ('owner', 'admin'));
INSERT INTO audit_log (id, tenant_id, actor_type, actor_id, actor_name, action, entity_type, entity_id, changes,
                       created_at)
SELECT 'm0026' || substr(md5(random()::text || l.id), 1, 20), l.tenant_id, 'system', NULL, 'system',
       l.kind || '.revoked', l.kind, l.id,
       json_build_object('email', l.email, 'issued_by', l.created_by,
                         'reason', 'its issuer was deactivated or is no longer an admin')::text,
       to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
FROM user_links l JOIN users u ON u.id = l.created_by
WHERE l.used_at IS NULL AND l.revoked_at IS NULL
  AND l.expires_at > to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
  AND (u.active = 0 OR u.role NOT IN ('owner', 'admin'));
UPDATE user_links SET revoked_at = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
WHERE used_at IS NULL AND revoked_at IS NULL
  AND created_by IN (SELECT id FROM users WHERE active = 0 OR role NOT IN ('owner', 'admin'));

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
