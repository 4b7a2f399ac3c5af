-- attachments 0004: an index for the library's file-name search.
--
-- The search is lower(file_name) LIKE '%term%' within a tenant, which no
-- B-tree serves: a rare term read every name of the tenant. A GIN index
-- on (tenant_id, lower(file_name)) serves it: pg_trgm's trigrams of the
-- name (LIKE with a term of three characters or more: the rows holding
-- the term's trigrams, each rechecked) and, through btree_gin, the
-- tenant, so a term common in another tenant's names does not fill the
-- search's bitmap with that tenant's rows. pg_trgm and btree_gin ship
-- with PostgreSQL and are trusted since PostgreSQL 13, so a database
-- owner may create them. Decision: an extension that is not installed
-- is created by this migration (in schema public when there is one, else
-- in the current schema), and when that is refused the migration fails,
-- naming the extension and what to do, rather than leaving every search
-- to read the whole table unnoticed. An extension already installed, in
-- any schema, is used where it is.
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
                    RAISE EXCEPTION 'attachments migration 0004 needs the PostgreSQL extension % (the file-name search index) and could not create it (%): have a database owner or superuser run CREATE EXTENSION %; in this database, then migrate again', ext, SQLERRM, ext
                        USING HINT = ext || ' ships with PostgreSQL (the contrib package on some distributions) and is trusted since PostgreSQL 13: a database owner may create it.';
            END;
        END IF;
        IF ext = 'pg_trgm' THEN
            trgm_schema := ext_schema;
        END IF;
    END LOOP;
    -- tenant_id's operator class is btree_gin's default for text, found
    -- whatever the extension's schema.
    EXECUTE format('CREATE INDEX attachments_name_search_idx ON attachments USING gin (tenant_id, lower(file_name) %I.gin_trgm_ops)',
        trgm_schema);
END $$;
