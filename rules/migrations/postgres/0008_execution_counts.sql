-- rules 0008: kept counts of the execution log by rule set and hour, for
-- the execution summary (the dashboard's rule-executions widget).
--
-- The summary of a window summed the rule and failure counts of every
-- execution of the window: its cost grew with the log. This table keeps,
-- per tenant, UTC hour the executions began in (its start in Unix
-- seconds), organization ('' for none) and executed set ('' for none),
-- how many rule rows and how many FAILURE or ERROR rule rows the log
-- holds. InsertExecutions adds to it in the statement that inserts the
-- executions (PostgreSQL) or its transaction (SQLite), and
-- DeleteLogsBefore takes from it in its own, so a window that starts at
-- an hour reads a few rows per set and hour; a window starting inside an
-- hour counts that hour's executions from the log. Executions of no rule
-- rows add nothing.
CREATE TABLE business_rule_execution_counts (
    tenant_id TEXT NOT NULL,
    hour BIGINT NOT NULL,
    organization_id TEXT NOT NULL,
    set_id TEXT NOT NULL,
    executions BIGINT NOT NULL,
    failures BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, hour, organization_id, set_id)
);
INSERT INTO business_rule_execution_counts (tenant_id, hour, organization_id, set_id, executions, failures)
SELECT tenant_id, floor(extract(epoch FROM executed_at))::bigint / 3600 * 3600, COALESCE(organization_id, ''), COALESCE(set_id, ''),
    sum(rule_count), sum(failure_count)
FROM business_rule_executions WHERE rule_count > 0
GROUP BY 1, 2, 3, 4;
