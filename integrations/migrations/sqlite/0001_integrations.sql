-- integrations 0001: per-tenant state of each integration, its sealed
-- credentials, and the integrations' log.
CREATE TABLE integration_states (
    tenant_id TEXT NOT NULL,
    integration_id TEXT NOT NULL,
    is_enabled BOOLEAN NOT NULL,
    api_version TEXT,
    reauth_required BOOLEAN NOT NULL,
    last_health_status TEXT,
    last_health_checked_at TIMESTAMP,
    last_health_latency_ms INTEGER,
    enabled_at TIMESTAMP,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, integration_id)
);

CREATE TABLE integration_credentials (
    tenant_id TEXT NOT NULL,
    integration_id TEXT NOT NULL,
    -- The credentials object as JSON, sealed with the Kit's key.
    sealed TEXT NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, integration_id)
);

CREATE TABLE integration_logs (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    integration_id TEXT NOT NULL,
    run_id TEXT,
    level TEXT NOT NULL,
    message TEXT NOT NULL,
    code TEXT,
    payload TEXT,
    entity_type TEXT,
    entity_id TEXT,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX integration_logs_list_idx ON integration_logs (tenant_id, created_at, id);
CREATE INDEX integration_logs_integration_idx ON integration_logs (tenant_id, integration_id, created_at);
