-- rules 0007: the execution log's rules column compressed with lz4.
--
-- An execution of ten rules writes about 3 KB of rules JSON, more than
-- the 2 KB above which PostgreSQL compresses a row's largest values; its
-- default compression, pglz, costs the server about twice what lz4 does
-- on such a value, for the same size (BENCHMARKS.md, "Business rules").
-- Rows written before keep their compression; both read the same. A
-- server built without lz4 (or older than PostgreSQL 14) keeps pglz.
DO $$
BEGIN
    EXECUTE 'ALTER TABLE business_rule_executions ALTER COLUMN rules SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR syntax_error THEN
    NULL;
END $$;
