-- Issue 26: comments on cases and results, @mentions and the notifications inbox.
-- PostgreSQL: postgres/0018_comments.sql.

-- The in-app inbox: one row per notification of one user (mention, assignment, review request,
-- review result). read_at NULL = unread; the bell counts those through notifications_unread.
CREATE TABLE notifications (
    id         TEXT PRIMARY KEY,
    tenant_id  TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('mention', 'assignment', 'review_request', 'review_result')),
    title      TEXT NOT NULL,
    link       TEXT NOT NULL,
    actor_id   TEXT,
    created_at TEXT NOT NULL,
    read_at    TEXT
);
CREATE INDEX notifications_user ON notifications (user_id, created_at, id);
CREATE INDEX notifications_unread ON notifications (user_id) WHERE read_at IS NULL;

-- Each user's "mail me my notifications" switch (mail only when [smtp] host is set).
ALTER TABLE users ADD COLUMN notify_mail INTEGER NOT NULL DEFAULT 1 CHECK (notify_mail IN (0, 1));

-- Comments on a case (target_kind 'case') or a result (target_kind 'result', linked or unlinked).
-- Results keep no foreign keys on PostgreSQL (postgres/0005), so target_id is a plain id; the project's
-- deletion takes its comments. body is the author's Markdown, body_html its sanitised rendering (made
-- once, at write). author_kind 'user' (the web) or 'token' (the API): only the same author edits.
CREATE TABLE comments (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    project_id  TEXT REFERENCES projects (id) ON DELETE CASCADE,   -- NULL: a case outside any project
    target_kind TEXT NOT NULL CHECK (target_kind IN ('case', 'result')),
    target_id   TEXT NOT NULL,
    author_kind TEXT NOT NULL CHECK (author_kind IN ('user', 'token')),
    author_id   TEXT NOT NULL,
    author_name TEXT NOT NULL,
    body        TEXT NOT NULL,
    body_html   TEXT NOT NULL,
    mentions    TEXT NOT NULL DEFAULT '[]',   -- JSON array of the mentioned users' ids
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX comments_target ON comments (tenant_id, target_kind, target_id, created_at, id);
CREATE INDEX comments_project ON comments (project_id);

-- A case's removal (one, in bulk, or with its project) takes its comments, by index, in the same write.
-- (A result's comments go with its project: the results tables stay free of per-row triggers.)
CREATE TRIGGER comments_case_deleted AFTER DELETE ON test_cases BEGIN
    DELETE FROM comments WHERE tenant_id = OLD.tenant_id AND target_kind = 'case' AND target_id = OLD.id;
END;
