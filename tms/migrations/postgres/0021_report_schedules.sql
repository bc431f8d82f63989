-- SQLite 0040: scheduled mail reports (issue 27, CONTRACT third wave): a cron expression (UTC), recipients, and a
-- project or a milestone whose report is mailed. SQLite: 0040_report_schedules.sql.
--
-- next_run_at is when the schedule is next due (UTC, tms.ids.iso text). Every replica polls the due
-- rows; one claims a row with UPDATE ... SET next_run_at = <the following time> WHERE id = ? AND
-- next_run_at = <the value it read>, so of several replicas only the one whose UPDATE changed the row
-- mails (tms/reports/schedules/store.py claim). last_sent_at / last_error record the last attempt.
CREATE TABLE report_schedules (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    project_id   TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    kind         TEXT NOT NULL CHECK (kind IN ('milestone', 'project')),
    target_id    TEXT REFERENCES milestones (id) ON DELETE CASCADE,  -- the milestone (kind milestone)
    cron         TEXT NOT NULL,
    recipients   TEXT NOT NULL DEFAULT '[]',     -- JSON array of e-mail addresses
    attachment   TEXT NOT NULL DEFAULT 'pdf' CHECK (attachment IN ('pdf', 'html')),
    next_run_at  TEXT NOT NULL,
    last_sent_at TEXT,
    last_error   TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);
CREATE INDEX report_schedules_project ON report_schedules (tenant_id, project_id, created_at);
CREATE INDEX report_schedules_due ON report_schedules (next_run_at);
CREATE INDEX report_schedules_target ON report_schedules (target_id);
