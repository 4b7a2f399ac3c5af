-- integrations 0005: the processes whose caches of credentials in clear a
-- credentials change waits for (see the package documentation, "Credentials
-- acknowledged"): each Service serving Values on a shared database beats
-- here with the version of the counter integrations.credentials it has
-- applied.
CREATE TABLE integration_servers (
    id TEXT PRIMARY KEY,
    seen BIGINT NOT NULL,
    beat_at TIMESTAMPTZ NOT NULL
);
