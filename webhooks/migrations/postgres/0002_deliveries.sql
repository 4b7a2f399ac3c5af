-- webhooks 0002: deliveries of events to webhooks.
CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    organization_id TEXT,
    webhook_id TEXT NOT NULL REFERENCES webhooks (id),
    -- The domain event delivered; empty for test sends.
    event_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    -- webhook-id: one per delivery, the same on every attempt.
    message_id TEXT NOT NULL,
    -- The body sent: {type, timestamp, data}.
    payload JSONB NOT NULL,
    status TEXT NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL,
    target_url TEXT NOT NULL,
    response_status INTEGER,
    response_body TEXT,
    response_headers JSONB,
    error_message TEXT,
    duration_ms BIGINT,
    next_retry_at TIMESTAMPTZ,
    enqueued_at TIMESTAMPTZ NOT NULL,
    last_attempt_at TIMESTAMPTZ,
    delivered_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
-- One delivery per webhook and event, however often the event arrives.
CREATE UNIQUE INDEX webhook_deliveries_event_idx ON webhook_deliveries (webhook_id, event_id) WHERE event_id <> '';
CREATE INDEX webhook_deliveries_tenant_idx ON webhook_deliveries (tenant_id, created_at);
