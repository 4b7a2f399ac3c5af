-- store 0003: positions in the event log, for readers that follow it in
-- commit order (the events stream). SQLite runs one write transaction at
-- a time, so an AUTOINCREMENT key (never reused, even after the newest
-- rows are deleted) is already in commit order; tx stays 0 (PostgreSQL
-- keeps the emitting transaction's id there). The table is rebuilt, as
-- SQLite cannot add such a key to an existing one.
CREATE TABLE store_events_positioned (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    type TEXT NOT NULL,
    tenant_id TEXT,
    organization_id TEXT,
    data TEXT NOT NULL,
    occurred_at TIMESTAMP NOT NULL,
    tx INTEGER NOT NULL DEFAULT 0
);
INSERT INTO store_events_positioned (id, type, tenant_id, organization_id, data, occurred_at)
    SELECT id, type, tenant_id, organization_id, data, occurred_at FROM store_events ORDER BY id;
DROP TABLE store_events;
ALTER TABLE store_events_positioned RENAME TO store_events;
CREATE INDEX store_events_tenant_idx ON store_events (tenant_id, id);
CREATE INDEX store_events_occurred_idx ON store_events (occurred_at);
CREATE INDEX store_events_tenant_position_idx ON store_events (tenant_id, tx, seq);
