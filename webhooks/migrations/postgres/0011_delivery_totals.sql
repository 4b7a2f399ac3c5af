-- webhooks 0011: the deliveries list's totals not filtered by webhook,
-- kept by organization rather than by webhook.
--
-- Such a total summed the folded counts (0008) by event type and state
-- (created_hour 0) of every webhook the scope may read, deleted ones
-- included: its cost grew with the webhooks ever created (in a 30-minute
-- PostgreSQL soak that creates webhooks all along, 205 → 446 buffers a
-- call). This table holds the same sums without the webhook, by the
-- webhook's organization ('' for none). The triggers below keep it from
-- every change to those folded rows, in the fold's transaction, whichever
-- version of the code folds; the deliveries' own writes still add delta
-- rows only, so sending one costs what it did. A total not filtered by
-- webhook sums this table's rows of the scope and the delta rows not yet
-- folded (a second of writes), through the view below.
--
-- A webhook's organization never changes through the store; should a host
-- change one, the last trigger moves its sums.
CREATE TABLE webhook_delivery_totals (
    tenant_id TEXT NOT NULL,
    organization_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    state TEXT NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, organization_id, event_type, state) INCLUDE (n)
);

-- Each change of a folded sum by event type and state adds its difference
-- to its organization's row (a row whose sum falls to 0 stays: there are
-- a few per organization, event type and state).
CREATE FUNCTION webhook_delivery_total() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE webhook_delivery_totals t SET n = t.n - OLD.n FROM webhooks w
        WHERE w.tenant_id = OLD.tenant_id AND w.id = OLD.webhook_id AND t.tenant_id = OLD.tenant_id
            AND t.organization_id = COALESCE(w.organization_id, '') AND t.event_type = OLD.event_type AND t.state = OLD.state;
        RETURN NULL;
    END IF;
    INSERT INTO webhook_delivery_totals AS t (tenant_id, organization_id, event_type, state, n)
    SELECT NEW.tenant_id, COALESCE(w.organization_id, ''), NEW.event_type, NEW.state,
        NEW.n - CASE WHEN TG_OP = 'UPDATE' THEN OLD.n ELSE 0 END
    FROM webhooks w WHERE w.tenant_id = NEW.tenant_id AND w.id = NEW.webhook_id
    ON CONFLICT (tenant_id, organization_id, event_type, state) DO UPDATE SET n = t.n + excluded.n;
    RETURN NULL;
END $$;
CREATE TRIGGER webhook_delivery_total_insert AFTER INSERT ON webhook_delivery_folded_counts
    FOR EACH ROW WHEN (NEW.created_hour = 0) EXECUTE FUNCTION webhook_delivery_total();
CREATE TRIGGER webhook_delivery_total_update AFTER UPDATE OF n ON webhook_delivery_folded_counts
    FOR EACH ROW WHEN (NEW.created_hour = 0 AND NEW.n <> OLD.n) EXECUTE FUNCTION webhook_delivery_total();
CREATE TRIGGER webhook_delivery_total_delete AFTER DELETE ON webhook_delivery_folded_counts
    FOR EACH ROW WHEN (OLD.created_hour = 0) EXECUTE FUNCTION webhook_delivery_total();

-- A webhook moved to another organization takes its sums along.
CREATE FUNCTION webhook_delivery_totals_move() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE webhook_delivery_totals t SET n = t.n - f.n
    FROM (SELECT event_type, state, sum(n) AS n FROM webhook_delivery_folded_counts
        WHERE tenant_id = OLD.tenant_id AND created_hour = 0 AND webhook_id = OLD.id GROUP BY event_type, state) f
    WHERE t.tenant_id = OLD.tenant_id AND t.organization_id = COALESCE(OLD.organization_id, '')
        AND t.event_type = f.event_type AND t.state = f.state;
    INSERT INTO webhook_delivery_totals AS t (tenant_id, organization_id, event_type, state, n)
    SELECT NEW.tenant_id, COALESCE(NEW.organization_id, ''), event_type, state, sum(n) FROM webhook_delivery_folded_counts
    WHERE tenant_id = OLD.tenant_id AND created_hour = 0 AND webhook_id = OLD.id GROUP BY event_type, state
    ON CONFLICT (tenant_id, organization_id, event_type, state) DO UPDATE SET n = t.n + excluded.n;
    RETURN NULL;
END $$;
CREATE TRIGGER webhook_delivery_totals_move AFTER UPDATE OF organization_id ON webhooks
    FOR EACH ROW WHEN (OLD.organization_id IS DISTINCT FROM NEW.organization_id) EXECUTE FUNCTION webhook_delivery_totals_move();

-- Filled after the triggers exist: creating them locked the folded sums
-- against writes until this migration commits, so a fold by a process
-- still running the earlier version is either in the fill or fires them.
INSERT INTO webhook_delivery_totals (tenant_id, organization_id, event_type, state, n)
SELECT f.tenant_id, COALESCE(w.organization_id, ''), f.event_type, f.state, sum(f.n)
FROM webhook_delivery_folded_counts f JOIN webhooks w ON w.tenant_id = f.tenant_id AND w.id = f.webhook_id
WHERE f.created_hour = 0
GROUP BY f.tenant_id, COALESCE(w.organization_id, ''), f.event_type, f.state;

-- What a total not filtered by webhook sums: the sums by organization and
-- the delta rows not yet folded, each with its webhook's organization.
CREATE VIEW webhook_delivery_kept_totals AS
    SELECT tenant_id, organization_id, event_type, state, n FROM webhook_delivery_totals
    UNION ALL
    SELECT k.tenant_id, COALESCE(w.organization_id, ''), k.event_type, k.state, k.delta
    FROM webhook_delivery_counts k JOIN webhooks w ON w.tenant_id = k.tenant_id AND w.id = k.webhook_id
    WHERE k.created_hour = 0;
