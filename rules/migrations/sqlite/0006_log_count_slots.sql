-- rules 0006: the kept counts of the execution log spread over slots.
--
-- Every logged execution of a tenant's set adds to the same rows of
-- business_rule_log_counts (one per rule and result), and a transaction
-- holds the rows it added to until it commits: concurrent log writes of
-- one set waited for each other's commit (on engines where writers run
-- concurrently; SQLite's one writer always uses slot 0). A key's count is
-- now the sum of its rows over slot. Retention subtracts in slot 0, which
-- may then hold a negative part of a key's count.
CREATE TABLE business_rule_log_counts_slots (
    tenant_id TEXT NOT NULL,
    organization_id TEXT NOT NULL,
    rule_id TEXT NOT NULL,
    result TEXT NOT NULL,
    slot INTEGER NOT NULL DEFAULT 0,
    n BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, organization_id, rule_id, result, slot)
);

INSERT INTO business_rule_log_counts_slots (tenant_id, organization_id, rule_id, result, slot, n)
SELECT tenant_id, organization_id, rule_id, result, 0, n FROM business_rule_log_counts;

DROP TABLE business_rule_log_counts;

ALTER TABLE business_rule_log_counts_slots RENAME TO business_rule_log_counts;
