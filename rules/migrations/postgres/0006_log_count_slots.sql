-- rules 0006: the kept counts of the execution log spread over slots.
--
-- Every logged execution of a tenant's set adds to the same rows of
-- business_rule_log_counts (one per rule and result), and a transaction
-- holds the rows it added to until it commits: concurrent log writes of
-- one set waited for each other's commit. A key's count is now the sum of
-- its rows over slot; each writing transaction adds to one slot, chosen
-- at random where writers run concurrently, so that they seldom wait for
-- each other. Retention subtracts in slot 0, which may then hold a
-- negative part of a key's count.
ALTER TABLE business_rule_log_counts ADD COLUMN slot SMALLINT NOT NULL DEFAULT 0;
ALTER TABLE business_rule_log_counts DROP CONSTRAINT business_rule_log_counts_pkey;
ALTER TABLE business_rule_log_counts ADD PRIMARY KEY (tenant_id, organization_id, rule_id, result, slot);
