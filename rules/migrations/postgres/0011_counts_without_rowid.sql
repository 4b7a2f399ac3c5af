-- rules 0011: nothing on PostgreSQL. On SQLite the execution log's kept
-- counts become WITHOUT ROWID tables, stored in their primary key's
-- B-tree; a PostgreSQL table is a heap beside its key's index either way.
SELECT 1;
