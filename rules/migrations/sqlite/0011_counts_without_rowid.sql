-- rules 0011: the execution log's kept counts (business_rule_log_counts,
-- business_rule_execution_counts) become WITHOUT ROWID tables: their
-- rows are stored in their primary key's B-tree. As rowid tables with a
-- composite primary key, each upsert of a logged batch sought the key's
-- index, then the row in the table by its rowid, and wrote a page of
-- each; now it seeks and writes one B-tree. Columns, keys and rows are
-- unchanged.
CREATE TABLE business_rule_log_counts_new (
    tenant_id TEXT NOT NULL,
    span SMALLINT NOT NULL,
    bucket BIGINT NOT NULL,
    organization_id TEXT NOT NULL,
    entity_type TEXT NOT NULL,
    rule_id TEXT NOT NULL,
    result TEXT NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, span, bucket, organization_id, entity_type, rule_id, result)
) WITHOUT ROWID;
INSERT INTO business_rule_log_counts_new (tenant_id, span, bucket, organization_id, entity_type, rule_id, result, n)
SELECT tenant_id, span, bucket, organization_id, entity_type, rule_id, result, n FROM business_rule_log_counts;
DROP TABLE business_rule_log_counts;
ALTER TABLE business_rule_log_counts_new RENAME TO business_rule_log_counts;

CREATE TABLE business_rule_execution_counts_new (
    tenant_id TEXT NOT NULL,
    hour BIGINT NOT NULL,
    organization_id TEXT NOT NULL,
    set_id TEXT NOT NULL,
    executions BIGINT NOT NULL,
    failures BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, hour, organization_id, set_id)
) WITHOUT ROWID;
INSERT INTO business_rule_execution_counts_new (tenant_id, hour, organization_id, set_id, executions, failures)
SELECT tenant_id, hour, organization_id, set_id, executions, failures FROM business_rule_execution_counts;
DROP TABLE business_rule_execution_counts;
ALTER TABLE business_rule_execution_counts_new RENAME TO business_rule_execution_counts;
