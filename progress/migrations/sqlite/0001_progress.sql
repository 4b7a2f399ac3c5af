-- progress 0001: long-running jobs and their progress, per tenant (and
-- organization).
CREATE TABLE progress_jobs (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    organization_id TEXT,
    job_type TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    status TEXT NOT NULL,
    processed_count INTEGER NOT NULL,
    -- NULL: the total is unknown.
    total_count INTEGER,
    progress_percent INTEGER NOT NULL,
    eta_seconds INTEGER,
    cancellable BOOLEAN NOT NULL,
    cancel_requested BOOLEAN NOT NULL,
    meta TEXT NOT NULL,
    started_at TIMESTAMP,
    finished_at TIMESTAMP,
    heartbeat_at TIMESTAMP NOT NULL,
    error_message TEXT,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
-- Active jobs (pending; running with a fresh heartbeat) and stale ones
-- (running with an old heartbeat).
CREATE INDEX progress_jobs_status_idx ON progress_jobs (tenant_id, status, heartbeat_at);
-- Recently finished jobs.
CREATE INDEX progress_jobs_finished_idx ON progress_jobs (tenant_id, finished_at);
