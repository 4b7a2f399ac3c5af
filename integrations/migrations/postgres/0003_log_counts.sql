-- integrations 0003: the log list's totals and pages without reading
-- every entry.
--
-- How many entries each integration has at each level, per tenant,
-- written by every log insert in its own transaction (store.Counts: a
-- key's count is the sum of its slots' rows), so that the total of the
-- unfiltered list and of one filtered by integration and/or level is a
-- sum of a few rows.
CREATE TABLE integration_log_counts (
    tenant_id TEXT NOT NULL,
    integration_id TEXT NOT NULL,
    level TEXT NOT NULL,
    slot INTEGER NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, integration_id, level, slot)
);
-- The counts of the entries written before this migration.
INSERT INTO integration_log_counts (tenant_id, integration_id, level, slot, n)
    SELECT tenant_id, integration_id, level, 0, count(*) FROM integration_logs GROUP BY tenant_id, integration_id, level;
-- The list's pages, newest first (created_at, then id, descending): an
-- integration's, a level's, a run's and an entity's, each read from its
-- index in order rather than sorted; the total of a run's or an entity's
-- entries counts them in its index.
DROP INDEX integration_logs_integration_idx;
CREATE INDEX integration_logs_integration_idx ON integration_logs (tenant_id, integration_id, created_at, id);
CREATE INDEX integration_logs_level_idx ON integration_logs (tenant_id, level, created_at, id);
CREATE INDEX integration_logs_run_idx ON integration_logs (tenant_id, run_id, created_at, id);
CREATE INDEX integration_logs_entity_idx ON integration_logs (tenant_id, entity_type, entity_id, created_at, id);
