-- toggles 0001: global feature toggles, per-tenant overrides, and a version
-- counter bumped by every change so that other processes notice it cheaply.
CREATE TABLE feature_toggles (
    id TEXT PRIMARY KEY,
    identifier TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    description TEXT,
    category TEXT,
    type TEXT NOT NULL,
    default_value TEXT NOT NULL DEFAULT 'null',
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    deleted_at TIMESTAMPTZ
);

CREATE TABLE feature_toggle_overrides (
    id TEXT PRIMARY KEY,
    toggle_id TEXT NOT NULL REFERENCES feature_toggles (id),
    tenant_id TEXT NOT NULL,
    value TEXT NOT NULL DEFAULT 'null',
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    UNIQUE (toggle_id, tenant_id)
);
CREATE INDEX feature_toggle_overrides_tenant_idx ON feature_toggle_overrides (tenant_id);

CREATE TABLE feature_toggles_version (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    version BIGINT NOT NULL
);
INSERT INTO feature_toggles_version (id, version) VALUES (1, 0);
