-- rules 0007: nothing on SQLite. On PostgreSQL the execution log's rules
-- column is compressed with lz4 rather than pglz; SQLite stores values
-- as written.
SELECT 1;
