-- Attachments on object storage (issue 28). An attachment's bytes are an object in the configured
-- store (a local folder or an S3 bucket) under a content-addressed key, <tenant_id>/<sha256>: the
-- attachments of one tenant that hold identical bytes share one object. attachment_objects has one
-- row per stored object; its references are the attachments rows naming it (attachments.object_key),
-- counted through attachments_object, so an object leaves the store only when no attachment names it.
-- Files stored before this migration keep their random name as their key (sha256 NULL until
-- `tms admin attachments migrate` has read them).
ALTER TABLE attachments ADD COLUMN object_key TEXT;
UPDATE attachments SET object_key = storage_name;
CREATE INDEX attachments_object ON attachments (object_key);

CREATE TABLE attachment_objects (
    object_key    TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    sha256        TEXT,
    size          INTEGER NOT NULL,
    -- an upload is publishing this key: it is not collected before this time, even unreferenced
    claimed_until TEXT,
    -- the collector is deleting the object: an upload of the same bytes waits until the row is gone
    deleting      INTEGER NOT NULL DEFAULT 0,
    created_at    TEXT NOT NULL
);
CREATE INDEX attachment_objects_tenant ON attachment_objects (tenant_id);
INSERT INTO attachment_objects (object_key, tenant_id, sha256, size, created_at)
SELECT storage_name, tenant_id, NULL, size, MIN(created_at) FROM attachments GROUP BY storage_name, tenant_id, size;

-- `tms admin attachments migrate --to s3|local`: each object copied to the other store and verified
-- (size and SHA-256 read back), so an interrupted migration resumes where it stopped.
CREATE TABLE attachment_copies (
    target      TEXT NOT NULL,
    object_key  TEXT NOT NULL REFERENCES attachment_objects (object_key) ON DELETE CASCADE,
    sha256      TEXT NOT NULL,
    size        INTEGER NOT NULL,
    verified_at TEXT NOT NULL,
    PRIMARY KEY (target, object_key)
);
CREATE INDEX attachment_copies_object ON attachment_copies (object_key);
