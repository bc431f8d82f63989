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

-- What members already deactivated or demoted below admin had issued stops working now, as it would
-- have at their deactivation or demotion (one system entry each in the audit log).
INSERT INTO audit_log (id, tenant_id, actor_type, actor_id, actor_name, action, entity_type, entity_id, changes,
                       created_at)
SELECT 'm0026' || lower(hex(randomblob(10))), k.tenant_id, 'system', NULL, 'system', 'token.revoked', 'token', k.id,
       json_object('name', k.name, 'prefix', k.prefix, 'created_by', k.created_by,
                   'reason', 'its creator was deactivated or is no longer an admin'),
       strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
FROM api_tokens k JOIN users u ON u.id = k.created_by
WHERE k.revoked_at IS NULL AND (u.active = 0 OR u.role NOT IN ('owner', 'admin'));
UPDATE api_tokens SET revoked_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE revoked_at IS NULL AND created_by IN (SELECT id FROM users WHERE active = 0 OR role NOT IN ('owner', 'admin'));
INSERT INTO audit_log (id, tenant_id, actor_type, actor_id, actor_name, action, entity_type, entity_id, changes,
                       created_at)
SELECT 'm0026' || lower(hex(randomblob(10))), l.tenant_id, 'system', NULL, 'system', l.kind || '.revoked', l.kind,
       l.id, json_object('email', l.email, 'issued_by', l.created_by,
                         'reason', 'its issuer was deactivated or is no longer an admin'),
       strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
FROM user_links l JOIN users u ON u.id = l.created_by
WHERE l.used_at IS NULL AND l.revoked_at IS NULL AND l.expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
  AND (u.active = 0 OR u.role NOT IN ('owner', 'admin'));
UPDATE user_links SET revoked_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE used_at IS NULL AND revoked_at IS NULL
  AND created_by IN (SELECT id FROM users WHERE active = 0 OR role NOT IN ('owner', 'admin'));

-- The log is append-only for DELETE too; only a tenant's own removal (its cascade runs once the tenant
-- row is gone) takes its entries with it.
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
WHEN EXISTS (SELECT 1 FROM tenants WHERE id = OLD.tenant_id)
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only');
END;
