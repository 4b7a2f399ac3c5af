-- webhooks 0004: one delivery queue per webhook. A webhook's deliveries
-- are sent by one drain at a time, in order of their events; this row says
-- who drains it (owner, until lease_until, renewed while it works) and
-- whether work arrived that no drain has looked at yet (queued).
CREATE TABLE webhook_queues (
    webhook_id TEXT PRIMARY KEY REFERENCES webhooks (id),
    tenant_id TEXT NOT NULL,
    owner TEXT,
    lease_until TIMESTAMPTZ,
    queued BOOLEAN NOT NULL DEFAULT FALSE,
    queued_at TIMESTAMPTZ,
    -- When a drain job is scheduled for the earliest future retry.
    wake_at TIMESTAMPTZ
);
-- Deliveries are made in the transaction that emits their event (an emit
-- hook), which runs once per event: the index that kept an event from
-- being delivered twice to a webhook (from a subscriber job run again) has
-- no work left, and each delivery written maintained it.
DROP INDEX webhook_deliveries_event_idx;
-- The deliveries still to send, in the order they are sent.
CREATE INDEX webhook_deliveries_queue_idx ON webhook_deliveries (webhook_id, event_id, id)
    WHERE status IN ('pending', 'sending');
-- The body sent is kept as the bytes signed, as on SQLite: JSONB would
-- store (and resend) PostgreSQL's rendering of it instead, which is why
-- the column is text, and writing it parses nothing.
ALTER TABLE webhook_deliveries ALTER COLUMN payload TYPE TEXT;
