-- entities 0006: live-record counts. Every live record counts once under
-- the field key '' (value true), by tenant, entity and organization, so
-- that an unfiltered list's exact total is a sum of a few rows
-- (sql_counts.go, liveKey). Written in the transaction of every record
-- write from now on; here counted from the records already stored
-- (replacing any live counts already written).
DELETE FROM custom_entity_value_counts WHERE field_key = '';
INSERT INTO custom_entity_value_counts (tenant_id, entity_id, field_key, value, organization_id, slot, n)
SELECT tenant_id, entity_id, '', 1, COALESCE(organization_id, ''), 0, count(*)
FROM custom_entity_records
WHERE deleted_at IS NULL
GROUP BY tenant_id, entity_id, COALESCE(organization_id, '');
