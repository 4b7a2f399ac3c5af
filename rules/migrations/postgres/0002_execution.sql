-- rules 0002: the definitions version counter and the execution log.

-- One row, bumped by every change to rules, sets or members, in the
-- change's transaction: each process polls it to drop its cached
-- execution plans when another process changed something.
CREATE TABLE business_rules_version (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    version BIGINT NOT NULL
);
INSERT INTO business_rules_version (id, version) VALUES (1, 0);

-- The execution log: one row per execution that was not a dry run, with
-- what all its rules share, and one row per rule it evaluated. Keeping the
-- shared columns out of the rule rows halves what a logged execution
-- writes (see BENCHMARKS.md).
--
-- An execution's id is a UUIDv7 whose last four hex digits are 0000; its
-- rule rows' ids are that id with their index in those digits. UUIDv7 text
-- sorts by time, so "newest first" is "id descending", an execution's
-- rows sort in the order its rules ran, and retention deletes by id range.
CREATE TABLE business_rule_executions (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    organization_id TEXT,
    set_id TEXT,
    entity_type TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    -- {data (secrets redacted), entityType, entityId, eventType, user}
    input_context JSONB NOT NULL,
    executed_at TIMESTAMPTZ NOT NULL,
    executed_by TEXT
);

CREATE TABLE business_rule_execution_logs (
    tenant_id TEXT NOT NULL,
    id TEXT NOT NULL,
    rule_uuid TEXT NOT NULL,
    rule_id TEXT NOT NULL,
    rule_name TEXT NOT NULL,
    rule_type TEXT NOT NULL,
    result TEXT NOT NULL,
    -- NULL: the execution's input (a SET_FIELD of an earlier rule sets it).
    input_context JSONB,
    output_context JSONB NOT NULL,
    error_message TEXT,
    execution_time_ms DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
-- The list filtered by rule (SQLite has no such index: its rows land all
-- over it, and each commit rewrote many of its pages; it scans the tenant's
-- rows instead).
CREATE INDEX business_rule_execution_logs_rule_idx ON business_rule_execution_logs (tenant_id, rule_id, id);
