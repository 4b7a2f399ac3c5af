-- entities 0007: live-record indexes in the time orders a list may ask
-- for without a field (recordOrder in sql_records.go): by created_at and
-- by updated_at, then id (the ties' order, in the same direction), over
-- one tenant's live records of one entity. A list of live records (every
-- list but one asking for deleted records too) reads its page from one
-- of them, from either end: page 1 reads 50 entries however many records
-- the entity has, where it used to sort every record of the entity. The
-- default order, by id, reads custom_entity_records_list_idx. Partial on
-- deleted_at IS NULL, the predicate every live list writes as is.
CREATE INDEX custom_entity_records_live_created_idx ON custom_entity_records (tenant_id, entity_id, created_at, id)
    WHERE deleted_at IS NULL;
CREATE INDEX custom_entity_records_live_updated_idx ON custom_entity_records (tenant_id, entity_id, updated_at, id)
    WHERE deleted_at IS NULL;
