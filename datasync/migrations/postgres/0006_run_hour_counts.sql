-- datasync 0006: kept counts of the runs by hour, for the dashboards'
-- data sync widget (Service.Summary).
--
-- The widget read the newest 1,000 runs and counted them in Go: its cost
-- did not follow the window, and its counts covered those runs rather
-- than the window's. This table keeps, per tenant, UTC hour the run was
-- created in (its start in Unix seconds), integration and status, how
-- many runs there are (store.Counts: a key's count is the sum of its
-- slots' rows), written by InsertRun and by UpdateRun when the status
-- changes, in the transaction that writes the run. A window that starts
-- at an hour sums a few rows per integration, status and hour; a window
-- starting inside an hour counts that hour's part from the runs.
CREATE TABLE data_sync_run_hour_counts (
    tenant_id TEXT NOT NULL,
    hour BIGINT NOT NULL,
    integration_id TEXT NOT NULL,
    status TEXT NOT NULL,
    slot INTEGER NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, hour, integration_id, status, slot)
);
-- The counts of the runs stored before this migration.
INSERT INTO data_sync_run_hour_counts (tenant_id, hour, integration_id, status, slot, n)
    SELECT tenant_id, floor(extract(epoch FROM created_at))::bigint / 3600 * 3600, integration_id, status, 0, count(*) FROM data_sync_runs
    GROUP BY 1, 2, 3, 4;
