-- integrations 0004: the log filtered by entity type alone, or by entity
-- id without its type, without reading every entry of the tenant.
--
-- The kept counts gain the entity type as a key column, so that the
-- total of a list filtered by entity type (alone or with integration
-- and level) is a sum of a few count rows; entries of no entity count
-- under the empty type. The counts are rebuilt from the entries.
CREATE TABLE integration_log_counts_by_type (
    tenant_id TEXT NOT NULL,
    integration_id TEXT NOT NULL,
    level TEXT NOT NULL,
    entity_type TEXT NOT NULL,
    slot INTEGER NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, integration_id, level, entity_type, slot)
);
INSERT INTO integration_log_counts_by_type (tenant_id, integration_id, level, entity_type, slot, n)
    SELECT tenant_id, integration_id, level, COALESCE(entity_type, ''), 0, count(*) FROM integration_logs
    GROUP BY tenant_id, integration_id, level, COALESCE(entity_type, '');
DROP TABLE integration_log_counts;
-- A page by entity type, and one by entity id without the type, read
-- an index of their own in order (0003's index by entity type and id
-- serves the two together, its total too).
CREATE INDEX integration_logs_entity_type_idx ON integration_logs (tenant_id, entity_type, created_at, id);
CREATE INDEX integration_logs_entity_id_idx ON integration_logs (tenant_id, entity_id, created_at, id);
