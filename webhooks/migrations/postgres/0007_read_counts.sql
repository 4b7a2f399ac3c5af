-- webhooks 0007: the deliveries list's pages by event type from an
-- index, and the deliveries of the last hours by webhook and state, kept,
-- so that the delivery health of a recent window (the dashboard's widget)
-- reads a few rows per webhook and hour rather than every delivery of the
-- window.
--
-- The kept counts (0006) gain created_hour: 0 for the counts of every
-- delivery (by webhook, event type and state, the deliveries list's
-- totals), or the start (Unix seconds) of the hour the counted deliveries
-- were created in, for the counts by webhook and state of that hour
-- (event_type ''). Both are written together, as insert-only delta rows
-- folded by the sweep: InsertDeliveries adds the rows of both in one
-- statement, and the trigger below a -1 and a +1 of each for a change of
-- state. The sweep deletes the hour counts older than 48 hours; a window
-- that starts before the hours kept counts its deliveries.

-- The deliveries list's pages by event type, newest first, read from an
-- index in order: walking the tenant's index until a page of a rare event
-- type is full read most of the tenant's deliveries, and a planner
-- without statistics read every delivery of the tenant's webhooks and
-- sorted them.
CREATE INDEX webhook_deliveries_event_type_idx ON webhook_deliveries (tenant_id, event_type, created_at, id);

ALTER TABLE webhook_delivery_counts ADD COLUMN created_hour BIGINT NOT NULL DEFAULT 0;
DROP INDEX webhook_delivery_counts_webhook_idx;
CREATE INDEX webhook_delivery_counts_idx ON webhook_delivery_counts (tenant_id, created_hour, webhook_id, event_type, state, delta);
-- The hour counts of the deliveries of the last 48 hours.
INSERT INTO webhook_delivery_counts (id, tenant_id, webhook_id, event_type, state, created_hour, delta)
    SELECT gen_random_uuid()::text, tenant_id, webhook_id, '', state, created_hour, count(*)
    FROM (SELECT tenant_id, webhook_id, CASE WHEN status IN ('pending', 'sending') THEN '' ELSE status END AS state,
            floor(extract(epoch FROM created_at) / 3600)::bigint * 3600 AS created_hour
        FROM webhook_deliveries WHERE created_at >= now() - interval '48 hours') d
    GROUP BY tenant_id, webhook_id, state, created_hour;

CREATE OR REPLACE FUNCTION webhook_delivery_state_count() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_state TEXT := CASE WHEN OLD.status IN ('pending', 'sending') THEN '' ELSE OLD.status END;
    new_state TEXT := CASE WHEN NEW.status IN ('pending', 'sending') THEN '' ELSE NEW.status END;
BEGIN
    INSERT INTO webhook_delivery_counts (id, tenant_id, webhook_id, event_type, state, created_hour, delta) VALUES
        (gen_random_uuid()::text, OLD.tenant_id, OLD.webhook_id, OLD.event_type, old_state, 0, -1),
        (gen_random_uuid()::text, NEW.tenant_id, NEW.webhook_id, NEW.event_type, new_state, 0, 1),
        (gen_random_uuid()::text, OLD.tenant_id, OLD.webhook_id, '', old_state,
            floor(extract(epoch FROM OLD.created_at) / 3600)::bigint * 3600, -1),
        (gen_random_uuid()::text, NEW.tenant_id, NEW.webhook_id, '', new_state,
            floor(extract(epoch FROM NEW.created_at) / 3600)::bigint * 3600, 1);
    RETURN NULL;
END $$;
