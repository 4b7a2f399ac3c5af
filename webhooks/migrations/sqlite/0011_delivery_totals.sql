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
    PRIMARY KEY (tenant_id, organization_id, event_type, state)
) WITHOUT ROWID;

-- Each change of a folded sum by event type and state adds its difference
-- to its organization's row (a row whose sum falls to 0 stays: there are
-- a few per organization, event type and state).
CREATE TRIGGER webhook_delivery_total_insert AFTER INSERT ON webhook_delivery_folded_counts
    FOR EACH ROW WHEN NEW.created_hour = 0
BEGIN
    INSERT INTO webhook_delivery_totals (tenant_id, organization_id, event_type, state, n)
    SELECT NEW.tenant_id, COALESCE(w.organization_id, ''), NEW.event_type, NEW.state, NEW.n
    FROM webhooks w WHERE w.tenant_id = NEW.tenant_id AND w.id = NEW.webhook_id
    ON CONFLICT (tenant_id, organization_id, event_type, state) DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER webhook_delivery_total_update AFTER UPDATE OF n ON webhook_delivery_folded_counts
    FOR EACH ROW WHEN NEW.created_hour = 0 AND NEW.n <> OLD.n
BEGIN
    INSERT INTO webhook_delivery_totals (tenant_id, organization_id, event_type, state, n)
    SELECT NEW.tenant_id, COALESCE(w.organization_id, ''), NEW.event_type, NEW.state, NEW.n - OLD.n
    FROM webhooks w WHERE w.tenant_id = NEW.tenant_id AND w.id = NEW.webhook_id
    ON CONFLICT (tenant_id, organization_id, event_type, state) DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER webhook_delivery_total_delete AFTER DELETE ON webhook_delivery_folded_counts
    FOR EACH ROW WHEN OLD.created_hour = 0
BEGIN
    UPDATE webhook_delivery_totals SET n = n - OLD.n
    WHERE tenant_id = OLD.tenant_id AND event_type = OLD.event_type AND state = OLD.state
        AND organization_id = (SELECT COALESCE(w.organization_id, '') FROM webhooks w
            WHERE w.tenant_id = OLD.tenant_id AND w.id = OLD.webhook_id);
END;

-- A webhook moved to another organization takes its sums along.
CREATE TRIGGER webhook_delivery_totals_move AFTER UPDATE OF organization_id ON webhooks
    FOR EACH ROW WHEN OLD.organization_id IS NOT NEW.organization_id
BEGIN
    UPDATE webhook_delivery_totals SET n = n - (SELECT sum(f.n) FROM webhook_delivery_folded_counts f
            WHERE f.tenant_id = OLD.tenant_id AND f.created_hour = 0 AND f.webhook_id = OLD.id
                AND f.event_type = webhook_delivery_totals.event_type AND f.state = webhook_delivery_totals.state)
    WHERE tenant_id = OLD.tenant_id AND organization_id = COALESCE(OLD.organization_id, '')
        AND EXISTS (SELECT 1 FROM webhook_delivery_folded_counts f
            WHERE f.tenant_id = OLD.tenant_id AND f.created_hour = 0 AND f.webhook_id = OLD.id
                AND f.event_type = webhook_delivery_totals.event_type AND f.state = webhook_delivery_totals.state);
    INSERT INTO webhook_delivery_totals (tenant_id, organization_id, event_type, state, n)
    SELECT NEW.tenant_id, COALESCE(NEW.organization_id, ''), event_type, state, sum(n) FROM webhook_delivery_folded_counts
    WHERE tenant_id = OLD.tenant_id AND created_hour = 0 AND webhook_id = OLD.id GROUP BY event_type, state
    ON CONFLICT (tenant_id, organization_id, event_type, state) DO UPDATE SET n = n + excluded.n;
END;

-- The sums so far (the migration holds SQLite's one writer lock).
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
