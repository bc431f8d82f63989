-- SQLite 0044: notifications age out, result comments go with their results, and a case version keeps
-- the text of the shared steps it used (issue 26's leftovers).

-- The notifications' retention (tms.notifications.inbox.retention): every notification older than
-- notifications.keep_days, and read ones older than notifications.read_days, removed in batches by age.
CREATE INDEX notifications_age ON notifications (created_at);
CREATE INDEX notifications_read_age ON notifications (created_at) WHERE read_at IS NOT NULL;

-- A result's comments go with the result, however it goes (the retention sweep of old runs or of
-- unlinked results, a run's or a project's deletion, a case taken out of a run), in the same statement.
-- A statement trigger over the deleted rows (a transition table), not a row trigger or a foreign key:
-- PostgreSQL runs those once per deleted result (postgres/0005 keeps the results tables free of them).
CREATE INDEX comments_result ON comments (target_id) WHERE target_kind = 'result';
CREATE FUNCTION comments_results_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM comments c USING gone g WHERE c.target_kind = 'result' AND c.target_id = g.id;
    RETURN NULL;
END $$;
CREATE TRIGGER comments_result_deleted AFTER DELETE ON test_results
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION comments_results_deleted();
CREATE TRIGGER comments_unlinked_result_deleted AFTER DELETE ON unlinked_test_results
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION comments_results_deleted();

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
UPDATE case_versions v SET shared_steps = agg.list
FROM (
    SELECT d.case_id,
           json_agg(json_build_object('name', s.name, 'version', s.version, 'steps', s.steps) ORDER BY s.name)::text
               AS list
    FROM (SELECT DISTINCT case_id, step_id FROM down) d JOIN shared_steps s ON s.id = d.step_id
    GROUP BY d.case_id
) agg, test_cases c
WHERE v.case_id = agg.case_id AND c.id = v.case_id AND v.version = c.version;

-- Everyone a comment's mentions have notified, over all its edits (JSON array of user ids; NULL: its
-- mentions): an edit notifies only people never mentioned in it before, so removing a mention and
-- adding it back does not notify twice.
ALTER TABLE comments ADD COLUMN notified TEXT;
