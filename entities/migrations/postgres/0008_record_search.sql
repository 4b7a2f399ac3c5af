-- entities 0008: an index for the records list's free-text search.
--
-- The search holds when any of a record's values, as text
-- (jsonb_each_text), lower-cased, contains the term (Dialect.
-- JSONValuesContainFold), which no B-tree serves: a term in no record
-- read every record of the tenant's entity. custom_entity_record_text
-- is those same texts, each lower-cased as the predicate does, joined by
-- a newline: a value that contains the term makes the joined text
-- contain it, so "custom_entity_record_text(data) LIKE pattern" holds
-- for every record the search selects (and for a few more, a term
-- spanning two values), and the list adds it to the search as a
-- prefilter; the predicate still decides. A GIN index holds pg_trgm's
-- trigrams of that text beside the tenant and the entity (btree_gin), so
-- another tenant's or entity's records holding the term are not read.
-- pg_trgm and btree_gin ship with PostgreSQL and are trusted since
-- PostgreSQL 13, so a database owner may create them; as in attachments'
-- migration 0004, one not installed is created here (in schema public
-- when there is one, else in the current schema), and when that is
-- refused the migration fails, naming the extension and the remedy.
CREATE FUNCTION custom_entity_record_text(data jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $fn$ SELECT string_agg(lower(value), E'\n') FROM jsonb_each_text(data) $fn$;
DO $$
DECLARE
    ext name;
    ext_schema name;
    trgm_schema name;
BEGIN
    FOREACH ext IN ARRAY ARRAY['pg_trgm', 'btree_gin']::name[] LOOP
        SELECT n.nspname INTO ext_schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
            WHERE e.extname = ext;
        IF ext_schema IS NULL THEN
            SELECT COALESCE((SELECT nspname FROM pg_namespace WHERE nspname = 'public'), current_schema())
                INTO ext_schema;
            BEGIN
                EXECUTE format('CREATE EXTENSION %I SCHEMA %I', ext, ext_schema);
            EXCEPTION
                WHEN unique_violation OR duplicate_object THEN
                    -- Created meanwhile by a concurrent migration.
                    SELECT n.nspname INTO ext_schema FROM pg_extension e
                        JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = ext;
                WHEN OTHERS THEN
                    RAISE EXCEPTION 'entities migration 0008 needs the PostgreSQL extension % (the records search index) and could not create it (%): have a database owner or superuser run CREATE EXTENSION %; in this database, then migrate again', ext, SQLERRM, ext
                        USING HINT = ext || ' ships with PostgreSQL (the contrib package on some distributions) and is trusted since PostgreSQL 13: a database owner may create it.';
            END;
        END IF;
        IF ext = 'pg_trgm' THEN
            trgm_schema := ext_schema;
        END IF;
    END LOOP;
    -- tenant_id's and entity_id's operator class is btree_gin's default
    -- for text, found whatever the extension's schema.
    -- gin_pending_list_limit: new entries wait in a pending list of at
    -- most 1 MB (not the server's 4 MB default) until they are merged
    -- into the index, since every search reads the whole list.
    EXECUTE format('CREATE INDEX custom_entity_records_search_idx ON custom_entity_records '
        || 'USING gin (tenant_id, entity_id, custom_entity_record_text(data) %I.gin_trgm_ops) '
        || 'WITH (gin_pending_list_limit = 1024)', trgm_schema);
END $$;
