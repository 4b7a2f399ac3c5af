-- rules 0004: an execution's rule log rows move into its own row.
--
-- Each logged execution wrote eleven rows (its own and one per rule it
-- evaluated). Now the execution's row holds its rules as a JSON array
-- (rules), one element per evaluated rule in the order they ran:
-- [rule_uuid, rule_id, rule_name, rule_type, result, input_context,
-- output_context, error_message, execution_time_ms], where the two
-- contexts are JSON texts in JSON strings and input_context is null when
-- the rule saw the execution's input. A rule row's id stays the
-- execution's id with the element's index in its last four hex digits.
-- rule_count and failure_count (results FAILURE and ERROR) are kept for
-- the totals, the summary and retention, which then read no JSON. (json,
-- not jsonb: it is stored as written and only ever read whole.)
ALTER TABLE business_rule_executions
    ADD COLUMN rules JSON NOT NULL DEFAULT '[]',
    ADD COLUMN rule_count INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN failure_count INTEGER NOT NULL DEFAULT 0;

UPDATE business_rule_executions x SET rules = l.rules, rule_count = l.n, failure_count = l.failures
FROM (SELECT tenant_id, substr(id, 1, 32) || '0000' AS execution_id,
        json_agg(json_build_array(rule_uuid, rule_id, rule_name, rule_type, result, input_context::text,
            output_context::text, error_message, execution_time_ms) ORDER BY id) AS rules,
        count(*) AS n, count(*) FILTER (WHERE result IN ('FAILURE', 'ERROR')) AS failures
    FROM business_rule_execution_logs GROUP BY tenant_id, substr(id, 1, 32)) l
WHERE x.tenant_id = l.tenant_id AND x.id = l.execution_id;

DROP TABLE business_rule_execution_logs;

-- A tenant's executions, newest first (the log's lists).
CREATE INDEX business_rule_executions_tenant_idx ON business_rule_executions (tenant_id, id);
