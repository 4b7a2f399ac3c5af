-- entities 0008: an index for the records list's free-text search.
--
-- The search holds when any of a record's values, as text (json_each;
-- booleans as true and false), folded by tk_fold (the store's Unicode
-- lower-casing), contains the term (Dialect.JSONValuesContainFold),
-- which no B-tree serves: a term in no record read every record of the
-- tenant's entity. record_search holds, for every record, those same
-- folded texts joined by a newline in an FTS5 index of their trigrams
-- (contentless: the index only; case_sensitive 1, as the text is folded
-- already): a value that contains the term makes the joined text contain
-- it, so the records whose text holds the term include every record the
-- search selects; the search's own predicate still decides. Each record
-- is indexed under a key of its own: record_search_keys gives each
-- (tenant, record id) an INTEGER PRIMARY KEY, which VACUUM, a dump and
-- restore or a rebuild of the table keep, where the records table's
-- rowid (its primary key is TEXT) may be renumbered. The triggers below
-- keep both in the transaction of every insert, change of the values and
-- delete. A soft-deleted record stays indexed (a list may ask for
-- deleted records too); the predicate drops it from the others.
CREATE TABLE record_search_keys (
    search_key INTEGER PRIMARY KEY,
    record_tenant_id TEXT NOT NULL,
    record_id TEXT NOT NULL,
    UNIQUE (record_tenant_id, record_id)
);
CREATE VIRTUAL TABLE record_search USING fts5(folded_values, content='', contentless_delete=1,
    tokenize='trigram case_sensitive 1');
INSERT INTO record_search_keys (record_tenant_id, record_id) SELECT tenant_id, id FROM custom_entity_records;
INSERT INTO record_search (rowid, folded_values)
    SELECT k.search_key, (SELECT group_concat(tk_fold(CASE v.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false'
        ELSE v.value END), char(10)) FROM json_each(r.data) v)
    FROM record_search_keys k JOIN custom_entity_records r ON r.tenant_id = k.record_tenant_id AND r.id = k.record_id;
CREATE TRIGGER record_search_insert AFTER INSERT ON custom_entity_records BEGIN
    INSERT INTO record_search_keys (record_tenant_id, record_id) VALUES (new.tenant_id, new.id);
    INSERT INTO record_search (rowid, folded_values)
        SELECT search_key, (SELECT group_concat(tk_fold(CASE v.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false'
            ELSE v.value END), char(10)) FROM json_each(new.data) v)
        FROM record_search_keys WHERE record_tenant_id = new.tenant_id AND record_id = new.id;
END;
CREATE TRIGGER record_search_update AFTER UPDATE OF data ON custom_entity_records
    WHEN old.data IS NOT new.data BEGIN
    DELETE FROM record_search WHERE rowid = (SELECT search_key FROM record_search_keys
        WHERE record_tenant_id = old.tenant_id AND record_id = old.id);
    INSERT INTO record_search (rowid, folded_values)
        SELECT search_key, (SELECT group_concat(tk_fold(CASE v.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false'
            ELSE v.value END), char(10)) FROM json_each(new.data) v)
        FROM record_search_keys WHERE record_tenant_id = new.tenant_id AND record_id = new.id;
END;
CREATE TRIGGER record_search_delete AFTER DELETE ON custom_entity_records BEGIN
    DELETE FROM record_search WHERE rowid = (SELECT search_key FROM record_search_keys
        WHERE record_tenant_id = old.tenant_id AND record_id = old.id);
    DELETE FROM record_search_keys WHERE record_tenant_id = old.tenant_id AND record_id = old.id;
END;
