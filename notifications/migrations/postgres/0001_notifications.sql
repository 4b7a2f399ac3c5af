-- notifications 0001: each user's inbox, per tenant. recipient is a user
-- id, or "api_key:<id>" for an API key's inbox.
CREATE TABLE notifications (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    recipient TEXT NOT NULL,
    notification_type TEXT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    severity TEXT NOT NULL,
    link TEXT NOT NULL,
    -- NULL: not from a source that may deliver twice. Else one
    -- notification per tenant, recipient and key (a redelivered event
    -- adds nothing).
    dedup_key TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    -- NULL: unread.
    read_at TIMESTAMPTZ
);
-- The inbox, newest first.
CREATE INDEX notifications_inbox_idx ON notifications (tenant_id, recipient, created_at, id);
CREATE UNIQUE INDEX notifications_dedup_idx ON notifications (tenant_id, recipient, dedup_key);
