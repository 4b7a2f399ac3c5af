-- entities 0004: a record's key is (tenant_id, id), no longer id alone, so
-- that a record id says nothing across tenants: creating a record with an
-- id another tenant's record holds succeeds exactly as with a free id,
-- and every read and write names the tenant (see doc.go, "Record ids").
--
-- One statement swaps the key in place; the list index and the filterable
-- indexes stay. custom_entity_value_counts holds no record ids and no
-- record changes here, so the counts stay as they are; no other table
-- refers to record ids.
ALTER TABLE custom_entity_records
    DROP CONSTRAINT custom_entity_records_pkey,
    ADD CONSTRAINT custom_entity_records_pkey PRIMARY KEY (tenant_id, id);
