-- Chat notifications: a subscription posts either the standard envelope or a chat service's
-- incoming-webhook body (`format`), and may narrow what it is sent (`filters`, a JSON object:
-- only_failures, only_failed_runs, environments). A delivery whose body differs from its event's
-- (a chat message) keeps the exact bytes it sends in `body`, so every retry and redelivery posts
-- and signs the same bytes; NULL means the event's own body.
ALTER TABLE webhook_subscriptions ADD COLUMN format TEXT NOT NULL DEFAULT 'standard';
ALTER TABLE webhook_subscriptions ADD COLUMN filters TEXT NOT NULL DEFAULT '{}';
ALTER TABLE webhook_deliveries ADD COLUMN body BLOB;
