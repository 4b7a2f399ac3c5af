-- store 0001: the domain event log. Events are written in the transaction
-- that caused them; delivery to subscribers is done by the job engine.
CREATE TABLE store_events (
    id TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    tenant_id TEXT,
    organization_id TEXT,
    data TEXT NOT NULL,
    occurred_at TIMESTAMP NOT NULL
);
CREATE INDEX store_events_tenant_idx ON store_events (tenant_id, id);
CREATE INDEX store_events_occurred_idx ON store_events (occurred_at);
