-- auth 0001: tenants, organizations, roles with their feature lists, users,
-- API keys (stored as SHA-256 hashes) and password-reset tokens (hashes).
CREATE TABLE auth_tenants (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    is_active BOOLEAN NOT NULL DEFAULT TRUE,
    created_at TIMESTAMP NOT NULL,
    deleted_at TIMESTAMP
);

CREATE TABLE auth_organizations (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES auth_tenants (id),
    name TEXT NOT NULL,
    parent_id TEXT REFERENCES auth_organizations (id),
    is_active BOOLEAN NOT NULL DEFAULT TRUE,
    created_at TIMESTAMP NOT NULL,
    deleted_at TIMESTAMP
);
CREATE INDEX auth_organizations_tenant_idx ON auth_organizations (tenant_id);

CREATE TABLE auth_roles (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES auth_tenants (id),
    name TEXT NOT NULL,
    features TEXT NOT NULL DEFAULT '[]',
    is_super_admin BOOLEAN NOT NULL DEFAULT FALSE,
    organizations TEXT,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    UNIQUE (tenant_id, name)
);

CREATE TABLE auth_users (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES auth_tenants (id),
    organization_id TEXT NOT NULL REFERENCES auth_organizations (id),
    email TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    password_changed_at TIMESTAMP NOT NULL,
    created_at TIMESTAMP NOT NULL,
    deleted_at TIMESTAMP,
    UNIQUE (tenant_id, email)
);
CREATE INDEX auth_users_email_idx ON auth_users (email);

CREATE TABLE auth_user_roles (
    user_id TEXT NOT NULL REFERENCES auth_users (id),
    role_id TEXT NOT NULL REFERENCES auth_roles (id),
    PRIMARY KEY (user_id, role_id)
);

CREATE TABLE auth_api_keys (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES auth_tenants (id),
    organization_id TEXT REFERENCES auth_organizations (id),
    name TEXT NOT NULL,
    description TEXT,
    key_prefix TEXT NOT NULL UNIQUE,
    secret_hash TEXT NOT NULL,
    expires_at TIMESTAMP,
    created_at TIMESTAMP NOT NULL,
    deleted_at TIMESTAMP
);
CREATE INDEX auth_api_keys_tenant_idx ON auth_api_keys (tenant_id, created_at);

CREATE TABLE auth_api_key_roles (
    key_id TEXT NOT NULL REFERENCES auth_api_keys (id),
    role_id TEXT NOT NULL REFERENCES auth_roles (id),
    PRIMARY KEY (key_id, role_id)
);

CREATE TABLE auth_password_resets (
    token_hash TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES auth_users (id),
    expires_at TIMESTAMP NOT NULL,
    used_at TIMESTAMP,
    created_at TIMESTAMP NOT NULL
);
