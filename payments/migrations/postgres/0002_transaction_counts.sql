-- payments 0002: the transactions list's totals and pages without
-- reading every transaction.
--
-- How many transactions each tenant has per organization ('' for none),
-- status and provider, written by every insert and status change in its
-- own transaction (store.Counts: a key's count is the sum of its slots'
-- rows), so that the total of the list, unfiltered or filtered by status
-- and/or provider, is a sum of a few rows.
CREATE TABLE payment_transaction_counts (
    tenant_id TEXT NOT NULL,
    organization_id TEXT NOT NULL,
    status TEXT NOT NULL,
    provider_key TEXT NOT NULL,
    slot INTEGER NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, organization_id, status, provider_key, slot)
);
-- The counts of the transactions stored before this migration.
INSERT INTO payment_transaction_counts (tenant_id, organization_id, status, provider_key, slot, n)
    SELECT tenant_id, COALESCE(organization_id, ''), status, provider_key, 0, count(*) FROM payment_transactions
    GROUP BY tenant_id, COALESCE(organization_id, ''), status, provider_key;
-- The list's pages by status and by provider, newest first, each read
-- from its index in order rather than sorted.
CREATE INDEX payment_transactions_status_idx ON payment_transactions (tenant_id, status, created_at, id);
CREATE INDEX payment_transactions_provider_idx ON payment_transactions (tenant_id, provider_key, created_at, id);
