-- attachments 0004: an index for the library's file-name search.
--
-- The search is lower(file_name) LIKE '%term%', which no B-tree serves:
-- a rare term read every name of the tenant. pg_trgm's GIN index on
-- exactly that expression serves it (LIKE with a term of three
-- characters or more: the rows holding the term's trigrams, each
-- rechecked). pg_trgm ships with PostgreSQL and is trusted since
-- PostgreSQL 13, so a database owner may create it. Decision: when it
-- is not installed this migration creates it (in schema public when
-- there is one, else in the current schema), and when that is refused
-- the migration fails, naming the extension and what to do, rather than
-- leaving every search to read the whole table unnoticed. An extension
-- already installed, in any schema, is used where it is.
DO $$
DECLARE
    ext_schema name;
BEGIN
    SELECT n.nspname INTO ext_schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
        WHERE e.extname = 'pg_trgm';
    IF ext_schema IS NULL THEN
        SELECT COALESCE((SELECT nspname FROM pg_namespace WHERE nspname = 'public'), current_schema())
            INTO ext_schema;
        BEGIN
            EXECUTE format('CREATE EXTENSION pg_trgm SCHEMA %I', ext_schema);
        EXCEPTION
            WHEN unique_violation OR duplicate_object THEN
                -- Created meanwhile by a concurrent migration.
                SELECT n.nspname INTO ext_schema FROM pg_extension e
                    JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
            WHEN OTHERS THEN
                RAISE EXCEPTION 'attachments migration 0004 needs the PostgreSQL extension pg_trgm (the file-name search index) and could not create it (%): have a database owner or superuser run CREATE EXTENSION pg_trgm; in this database, then migrate again', SQLERRM
                    USING HINT = 'pg_trgm ships with PostgreSQL (the contrib package on some distributions) and is trusted since PostgreSQL 13: a database owner may create it.';
        END;
    END IF;
    EXECUTE format('CREATE INDEX attachments_name_search_idx ON attachments USING gin (lower(file_name) %I.gin_trgm_ops)',
        ext_schema);
END $$;
