-- entities 0001: custom entities, custom field definitions across scopes,
-- per-entity field settings, and the definitions' version counter.

-- A custom entity of a tenant (organization_id NULL) or of one of its
-- organizations. Deleting one sets deleted_at; its records stay.
CREATE TABLE custom_entities (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    organization_id TEXT,
    entity_id TEXT NOT NULL,
    label TEXT NOT NULL,
    description TEXT,
    label_field TEXT,
    default_editor TEXT,
    show_in_sidebar BOOLEAN NOT NULL DEFAULT FALSE,
    is_active BOOLEAN NOT NULL DEFAULT TRUE,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    deleted_at TIMESTAMPTZ
);
-- One live entity per scope and id.
CREATE UNIQUE INDEX custom_entities_scope_idx ON custom_entities (tenant_id, COALESCE(organization_id, ''), entity_id)
    WHERE deleted_at IS NULL;

-- A field definition at one scope: global (tenant_id NULL), a tenant's
-- (organization_id NULL) or an organization's. One row per scope, entity
-- and key, kept when the key is deleted (deleted_at set: a tombstone that
-- hides the key in that scope). tombstone_only marks a row made by
-- deleting a key defined only in a wider scope.
CREATE TABLE custom_field_definitions (
    id TEXT PRIMARY KEY,
    tenant_id TEXT,
    organization_id TEXT,
    entity_id TEXT NOT NULL,
    field_key TEXT NOT NULL,
    kind TEXT NOT NULL,
    config_json TEXT NOT NULL,
    is_active BOOLEAN NOT NULL DEFAULT TRUE,
    tombstone_only BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    deleted_at TIMESTAMPTZ
);
CREATE UNIQUE INDEX custom_field_definitions_scope_idx
    ON custom_field_definitions (COALESCE(tenant_id, ''), COALESCE(organization_id, ''), entity_id, field_key);
CREATE INDEX custom_field_definitions_entity_idx ON custom_field_definitions (entity_id, tenant_id);

-- Field sets and singleFieldsetPerRecord of an entity at one scope (set by
-- a batch upsert).
CREATE TABLE custom_field_settings (
    tenant_id TEXT,
    organization_id TEXT,
    entity_id TEXT NOT NULL,
    fieldsets TEXT NOT NULL,
    single_fieldset_per_record BOOLEAN NOT NULL DEFAULT FALSE,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX custom_field_settings_scope_idx
    ON custom_field_settings (COALESCE(tenant_id, ''), COALESCE(organization_id, ''), entity_id);

-- Bumped by every change to definitions or settings: caches of resolved
-- definitions (in every process) compare it.
CREATE TABLE custom_field_version (
    id INTEGER PRIMARY KEY,
    version BIGINT NOT NULL
);
INSERT INTO custom_field_version (id, version) VALUES (1, 0);
