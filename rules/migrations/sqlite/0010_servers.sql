-- rules 0010: the processes whose cached execution plans a change to
-- rules, sets or members waits for (see the package documentation,
-- "Cached plans"). SQLite's database belongs to one process, which has
-- nothing to wait for: the table stays empty.
CREATE TABLE business_rule_servers (
    id TEXT PRIMARY KEY,
    seen INTEGER NOT NULL,
    beat_at TEXT NOT NULL
);
