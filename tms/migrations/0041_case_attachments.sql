-- Case attachments (issue 26): specs, mock-ups and data files on the case itself. Their bytes are
-- objects of the attachment store like a result's (attachment_objects, content-addressed per tenant);
-- an object is referenced by the attachments rows AND the case_attachments rows naming it. The rows
-- go with their case (ON DELETE CASCADE); the objects once nothing names them (after the commit of a
-- case's or project's deletion, or by the orphan sweep).
CREATE TABLE case_attachments (
    id         TEXT PRIMARY KEY,
    tenant_id  TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    case_id    TEXT NOT NULL REFERENCES test_cases (id) ON DELETE CASCADE,
    file_name  TEXT NOT NULL,
    mime_type  TEXT NOT NULL,
    size       INTEGER NOT NULL,
    object_key TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX case_attachments_case ON case_attachments (tenant_id, case_id, created_at);
CREATE INDEX case_attachments_object ON case_attachments (object_key);

-- Import previews (issue 28): the uploaded file waits here for its confirmation instead of on one
-- replica's disk, so any replica can confirm a preview another made. Bounded (a user's newest 3, a
-- tenant's newest 10, files of at most 20 MB) and expiring (an hour; swept by created_at).
CREATE TABLE import_previews (
    token      TEXT PRIMARY KEY,
    tenant_id  TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL,
    meta       TEXT NOT NULL,
    content    BLOB NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX import_previews_user ON import_previews (tenant_id, user_id, created_at);
CREATE INDEX import_previews_created ON import_previews (created_at);
