-- entities 0002: records of custom entities, all entities in one table.
-- data holds the values by field key (a JSON object). A field marked
-- filterable gets an expression index of its own, made and dropped with
-- its definitions (see filterable.go), so that filters and sorting on it
-- read only the matching part of one tenant's records of one entity.
CREATE TABLE custom_entity_records (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    organization_id TEXT,
    entity_id TEXT NOT NULL,
    data TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    deleted_at TIMESTAMP
);
-- Lists: one tenant's records of one entity in id order (the default; ids are
-- UUIDv7, so that is creation order for ids this service made).
CREATE INDEX custom_entity_records_list_idx ON custom_entity_records (tenant_id, entity_id, id);
