-- rules 0009: nothing on SQLite. On PostgreSQL the execution log's
-- input_context becomes json (stored as written) instead of jsonb; SQLite
-- already stores the text as written.
SELECT 1;
