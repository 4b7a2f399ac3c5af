-- dashboards 0001: one layout per owner (user or API key) and tenant, and
-- the widget visibility records of roles and users.
CREATE TABLE dashboard_layouts (
    tenant_id TEXT NOT NULL,
    owner_id TEXT NOT NULL,
    widgets TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, owner_id)
);

CREATE TABLE dashboard_role_widgets (
    tenant_id TEXT NOT NULL,
    role_id TEXT NOT NULL,
    widget_ids TEXT NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, role_id)
);

CREATE TABLE dashboard_user_widgets (
    tenant_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    widget_ids TEXT NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, user_id)
);
