-- Webhook subscriptions and one delivery row per (event, subscription), with an attempt log.

CREATE TABLE webhook_subscriptions (
    id         TEXT PRIMARY KEY,
    tenant_id  TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    url        TEXT NOT NULL,
    events     TEXT NOT NULL,            -- JSON array of event names
    secret     TEXT,                     -- needed in clear to sign; never returned by the API
    active     INTEGER NOT NULL DEFAULT 1,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX webhook_subscriptions_tenant ON webhook_subscriptions (tenant_id, created_at);

CREATE TABLE webhook_deliveries (
    id               TEXT PRIMARY KEY,   -- the X-Service-Delivery id, the same on every retry
    tenant_id        TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    subscription_id  TEXT NOT NULL REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
    event_id         TEXT NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    event            TEXT NOT NULL,
    status           TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    last_status_code INTEGER,
    last_error       TEXT,
    next_attempt_at  TEXT,
    created_at       TEXT NOT NULL,
    delivered_at     TEXT,
    UNIQUE (event_id, subscription_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_subscription ON webhook_deliveries (tenant_id, subscription_id, created_at);

CREATE TABLE webhook_attempts (
    id              INTEGER PRIMARY KEY,
    delivery_id     TEXT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    attempt         INTEGER NOT NULL,
    started_at      TEXT NOT NULL,
    duration_ms     INTEGER,
    status_code     INTEGER,
    error           TEXT
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, attempt);
