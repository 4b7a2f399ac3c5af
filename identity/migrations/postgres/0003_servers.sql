-- auth 0002: the processes whose credential caches a revocation waits for
-- (see the package documentation, "Revocation"): each Service caching
-- credentials on a shared database beats here, with the version of the
-- credentials' counter it has applied.
CREATE TABLE auth_servers (
    id TEXT PRIMARY KEY,
    seen BIGINT NOT NULL,
    beat_at TIMESTAMPTZ NOT NULL
);
