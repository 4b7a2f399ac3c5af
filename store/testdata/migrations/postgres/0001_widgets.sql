-- storetest 0001: a table exercising every column type areas use.
CREATE TABLE widgets (
    tenant_id TEXT NOT NULL,
    id TEXT NOT NULL,
    name TEXT NOT NULL,
    enabled BOOLEAN NOT NULL DEFAULT TRUE,
    data JSONB,
    note TEXT,
    parent_id TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, name),
    CHECK (length(name) > 0),
    FOREIGN KEY (tenant_id, parent_id) REFERENCES widgets (tenant_id, id)
);
