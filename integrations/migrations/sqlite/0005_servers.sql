-- integrations 0005: the processes whose caches of credentials in clear a
-- credentials change waits for (see the package documentation, "Credentials
-- acknowledged"). SQLite's database belongs to one process, which has
-- nothing to wait for: the table stays empty.
CREATE TABLE integration_servers (
    id TEXT PRIMARY KEY,
    seen INTEGER NOT NULL,
    beat_at TEXT NOT NULL
);
