-- webhooks 0001: outbound webhook endpoints.
CREATE TABLE webhooks (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    organization_id TEXT,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    url TEXT NOT NULL,
    subscribed_events JSONB NOT NULL,
    http_method TEXT NOT NULL,
    custom_headers JSONB NOT NULL,
    max_retries INTEGER NOT NULL,
    timeout_ms INTEGER NOT NULL,
    rate_limit_per_minute INTEGER NOT NULL,
    auto_disable_threshold INTEGER NOT NULL,
    is_active BOOLEAN NOT NULL,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    last_success_at TIMESTAMPTZ,
    last_failure_at TIMESTAMPTZ,
    -- The signing secrets, sealed with the Kit's key (internal/secretbox).
    secret TEXT NOT NULL,
    previous_secret TEXT,
    previous_secret_set_at TIMESTAMPTZ,
    previous_secret_expires_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    deleted_at TIMESTAMPTZ
);
CREATE INDEX webhooks_tenant_idx ON webhooks (tenant_id, created_at) WHERE deleted_at IS NULL;
