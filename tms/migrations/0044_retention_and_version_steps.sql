-- Issue 26's leftovers: notifications age out, result comments go with their results, and a case
-- version keeps the text of the shared steps it used. PostgreSQL: postgres/0025_retention_and_version_steps.sql.

-- The notifications' retention (tms.notifications.inbox.retention): every notification older than
-- notifications.keep_days, and read ones older than notifications.read_days, removed in batches by age.
CREATE INDEX notifications_age ON notifications (created_at);
CREATE INDEX notifications_read_age ON notifications (created_at) WHERE read_at IS NOT NULL;

-- A result's comments go with the result, however it goes (the retention sweep of old runs or of
-- unlinked results, a run's or a project's deletion, a case taken out of a run), in the same statement.
-- SQLite: a row trigger is one probe of the partial index below per deleted result (an empty index
-- for most results: they have no comments); PostgreSQL does it once per statement instead.
CREATE INDEX comments_result ON comments (target_id) WHERE target_kind = 'result';
CREATE TRIGGER comments_result_deleted AFTER DELETE ON test_results BEGIN
    DELETE FROM comments WHERE target_kind = 'result' AND target_id = OLD.id;
END;
CREATE TRIGGER comments_unlinked_result_deleted AFTER DELETE ON unlinked_test_results BEGIN
    DELETE FROM comments WHERE target_kind = 'result' AND target_id = OLD.id;
END;

-- The shared steps a version's text used (nested ones included), as they were when it was recorded:
-- JSON [{"name", "version", "steps"}]. NULL: the text named none, or the version was recorded before
-- this migration. Each case's current version is filled here (every edit of a shared step made a new
-- version of the cases using it, so the shared steps as they are now are those of that version).
ALTER TABLE case_versions ADD COLUMN shared_steps TEXT;
WITH RECURSIVE down (case_id, step_id) AS (
    SELECT case_id, shared_step_id FROM shared_step_uses
    UNION
    SELECT d.case_id, n.shared_step_id FROM shared_step_nesting n JOIN down d ON n.parent_id = d.step_id
)
UPDATE case_versions SET shared_steps = (
    SELECT json_group_array(json_object('name', s.name, 'version', s.version, 'steps', s.steps))
    FROM (SELECT s.name, s.version, s.steps
          FROM (SELECT DISTINCT step_id FROM down WHERE down.case_id = case_versions.case_id) d
          JOIN shared_steps s ON s.id = d.step_id ORDER BY s.name) s
)
WHERE case_id IN (SELECT case_id FROM shared_step_uses)
  AND version = (SELECT c.version FROM test_cases c WHERE c.id = case_versions.case_id);

-- Everyone a comment's mentions have notified, over all its edits (JSON array of user ids; NULL: its
-- mentions): an edit notifies only people never mentioned in it before, so removing a mention and
-- adding it back does not notify twice.
ALTER TABLE comments ADD COLUMN notified TEXT;
