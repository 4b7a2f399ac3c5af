-- webhooks 0001: outbound webhook endpoints.
CREATE TABLE webhooks (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    organization_id TEXT,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    url TEXT NOT NULL,
    subscribed_events TEXT NOT NULL,
    http_method TEXT NOT NULL,
    custom_headers TEXT NOT NULL,
    max_retries INTEGER NOT NULL,
    timeout_ms INTEGER NOT NULL,
    rate_limit_per_minute INTEGER NOT NULL,
    auto_disable_threshold INTEGER NOT NULL,
    is_active BOOLEAN NOT NULL,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    last_success_at TIMESTAMP,
    last_failure_at TIMESTAMP,
    -- The signing secrets, sealed with the Kit's key (internal/secretbox).
    secret TEXT NOT NULL,
    previous_secret TEXT,
    previous_secret_set_at TIMESTAMP,
    previous_secret_expires_at TIMESTAMP,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    deleted_at TIMESTAMP
);
CREATE INDEX webhooks_tenant_idx ON webhooks (tenant_id, created_at) WHERE deleted_at IS NULL;
