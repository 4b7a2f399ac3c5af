-- rules 0013: the execution log's kept counts summed over rules, for the
-- totals of the log's lists not filtered by rule id.
--
-- Such a total summed the kept counts (0006) of every rule id the log
-- holds: its cost grew with the rules ever executed, deleted ones
-- included (in a 30-minute soak that creates and deletes rules all the
-- while, 29 → 718 buffers a call for the unfiltered total). This table
-- holds the same counts without the rule id, for the whole log, the days
-- and the hours (spans 0 to 2). The triggers below keep it from every
-- change to those spans' rows (the fold, retention), in the writing
-- transaction, whichever version of the code writes: the executions'
-- own writes add to the pending span (3) only, which the triggers pass
-- by, so logging an execution costs what it did. A total not filtered by
-- rule id sums this table's rows of its span and the pending rows of its
-- range, which hold the last hour or two.
CREATE TABLE business_rule_log_totals (
    tenant_id TEXT NOT NULL,
    span SMALLINT NOT NULL,
    bucket BIGINT NOT NULL,
    organization_id TEXT NOT NULL,
    entity_type TEXT NOT NULL,
    result TEXT NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, span, bucket, organization_id, entity_type, result)
);
INSERT INTO business_rule_log_totals (tenant_id, span, bucket, organization_id, entity_type, result, n)
SELECT tenant_id, span, bucket, organization_id, entity_type, result, sum(n)
FROM business_rule_log_counts WHERE span <> 3
GROUP BY tenant_id, span, bucket, organization_id, entity_type, result;

CREATE FUNCTION business_rule_log_total() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE business_rule_log_totals SET n = n - OLD.n
        WHERE tenant_id = OLD.tenant_id AND span = OLD.span AND bucket = OLD.bucket AND organization_id = OLD.organization_id
            AND entity_type = OLD.entity_type AND result = OLD.result;
        DELETE FROM business_rule_log_totals
        WHERE tenant_id = OLD.tenant_id AND span = OLD.span AND bucket = OLD.bucket AND organization_id = OLD.organization_id
            AND entity_type = OLD.entity_type AND result = OLD.result AND n <= 0;
        RETURN NULL;
    END IF;
    INSERT INTO business_rule_log_totals AS t (tenant_id, span, bucket, organization_id, entity_type, result, n)
    VALUES (NEW.tenant_id, NEW.span, NEW.bucket, NEW.organization_id, NEW.entity_type, NEW.result,
        NEW.n - CASE WHEN TG_OP = 'UPDATE' THEN OLD.n ELSE 0 END)
    ON CONFLICT (tenant_id, span, bucket, organization_id, entity_type, result) DO UPDATE SET n = t.n + excluded.n;
    RETURN NULL;
END $$;
CREATE TRIGGER business_rule_log_counts_total_insert AFTER INSERT ON business_rule_log_counts
    FOR EACH ROW WHEN (NEW.span <> 3) EXECUTE FUNCTION business_rule_log_total();
CREATE TRIGGER business_rule_log_counts_total_update AFTER UPDATE OF n ON business_rule_log_counts
    FOR EACH ROW WHEN (NEW.span <> 3 AND NEW.n <> OLD.n) EXECUTE FUNCTION business_rule_log_total();
CREATE TRIGGER business_rule_log_counts_total_delete AFTER DELETE ON business_rule_log_counts
    FOR EACH ROW WHEN (OLD.span <> 3) EXECUTE FUNCTION business_rule_log_total();
