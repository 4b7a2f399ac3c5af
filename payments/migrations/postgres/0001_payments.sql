-- payments 0001: payment transactions, their refunds, the answers of
-- idempotent operations, and the providers' webhooks (the history).
CREATE TABLE payment_transactions (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    organization_id TEXT,
    payment_id TEXT NOT NULL,
    provider_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    status TEXT NOT NULL,
    gateway_status TEXT NOT NULL,
    -- Amounts are integers in the currency's minor units.
    amount BIGINT NOT NULL,
    captured_amount BIGINT NOT NULL,
    refunded_amount BIGINT NOT NULL,
    currency_code TEXT NOT NULL,
    capture_method TEXT NOT NULL,
    description TEXT NOT NULL,
    metadata JSONB NOT NULL,
    redirect_url TEXT NOT NULL,
    provider_data JSONB,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    CHECK (captured_amount <= amount AND refunded_amount <= captured_amount)
);
CREATE INDEX payment_transactions_list_idx ON payment_transactions (tenant_id, created_at, id);
-- A webhook names its payment by the provider's session id, whichever the
-- tenant.
CREATE INDEX payment_transactions_session_idx ON payment_transactions (provider_key, session_id);

CREATE TABLE payment_refunds (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    transaction_id TEXT NOT NULL REFERENCES payment_transactions (id) ON DELETE CASCADE,
    provider_refund_id TEXT NOT NULL,
    amount BIGINT NOT NULL,
    reason TEXT NOT NULL,
    gateway_status TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX payment_refunds_transaction_idx ON payment_refunds (transaction_id, created_at);

-- An operation with an operationId keeps its answer: the same id again
-- replays it.
CREATE TABLE payment_operations (
    tenant_id TEXT NOT NULL,
    transaction_id TEXT NOT NULL REFERENCES payment_transactions (id) ON DELETE CASCADE,
    operation_id TEXT NOT NULL,
    action TEXT NOT NULL,
    response JSONB NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (transaction_id, operation_id)
);

CREATE TABLE payment_webhooks (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    transaction_id TEXT NOT NULL REFERENCES payment_transactions (id) ON DELETE CASCADE,
    provider_key TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    event_type TEXT NOT NULL,
    event_id TEXT NOT NULL,
    provider_status TEXT NOT NULL,
    amount BIGINT,
    -- mapped_status is the unified status the event reports; outcome what
    -- processing did: '' until processed, then applied or ignored.
    mapped_status TEXT NOT NULL DEFAULT '',
    outcome TEXT NOT NULL DEFAULT '',
    status_before TEXT NOT NULL DEFAULT '',
    status_after TEXT NOT NULL DEFAULT '',
    received_at TIMESTAMPTZ NOT NULL,
    processed_at TIMESTAMPTZ,
    UNIQUE (tenant_id, provider_key, idempotency_key)
);
CREATE INDEX payment_webhooks_transaction_idx ON payment_webhooks (transaction_id, received_at);
