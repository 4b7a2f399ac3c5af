-- rules 0006: the execution log's totals by entity type and time, its
-- pages by entity, and the rules and rule sets lists' totals and pages,
-- without reading every row.
--
-- The log's kept counts (0005) gain the entity type and time buckets:
-- span 0 is the whole log (bucket 0), span 1 a UTC day and span 2 a UTC
-- hour (bucket: its start, in seconds since 1970), so each rule row is
-- counted three times, once per span. A total with a time filter sums
-- the days and hours wholly inside the range and counts the executions
-- of the less than an hour left at each end. InsertExecutions adds to
-- the counts and DeleteLogsBefore takes from them in their transactions,
-- as before.
DROP TABLE business_rule_log_counts;
CREATE TABLE business_rule_log_counts (
    tenant_id TEXT NOT NULL,
    span SMALLINT NOT NULL,
    bucket BIGINT NOT NULL,
    organization_id TEXT NOT NULL,
    entity_type TEXT NOT NULL,
    rule_id TEXT NOT NULL,
    result TEXT NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, span, bucket, organization_id, entity_type, rule_id, result)
);
INSERT INTO business_rule_log_counts (tenant_id, span, bucket, organization_id, entity_type, rule_id, result, n)
SELECT l.tenant_id, s.span, CASE s.span WHEN 0 THEN 0 WHEN 1 THEN l.epoch / 86400 * 86400 ELSE l.epoch / 3600 * 3600 END,
    l.organization_id, l.entity_type, l.rule_id, l.result, count(*)
FROM (SELECT x.tenant_id, CAST(strftime('%s', x.executed_at) AS INTEGER) AS epoch, COALESCE(x.organization_id, '') AS organization_id,
        x.entity_type, r.value ->> 1 AS rule_id, r.value ->> 4 AS result
    FROM business_rule_executions x CROSS JOIN json_each(x.rules) r) l
CROSS JOIN (SELECT 0 AS span UNION ALL SELECT 1 UNION ALL SELECT 2) s
GROUP BY 1, 2, 3, 4, 5, 6, 7;

-- A list filtered by entity id reads that entity's executions, newest
-- first, and counts them.
CREATE INDEX business_rule_executions_entity_idx ON business_rule_executions (tenant_id, entity_id, id);

-- Each execution's rule ids and results as text: for each rule row,
-- "|" + the rule id (with \ written \\, | written \p and : written \c)
-- + ":" + the result + "|" ('' for none). A rule id holds no | or :
-- there, so "|id:", ":RESULT|" and "|id:RESULT|" occur once in each
-- matching rule row's part and nowhere else: a page or count filtered by
-- rule id and/or result keeps the executions whose text holds the
-- pattern (a LIKE, without parsing JSON), and a count counts its
-- occurrences.
ALTER TABLE business_rule_executions ADD COLUMN rule_results TEXT NOT NULL DEFAULT '';
UPDATE business_rule_executions SET rule_results = COALESCE((SELECT group_concat('|' || replace(replace(replace(r.value ->> 1, '\', '\\'), '|', '\p'), ':', '\c') || ':'
    || (r.value ->> 4) || '|', '') FROM json_each(business_rule_executions.rules) r), '');

-- How many live rules a tenant has, by organization ('' for none), type,
-- entity type, event type, category and whether they are enabled; and
-- how many rule sets, by whether they are enabled. One row each, kept by
-- the triggers below in the writing transaction.
CREATE TABLE business_rule_list_counts (
    tenant_id TEXT NOT NULL,
    organization_id TEXT NOT NULL,
    rule_type TEXT NOT NULL,
    entity_type TEXT NOT NULL,
    event_type TEXT NOT NULL,
    rule_category TEXT NOT NULL,
    enabled BOOLEAN NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, organization_id, rule_type, entity_type, event_type, rule_category, enabled)
);
INSERT INTO business_rule_list_counts (tenant_id, organization_id, rule_type, entity_type, event_type, rule_category, enabled, n)
SELECT tenant_id, COALESCE(organization_id, ''), rule_type, entity_type, event_type, rule_category, enabled, count(*)
FROM business_rules WHERE deleted_at IS NULL GROUP BY 1, 2, 3, 4, 5, 6, 7;

CREATE TRIGGER business_rules_list_count_insert AFTER INSERT ON business_rules FOR EACH ROW WHEN NEW.deleted_at IS NULL
BEGIN
    INSERT INTO business_rule_list_counts (tenant_id, organization_id, rule_type, entity_type, event_type, rule_category, enabled, n)
    VALUES (NEW.tenant_id, COALESCE(NEW.organization_id, ''), NEW.rule_type, NEW.entity_type, NEW.event_type, NEW.rule_category,
        NEW.enabled, 1)
    ON CONFLICT (tenant_id, organization_id, rule_type, entity_type, event_type, rule_category, enabled) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER business_rules_list_count_delete AFTER DELETE ON business_rules FOR EACH ROW WHEN OLD.deleted_at IS NULL
BEGIN
    UPDATE business_rule_list_counts SET n = n - 1
    WHERE tenant_id = OLD.tenant_id AND organization_id = COALESCE(OLD.organization_id, '') AND rule_type = OLD.rule_type
        AND entity_type = OLD.entity_type AND event_type = OLD.event_type AND rule_category = OLD.rule_category
        AND enabled = OLD.enabled;
END;
CREATE TRIGGER business_rules_list_count_update AFTER UPDATE OF tenant_id, organization_id, rule_type, entity_type, event_type,
    rule_category, enabled, deleted_at ON business_rules
    FOR EACH ROW WHEN NOT ((OLD.deleted_at IS NULL) = (NEW.deleted_at IS NULL) AND (OLD.deleted_at IS NOT NULL
        OR OLD.tenant_id = NEW.tenant_id AND OLD.organization_id IS NEW.organization_id AND OLD.rule_type = NEW.rule_type
        AND OLD.entity_type = NEW.entity_type AND OLD.event_type = NEW.event_type AND OLD.rule_category = NEW.rule_category
        AND OLD.enabled = NEW.enabled))
BEGIN
    UPDATE business_rule_list_counts SET n = n - 1 WHERE OLD.deleted_at IS NULL
        AND tenant_id = OLD.tenant_id AND organization_id = COALESCE(OLD.organization_id, '') AND rule_type = OLD.rule_type
        AND entity_type = OLD.entity_type AND event_type = OLD.event_type AND rule_category = OLD.rule_category
        AND enabled = OLD.enabled;
    INSERT INTO business_rule_list_counts (tenant_id, organization_id, rule_type, entity_type, event_type, rule_category, enabled, n)
    SELECT NEW.tenant_id, COALESCE(NEW.organization_id, ''), NEW.rule_type, NEW.entity_type, NEW.event_type, NEW.rule_category,
        NEW.enabled, 1 WHERE NEW.deleted_at IS NULL
    ON CONFLICT (tenant_id, organization_id, rule_type, entity_type, event_type, rule_category, enabled) DO UPDATE SET n = n + 1;
END;

CREATE TABLE business_rule_set_counts (
    tenant_id TEXT NOT NULL,
    enabled BOOLEAN NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, enabled)
);
INSERT INTO business_rule_set_counts (tenant_id, enabled, n)
SELECT tenant_id, enabled, count(*) FROM business_rule_sets GROUP BY tenant_id, enabled;

CREATE TRIGGER business_rule_sets_count_insert AFTER INSERT ON business_rule_sets FOR EACH ROW
BEGIN
    INSERT INTO business_rule_set_counts (tenant_id, enabled, n) VALUES (NEW.tenant_id, NEW.enabled, 1)
    ON CONFLICT (tenant_id, enabled) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER business_rule_sets_count_delete AFTER DELETE ON business_rule_sets FOR EACH ROW
BEGIN
    UPDATE business_rule_set_counts SET n = n - 1 WHERE tenant_id = OLD.tenant_id AND enabled = OLD.enabled;
END;
CREATE TRIGGER business_rule_sets_count_update AFTER UPDATE OF tenant_id, enabled ON business_rule_sets FOR EACH ROW
    WHEN OLD.tenant_id <> NEW.tenant_id OR OLD.enabled <> NEW.enabled
BEGIN
    UPDATE business_rule_set_counts SET n = n - 1 WHERE tenant_id = OLD.tenant_id AND enabled = OLD.enabled;
    INSERT INTO business_rule_set_counts (tenant_id, enabled, n) VALUES (NEW.tenant_id, NEW.enabled, 1)
    ON CONFLICT (tenant_id, enabled) DO UPDATE SET n = n + 1;
END;

-- The lists' pages in each of their orders, read from an index in order
-- rather than sorted: rules by creation, update, name and priority (then
-- id), rule sets by creation (then id).
CREATE INDEX business_rules_created_idx ON business_rules (tenant_id, created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX business_rules_updated_idx ON business_rules (tenant_id, updated_at, id) WHERE deleted_at IS NULL;
CREATE INDEX business_rules_name_idx ON business_rules (tenant_id, rule_name, id) WHERE deleted_at IS NULL;
CREATE INDEX business_rules_priority_idx ON business_rules (tenant_id, priority, id) WHERE deleted_at IS NULL;
CREATE INDEX business_rule_sets_created_idx ON business_rule_sets (tenant_id, created_at, id);
