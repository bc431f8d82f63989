-- Redelivery restarts the retry budget of an existing delivery (same X-Service-Delivery id, so
-- receivers that deduplicate still can): `retry_base` is the number of attempts made before the
-- current cycle, so retry n of the cycle is attempts - retry_base and the attempt log stays whole.
ALTER TABLE webhook_deliveries ADD COLUMN retry_base INTEGER NOT NULL DEFAULT 0;

-- The dispatcher loads the next few due deliveries of each subscription: one short range of this
-- index per subscription, instead of ranking every due delivery when a backlog is large.
CREATE INDEX IF NOT EXISTS webhook_deliveries_subscription_due
    ON webhook_deliveries (subscription_id, next_attempt_at) WHERE status = 'pending';
