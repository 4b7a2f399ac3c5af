-- datasync 0005: a sync's latest completed run (where the next run's
-- cursor starts) read from one index entry instead of every run of the
-- sync sorted by when it ended.
CREATE INDEX data_sync_runs_completed_idx ON data_sync_runs (tenant_id, integration_id, entity_type, direction, updated_at, id)
    WHERE status = 'completed';
