-- rules 0001: business rules, rule sets and their members.
CREATE TABLE business_rules (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    organization_id TEXT,
    rule_id TEXT NOT NULL,
    rule_name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    rule_type TEXT NOT NULL,
    rule_category TEXT NOT NULL DEFAULT '',
    entity_type TEXT NOT NULL,
    event_type TEXT NOT NULL DEFAULT '',
    condition_expression TEXT NOT NULL,
    success_actions TEXT,
    failure_actions TEXT,
    enabled BOOLEAN NOT NULL,
    priority INTEGER NOT NULL,
    version INTEGER NOT NULL,
    effective_from TIMESTAMP,
    effective_to TIMESTAMP,
    created_by TEXT,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    deleted_at TIMESTAMP
);
-- A live rule's business id is unique in its tenant; a deleted rule frees it.
CREATE UNIQUE INDEX business_rules_rule_id_idx ON business_rules (tenant_id, rule_id) WHERE deleted_at IS NULL;
CREATE INDEX business_rules_entity_idx ON business_rules (tenant_id, entity_type, event_type) WHERE deleted_at IS NULL;

CREATE TABLE business_rule_sets (
    tenant_id TEXT NOT NULL,
    id TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    enabled BOOLEAN NOT NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE business_rule_set_members (
    tenant_id TEXT NOT NULL,
    set_id TEXT NOT NULL,
    rule_uuid TEXT NOT NULL REFERENCES business_rules (id),
    sequence INTEGER NOT NULL,
    enabled BOOLEAN NOT NULL,
    added_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP,
    PRIMARY KEY (tenant_id, set_id, rule_uuid),
    FOREIGN KEY (tenant_id, set_id) REFERENCES business_rule_sets (tenant_id, id)
);
CREATE INDEX business_rule_set_members_rule_idx ON business_rule_set_members (rule_uuid);
