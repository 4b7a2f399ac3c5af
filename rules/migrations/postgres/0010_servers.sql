-- rules 0010: the processes whose cached execution plans a change to
-- rules, sets or members waits for (see the package documentation,
-- "Cached plans"): each Service executing on a shared database beats here
-- with the version of the counter rules.definitions it has applied.
CREATE TABLE business_rule_servers (
    id TEXT PRIMARY KEY,
    seen BIGINT NOT NULL,
    beat_at TIMESTAMPTZ NOT NULL
);
