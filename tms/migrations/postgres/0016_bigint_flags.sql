-- PostgreSQL only: tenant_two_factor.required (postgres/0008) and attachment_objects.deleting
-- (postgres/0012) were 32-bit INTEGERs; SQLite's integers are 64-bit and the other schemas' flags are
-- BIGINT. Found by tests/test_schema_agreement.py. The values are kept.
ALTER TABLE tenant_two_factor ALTER COLUMN required TYPE BIGINT;
ALTER TABLE attachment_objects ALTER COLUMN deleting TYPE BIGINT;
