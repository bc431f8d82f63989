-- Redelivery restarts the retry budget of an existing delivery (same X-Service-Delivery id, so
-- receivers that deduplicate still can): `retry_base` is the number of attempts made before the
-- current cycle, so retry n of the cycle is attempts - retry_base and the attempt log stays whole.
ALTER TABLE webhook_deliveries ADD COLUMN retry_base INTEGER NOT NULL DEFAULT 0;
