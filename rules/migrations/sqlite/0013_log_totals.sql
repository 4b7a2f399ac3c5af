-- rules 0013: the execution log's kept counts summed over rules, for the
-- totals of the log's lists not filtered by rule id.
--
-- Such a total summed the kept counts (0006) of every rule id the log
-- holds: its cost grew with the rules ever executed, deleted ones
-- included. This table holds the same counts without the rule id, for
-- the whole log, the days and the hours (spans 0 to 2). The triggers
-- below keep it from every change to those spans' rows (the fold,
-- retention), in the writing transaction, whichever version of the code
-- writes: the executions' own writes add to the pending span (3) only,
-- which the triggers pass by. A total not filtered by rule id sums this
-- table's rows of its span and the pending rows of its range.
CREATE TABLE business_rule_log_totals (
    tenant_id TEXT NOT NULL,
    span INTEGER NOT NULL,
    bucket INTEGER NOT NULL,
    organization_id TEXT NOT NULL,
    entity_type TEXT NOT NULL,
    result TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, span, bucket, organization_id, entity_type, result)
) WITHOUT ROWID;
INSERT INTO business_rule_log_totals (tenant_id, span, bucket, organization_id, entity_type, result, n)
SELECT tenant_id, span, bucket, organization_id, entity_type, result, sum(n)
FROM business_rule_log_counts WHERE span <> 3
GROUP BY tenant_id, span, bucket, organization_id, entity_type, result;

CREATE TRIGGER business_rule_log_counts_total_insert AFTER INSERT ON business_rule_log_counts FOR EACH ROW WHEN NEW.span <> 3
BEGIN
    INSERT INTO business_rule_log_totals (tenant_id, span, bucket, organization_id, entity_type, result, n)
    VALUES (NEW.tenant_id, NEW.span, NEW.bucket, NEW.organization_id, NEW.entity_type, NEW.result, NEW.n)
    ON CONFLICT (tenant_id, span, bucket, organization_id, entity_type, result) DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER business_rule_log_counts_total_update AFTER UPDATE OF n ON business_rule_log_counts FOR EACH ROW
    WHEN NEW.span <> 3 AND NEW.n <> OLD.n
BEGIN
    INSERT INTO business_rule_log_totals (tenant_id, span, bucket, organization_id, entity_type, result, n)
    VALUES (NEW.tenant_id, NEW.span, NEW.bucket, NEW.organization_id, NEW.entity_type, NEW.result, NEW.n - OLD.n)
    ON CONFLICT (tenant_id, span, bucket, organization_id, entity_type, result) DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER business_rule_log_counts_total_delete AFTER DELETE ON business_rule_log_counts FOR EACH ROW WHEN OLD.span <> 3
BEGIN
    UPDATE business_rule_log_totals SET n = n - OLD.n
    WHERE tenant_id = OLD.tenant_id AND span = OLD.span AND bucket = OLD.bucket AND organization_id = OLD.organization_id
        AND entity_type = OLD.entity_type AND result = OLD.result;
    DELETE FROM business_rule_log_totals
    WHERE tenant_id = OLD.tenant_id AND span = OLD.span AND bucket = OLD.bucket AND organization_id = OLD.organization_id
        AND entity_type = OLD.entity_type AND result = OLD.result AND n <= 0;
END;
