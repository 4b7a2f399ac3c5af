-- payments 0004: nothing changes on SQLite. The PostgreSQL migration of
-- this version writes the summary counts of inserted transactions once
-- per INSERT statement (a statement trigger over its transition table),
-- which SQLite has no form of; its row trigger (0003) stays, and costs
-- no dead row versions here (SQLite updates a row in place).
SELECT 1;
