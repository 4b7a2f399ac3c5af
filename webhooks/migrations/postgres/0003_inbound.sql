-- webhooks 0003: inbound webhook receipts. One row per message an
-- endpoint accepted; the key makes a repeated message id a duplicate.
CREATE TABLE webhook_inbound_receipts (
    endpoint_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    tenant_id TEXT,
    organization_id TEXT,
    event_type TEXT NOT NULL,
    payload JSONB NOT NULL,
    received_at TIMESTAMPTZ NOT NULL,
    processed_at TIMESTAMPTZ,
    PRIMARY KEY (endpoint_id, message_id)
);
