-- datasync 0001: sync runs. At most one pending or running run per
-- tenant, integration, entity type and direction (the partial unique
-- index), so that two processes cannot start two.
CREATE TABLE data_sync_runs (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    organization_id TEXT,
    integration_id TEXT NOT NULL,
    entity_type TEXT NOT NULL,
    direction TEXT NOT NULL,
    status TEXT NOT NULL,
    cursor TEXT NOT NULL,
    full_sync BOOLEAN NOT NULL,
    batch_size INTEGER NOT NULL,
    created_count INTEGER NOT NULL,
    updated_count INTEGER NOT NULL,
    skipped_count INTEGER NOT NULL,
    failed_count INTEGER NOT NULL,
    batches_completed INTEGER NOT NULL,
    last_error TEXT,
    progress_job_id TEXT,
    triggered_by TEXT,
    retry_of TEXT,
    cancel_requested BOOLEAN NOT NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX data_sync_runs_active_idx ON data_sync_runs (tenant_id, integration_id, entity_type, direction)
    WHERE status IN ('pending', 'running');
CREATE INDEX data_sync_runs_list_idx ON data_sync_runs (tenant_id, created_at, id);
