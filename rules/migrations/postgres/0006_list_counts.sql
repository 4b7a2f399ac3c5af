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
FROM (SELECT x.tenant_id, floor(extract(epoch FROM x.executed_at))::bigint AS epoch, COALESCE(x.organization_id, '') AS organization_id,
        x.entity_type, r.value ->> 1 AS rule_id, r.value ->> 4 AS result
    FROM business_rule_executions x CROSS JOIN json_array_elements(x.rules) r) l
CROSS JOIN (VALUES (0), (1), (2)) s(span)
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
UPDATE business_rule_executions x SET rule_results = COALESCE((SELECT string_agg('|' || replace(replace(replace(r.value ->> 1, '\', '\\'), '|', '\p'), ':', '\c') || ':'
    || (r.value ->> 4) || '|', '' ORDER BY r.n) FROM json_array_elements(x.rules) WITH ORDINALITY AS r(value, n)), '');

-- How many live rules a tenant has, by organization ('' for none), type,
-- entity type, event type, category and whether they are enabled; and
-- how many rule sets, by whether they are enabled. One row each, kept by
-- the triggers below in the writing transaction (rules and sets are
-- written rarely, so writers waiting on a count row's lock cost little;
-- a change that moves a row between two counts takes them in key order,
-- so two such changes never wait on each other crosswise).
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

CREATE FUNCTION business_rule_list_count() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_live BOOLEAN := TG_OP <> 'INSERT' AND OLD.deleted_at IS NULL;
    new_live BOOLEAN := TG_OP <> 'DELETE' AND NEW.deleted_at IS NULL;
    old_key TEXT[];
    new_key TEXT[];
BEGIN
    IF old_live THEN
        old_key := ARRAY[OLD.tenant_id, COALESCE(OLD.organization_id, ''), OLD.rule_type, OLD.entity_type, OLD.event_type,
            OLD.rule_category, OLD.enabled::text];
    END IF;
    IF new_live THEN
        new_key := ARRAY[NEW.tenant_id, COALESCE(NEW.organization_id, ''), NEW.rule_type, NEW.entity_type, NEW.event_type,
            NEW.rule_category, NEW.enabled::text];
    END IF;
    IF old_live AND new_live AND old_key = new_key THEN
        RETURN NULL;
    END IF;
    IF new_live AND (NOT old_live OR new_key < old_key) THEN
        INSERT INTO business_rule_list_counts AS k (tenant_id, organization_id, rule_type, entity_type, event_type, rule_category,
            enabled, n)
        VALUES (new_key[1], new_key[2], new_key[3], new_key[4], new_key[5], new_key[6], NEW.enabled, 1)
        ON CONFLICT (tenant_id, organization_id, rule_type, entity_type, event_type, rule_category, enabled)
        DO UPDATE SET n = k.n + 1;
        new_live := FALSE;
    END IF;
    IF old_live THEN
        UPDATE business_rule_list_counts SET n = n - 1
        WHERE tenant_id = old_key[1] AND organization_id = old_key[2] AND rule_type = old_key[3] AND entity_type = old_key[4]
            AND event_type = old_key[5] AND rule_category = old_key[6] AND enabled = OLD.enabled;
    END IF;
    IF new_live THEN
        INSERT INTO business_rule_list_counts AS k (tenant_id, organization_id, rule_type, entity_type, event_type, rule_category,
            enabled, n)
        VALUES (new_key[1], new_key[2], new_key[3], new_key[4], new_key[5], new_key[6], NEW.enabled, 1)
        ON CONFLICT (tenant_id, organization_id, rule_type, entity_type, event_type, rule_category, enabled)
        DO UPDATE SET n = k.n + 1;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER business_rules_list_count AFTER INSERT OR DELETE OR UPDATE OF tenant_id, organization_id, rule_type, entity_type,
    event_type, rule_category, enabled, deleted_at ON business_rules FOR EACH ROW EXECUTE FUNCTION business_rule_list_count();

CREATE TABLE business_rule_set_counts (
    tenant_id TEXT NOT NULL,
    enabled BOOLEAN NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, enabled)
);
INSERT INTO business_rule_set_counts (tenant_id, enabled, n)
SELECT tenant_id, enabled, count(*) FROM business_rule_sets GROUP BY tenant_id, enabled;

CREATE FUNCTION business_rule_set_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.tenant_id = NEW.tenant_id AND OLD.enabled = NEW.enabled THEN
        RETURN NULL;
    END IF;
    -- In key order: false before true.
    IF TG_OP <> 'DELETE' AND (TG_OP = 'INSERT' OR NOT NEW.enabled) THEN
        INSERT INTO business_rule_set_counts AS k (tenant_id, enabled, n) VALUES (NEW.tenant_id, NEW.enabled, 1)
        ON CONFLICT (tenant_id, enabled) DO UPDATE SET n = k.n + 1;
    END IF;
    IF TG_OP <> 'INSERT' THEN
        UPDATE business_rule_set_counts SET n = n - 1 WHERE tenant_id = OLD.tenant_id AND enabled = OLD.enabled;
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.enabled THEN
        INSERT INTO business_rule_set_counts AS k (tenant_id, enabled, n) VALUES (NEW.tenant_id, NEW.enabled, 1)
        ON CONFLICT (tenant_id, enabled) DO UPDATE SET n = k.n + 1;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER business_rule_sets_count AFTER INSERT OR DELETE OR UPDATE OF tenant_id, enabled ON business_rule_sets
    FOR EACH ROW EXECUTE FUNCTION business_rule_set_count();

-- The lists' pages in each of their orders, read from an index in order
-- rather than sorted: rules by creation, update, name and priority (then
-- id), rule sets by creation (then id).
CREATE INDEX business_rules_created_idx ON business_rules (tenant_id, created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX business_rules_updated_idx ON business_rules (tenant_id, updated_at, id) WHERE deleted_at IS NULL;
CREATE INDEX business_rules_name_idx ON business_rules (tenant_id, rule_name, id) WHERE deleted_at IS NULL;
CREATE INDEX business_rules_priority_idx ON business_rules (tenant_id, priority, id) WHERE deleted_at IS NULL;
CREATE INDEX business_rule_sets_created_idx ON business_rule_sets (tenant_id, created_at, id);
