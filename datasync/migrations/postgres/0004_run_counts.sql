-- datasync 0004: the runs list's totals and pages without reading every
-- run.
--
-- How many runs each tenant has per integration, entity type, direction
-- and status, written by every insert and status change in its own
-- transaction (store.Counts: a key's count is the sum of its slots'
-- rows), so that the total of the list, unfiltered or filtered by any of
-- them, is a sum of a few rows.
CREATE TABLE data_sync_run_counts (
    tenant_id TEXT NOT NULL,
    integration_id TEXT NOT NULL,
    entity_type TEXT NOT NULL,
    direction TEXT NOT NULL,
    status TEXT NOT NULL,
    slot INTEGER NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, integration_id, entity_type, direction, status, slot)
);
-- The counts of the runs stored before this migration.
INSERT INTO data_sync_run_counts (tenant_id, integration_id, entity_type, direction, status, slot, n)
    SELECT tenant_id, integration_id, entity_type, direction, status, 0, count(*) FROM data_sync_runs
    GROUP BY tenant_id, integration_id, entity_type, direction, status;
-- The list's pages, newest first: by status, by integration and by one
-- sync (integration, entity type and direction), each read from its
-- index in order rather than sorted.
CREATE INDEX data_sync_runs_status_idx ON data_sync_runs (tenant_id, status, created_at, id);
CREATE INDEX data_sync_runs_integration_idx ON data_sync_runs (tenant_id, integration_id, created_at, id);
CREATE INDEX data_sync_runs_sync_idx ON data_sync_runs (tenant_id, integration_id, entity_type, direction, created_at, id);
