-- entities 0003: which fields are filterable, and the counts of their
-- values (see counts.go).

-- The keys of an entity that some definition, at any scope, marks
-- filterable: they have an expression index on custom_entity_records
-- (filterable.go) and counts below.
CREATE TABLE custom_entity_filterable_fields (
    entity_id TEXT NOT NULL,
    field_key TEXT NOT NULL,
    PRIMARY KEY (entity_id, field_key)
) WITHOUT ROWID;

-- How many live records of a tenant's entity hold a scalar value of a
-- filterable field, by organization ('' for none). value is declared BLOB
-- so that it keeps what json_extract gives (text, integer, real) without
-- conversion, comparing as the filterable indexes do. A value's count may
-- be spread over several slots; its count is their sum.
CREATE TABLE custom_entity_value_counts (
    tenant_id TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    field_key TEXT NOT NULL,
    value BLOB NOT NULL,
    organization_id TEXT NOT NULL,
    slot INTEGER NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, entity_id, field_key, value, organization_id, slot)
) WITHOUT ROWID;

INSERT INTO custom_entity_filterable_fields (entity_id, field_key)
SELECT DISTINCT entity_id, field_key FROM custom_field_definitions
WHERE deleted_at IS NULL AND is_active AND json_type(config_json, '$.filterable') = 'true';

INSERT INTO custom_entity_value_counts (tenant_id, entity_id, field_key, value, organization_id, slot, n)
SELECT r.tenant_id, r.entity_id, f.field_key, json_extract(r.data, '$.' || f.field_key), COALESCE(r.organization_id, ''), 0, count(*)
FROM custom_entity_records r JOIN custom_entity_filterable_fields f ON f.entity_id = r.entity_id
WHERE r.deleted_at IS NULL AND (json_type(r.data, '$.' || f.field_key) IN ('integer', 'real', 'true', 'false')
    OR json_type(r.data, '$.' || f.field_key) = 'text' AND length(CAST(json_extract(r.data, '$.' || f.field_key) AS BLOB)) <= 1500)
GROUP BY r.tenant_id, r.entity_id, f.field_key, json_extract(r.data, '$.' || f.field_key), COALESCE(r.organization_id, '');
