-- rules 0004: an execution's rule log rows move into its own row.
--
-- Each logged execution wrote eleven rows (its own and one per rule it
-- evaluated), and those INSERTs were most of what a logged execution cost
-- the single SQLite writer. Now the execution's row holds its rules as a
-- JSON array (rules), one element per evaluated rule in the order they
-- ran: [rule_uuid, rule_id, rule_name, rule_type, result, input_context,
-- output_context, error_message, execution_time_ms], where the two
-- contexts are JSON texts in JSON strings and input_context is null when
-- the rule saw the execution's input. A rule row's id stays the
-- execution's id with the element's index in its last four hex digits.
-- rule_count and failure_count (results FAILURE and ERROR) are kept for
-- the totals, the summary and retention, which then read no JSON.
ALTER TABLE business_rule_executions ADD COLUMN rules TEXT NOT NULL DEFAULT '[]';
ALTER TABLE business_rule_executions ADD COLUMN rule_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE business_rule_executions ADD COLUMN failure_count INTEGER NOT NULL DEFAULT 0;

UPDATE business_rule_executions SET
    rules = COALESCE((SELECT json_group_array(json_array(l.rule_uuid, l.rule_id, l.rule_name, l.rule_type, l.result,
            l.input_context, l.output_context, l.error_message, l.execution_time_ms) ORDER BY l.id)
        FROM business_rule_execution_logs l
        WHERE l.tenant_id = business_rule_executions.tenant_id
            AND l.id >= business_rule_executions.id AND l.id <= substr(business_rule_executions.id, 1, 32) || 'ffff'), '[]'),
    rule_count = (SELECT count(*) FROM business_rule_execution_logs l
        WHERE l.tenant_id = business_rule_executions.tenant_id
            AND l.id >= business_rule_executions.id AND l.id <= substr(business_rule_executions.id, 1, 32) || 'ffff'),
    failure_count = (SELECT count(*) FROM business_rule_execution_logs l
        WHERE l.tenant_id = business_rule_executions.tenant_id
            AND l.id >= business_rule_executions.id AND l.id <= substr(business_rule_executions.id, 1, 32) || 'ffff'
            AND l.result IN ('FAILURE', 'ERROR'));

DROP TABLE business_rule_execution_logs;

-- A tenant's executions, newest first (the log's lists).
CREATE INDEX business_rule_executions_tenant_idx ON business_rule_executions (tenant_id, id);
