-- auth 0002: the processes whose credential caches a revocation waits for
-- (see the package documentation, "Revocation"). SQLite's database belongs
-- to one process, which has nothing to wait for: the table stays empty.
CREATE TABLE auth_servers (
    id TEXT PRIMARY KEY,
    seen INTEGER NOT NULL,
    beat_at TEXT NOT NULL
);
