-- rules 0005: kept counts of the execution log's rule rows per rule and
-- result, for the totals of the log's lists.
--
-- A list filtered by rule id or result counted the matching elements of
-- every execution's rules array of the tenant: its cost grew with the
-- log. This table keeps, per tenant, organization ('' for rows of no
-- organization), rule id and result, how many rule rows the log holds;
-- InsertExecutions adds to it and DeleteLogsBefore subtracts from it in
-- their own transactions, so a total of the unfiltered list or of a list
-- filtered by rule id and/or result (and no other filter) reads a few
-- rows of it.
CREATE TABLE business_rule_log_counts (
    tenant_id TEXT NOT NULL,
    organization_id TEXT NOT NULL,
    rule_id TEXT NOT NULL,
    result TEXT NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, organization_id, rule_id, result)
);

INSERT INTO business_rule_log_counts (tenant_id, organization_id, rule_id, result, n)
SELECT x.tenant_id, COALESCE(x.organization_id, ''), r.value ->> 1, r.value ->> 4, count(*)
FROM business_rule_executions x CROSS JOIN json_array_elements(x.rules) r
GROUP BY x.tenant_id, COALESCE(x.organization_id, ''), r.value ->> 1, r.value ->> 4;
