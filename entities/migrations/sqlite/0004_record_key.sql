-- entities 0004: a record's key is (tenant_id, id), no longer id alone, so
-- that a record id says nothing across tenants: creating a record with an
-- id another tenant's record holds succeeds exactly as with a free id,
-- and every read and write names the tenant (see doc.go, "Record ids").
--
-- SQLite cannot change a table's primary key, so the table is rebuilt:
-- copied into a new table with the new key, the old one dropped (with its
-- indexes), the new one renamed. The list index is made again here; the
-- filterable indexes (one per entity and key listed in
-- custom_entity_filterable_fields, named by a hash SQL cannot compute)
-- are made again by the service before its first list (restoreIndexes in
-- filterable.go). custom_entity_value_counts holds no record ids and no
-- record changes here, so the counts stay as they are; no other table
-- refers to record ids.
CREATE TABLE custom_entity_records_0004 (
    id TEXT NOT NULL,
    tenant_id TEXT NOT NULL,
    organization_id TEXT,
    entity_id TEXT NOT NULL,
    data TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    deleted_at TIMESTAMP,
    PRIMARY KEY (tenant_id, id)
);
INSERT INTO custom_entity_records_0004 (id, tenant_id, organization_id, entity_id, data, created_at, updated_at, deleted_at)
SELECT id, tenant_id, organization_id, entity_id, data, created_at, updated_at, deleted_at FROM custom_entity_records;
DROP TABLE custom_entity_records;
ALTER TABLE custom_entity_records_0004 RENAME TO custom_entity_records;
CREATE INDEX custom_entity_records_list_idx ON custom_entity_records (tenant_id, entity_id, id);
