-- entities 0003: which fields are filterable, the counts of their values
-- (see counts.go), and filterable indexes that hold no value too long for
-- an index entry (indexedExpr in filterable.go).

-- The keys of an entity that some definition, at any scope, marks
-- filterable: they have an expression index on custom_entity_records
-- (filterable.go) and counts below.
CREATE TABLE custom_entity_filterable_fields (
    entity_id TEXT NOT NULL,
    field_key TEXT NOT NULL,
    PRIMARY KEY (entity_id, field_key)
);

-- How many live records of a tenant's entity hold a scalar value of a
-- filterable field, by organization ('' for none). A value's count may be
-- spread over several slots; its count is their sum.
CREATE TABLE custom_entity_value_counts (
    tenant_id TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    field_key TEXT NOT NULL,
    value JSONB NOT NULL,
    organization_id TEXT NOT NULL,
    slot SMALLINT NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, entity_id, field_key, value, organization_id, slot)
);

INSERT INTO custom_entity_filterable_fields (entity_id, field_key)
SELECT DISTINCT entity_id, field_key FROM custom_field_definitions
WHERE deleted_at IS NULL AND is_active AND config_json::jsonb -> 'filterable' = 'true'::jsonb;

INSERT INTO custom_entity_value_counts (tenant_id, entity_id, field_key, value, organization_id, slot, n)
SELECT r.tenant_id, r.entity_id, f.field_key, r.data -> f.field_key, COALESCE(r.organization_id, ''), 0, count(*)
FROM custom_entity_records r JOIN custom_entity_filterable_fields f ON f.entity_id = r.entity_id
WHERE r.deleted_at IS NULL AND (jsonb_typeof(r.data -> f.field_key) IN ('number', 'boolean')
    OR jsonb_typeof(r.data -> f.field_key) = 'string' AND octet_length(r.data -> f.field_key #>> '{}') <= 1500)
GROUP BY r.tenant_id, r.entity_id, f.field_key, r.data -> f.field_key, COALESCE(r.organization_id, '');

-- The indexes 0002's code made held the whole value, so a value over
-- about 2,700 bytes failed its write: rebuild them on the bounded
-- expression, under the names indexName gives.
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT indexname FROM pg_indexes
        WHERE schemaname = current_schema() AND tablename = 'custom_entity_records'
        AND indexname LIKE 'custom\_entity\_records\_f\_%' LOOP
        EXECUTE format('DROP INDEX %I', r.indexname);
    END LOOP;
    FOR r IN SELECT entity_id, field_key FROM custom_entity_filterable_fields LOOP
        EXECUTE format('CREATE INDEX %I ON custom_entity_records (tenant_id, '
            || '(CASE WHEN octet_length((data -> %L)::text) <= 1500 THEN (data -> %L) END) NULLS FIRST, id) '
            || 'INCLUDE (organization_id) WHERE entity_id = %L AND deleted_at IS NULL',
            'custom_entity_records_k_' || left(md5(r.entity_id || ':' || r.field_key), 16),
            r.field_key, r.field_key, r.entity_id);
    END LOOP;
END $$;
