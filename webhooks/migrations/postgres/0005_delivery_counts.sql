-- webhooks 0005: the deliveries list's totals and pages without reading
-- every delivery.
--
-- How many deliveries each webhook has, kept as insert-only delta rows:
-- every transaction that writes deliveries adds one row per webhook it
-- wrote to (+n; a removal would add -n), so concurrent writers never wait
-- on a shared counter row. A webhook's count is the sum of its rows; the
-- periodic sweep folds each webhook's rows into one, so they stay few.
CREATE TABLE webhook_delivery_counts (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    webhook_id TEXT NOT NULL,
    delta BIGINT NOT NULL
);
CREATE INDEX webhook_delivery_counts_webhook_idx ON webhook_delivery_counts (tenant_id, webhook_id, delta);
-- The counts of the deliveries written before this migration.
INSERT INTO webhook_delivery_counts (id, tenant_id, webhook_id, delta)
    SELECT webhook_id, tenant_id, webhook_id, count(*) FROM webhook_deliveries GROUP BY tenant_id, webhook_id;
-- The list's pages, newest first (created_at, then id, descending):
-- a tenant's, a webhook's, and those of one status, each read from its
-- index in order rather than sorted.
DROP INDEX webhook_deliveries_tenant_idx;
CREATE INDEX webhook_deliveries_tenant_idx ON webhook_deliveries (tenant_id, created_at, id);
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (tenant_id, webhook_id, created_at, id);
CREATE INDEX webhook_deliveries_status_idx ON webhook_deliveries (tenant_id, status, created_at, id);
