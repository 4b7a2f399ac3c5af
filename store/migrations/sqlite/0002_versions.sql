-- store 0002: named version counters. A change to cached definitions
-- bumps its counter in the change's transaction; caches read it to see
-- other processes' changes (Tx.BumpVersion, ReadVersion).
CREATE TABLE store_versions (
    name TEXT PRIMARY KEY,
    version BIGINT NOT NULL
);
