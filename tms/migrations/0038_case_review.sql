-- Issue 26: case review. A case's review (NONE | REQUESTED | APPROVED | CHANGES_REQUESTED) lives on
-- its row beside status, which keeps SPEC's three values; the project's require_review makes
-- approval the only way to READY. review_author_id is who wrote the version under review (the
-- requester, the editor after an approval, the user who saved AI drafts): under require_review they
-- may not approve it themselves. review_comment is the reviewer's last word (required to reject).
ALTER TABLE test_cases ADD COLUMN review_state TEXT NOT NULL DEFAULT 'NONE'
    CHECK (review_state IN ('NONE', 'REQUESTED', 'APPROVED', 'CHANGES_REQUESTED'));
ALTER TABLE test_cases ADD COLUMN reviewer_id TEXT REFERENCES users (id) ON DELETE SET NULL;
ALTER TABLE test_cases ADD COLUMN review_author_id TEXT REFERENCES users (id) ON DELETE SET NULL;
ALTER TABLE test_cases ADD COLUMN review_comment TEXT;
ALTER TABLE test_cases ADD COLUMN review_updated_at TEXT;
-- "waiting for my review": the open requests of one reviewer, newest first
CREATE INDEX test_cases_review_waiting ON test_cases (tenant_id, reviewer_id, review_updated_at)
    WHERE review_state = 'REQUESTED';

ALTER TABLE projects ADD COLUMN require_review INTEGER NOT NULL DEFAULT 0 CHECK (require_review IN (0, 1));
