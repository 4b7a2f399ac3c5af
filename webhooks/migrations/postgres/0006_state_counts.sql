-- webhooks 0006: the deliveries list's totals by event type and status,
-- and the webhooks list's totals, without reading every row.
--
-- The deliveries' kept counts (0005) gain the event type and the state:
-- '' for a delivery still to send (pending or sending), otherwise its
-- final status (delivered, failed or expired). A count is still the sum
-- of insert-only delta rows, folded by the sweep: InsertDeliveries adds
-- one row per webhook and event type it wrote to (state ''), and a change
-- of a delivery's state (sent, failed, expired, retried) adds a row of -1
-- for the old state and one of +1 for the new, written by the trigger
-- below in the changing statement's transaction, from the row's old and
-- new values as the database locked them (so concurrent changes of one
-- delivery never count twice). Moving between pending and sending, what
-- the drain does most, changes no state and writes nothing.
DROP TABLE webhook_delivery_counts;
CREATE TABLE webhook_delivery_counts (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    webhook_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    state TEXT NOT NULL,
    delta BIGINT NOT NULL
);
CREATE INDEX webhook_delivery_counts_webhook_idx ON webhook_delivery_counts (tenant_id, webhook_id, event_type, state, delta);
INSERT INTO webhook_delivery_counts (id, tenant_id, webhook_id, event_type, state, delta)
    SELECT webhook_id || ':' || event_type || ':' || state, tenant_id, webhook_id, event_type, state, count(*)
    FROM (SELECT tenant_id, webhook_id, event_type,
            CASE WHEN status IN ('pending', 'sending') THEN '' ELSE status END AS state FROM webhook_deliveries) d
    GROUP BY tenant_id, webhook_id, event_type, state;

CREATE FUNCTION webhook_delivery_state_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_delivery_counts (id, tenant_id, webhook_id, event_type, state, delta) VALUES
        (gen_random_uuid()::text, OLD.tenant_id, OLD.webhook_id, OLD.event_type,
            CASE WHEN OLD.status IN ('pending', 'sending') THEN '' ELSE OLD.status END, -1),
        (gen_random_uuid()::text, NEW.tenant_id, NEW.webhook_id, NEW.event_type,
            CASE WHEN NEW.status IN ('pending', 'sending') THEN '' ELSE NEW.status END, 1);
    RETURN NULL;
END $$;
CREATE TRIGGER webhook_deliveries_state_count AFTER UPDATE OF status ON webhook_deliveries FOR EACH ROW
    WHEN ((CASE WHEN OLD.status IN ('pending', 'sending') THEN '' ELSE OLD.status END)
        IS DISTINCT FROM (CASE WHEN NEW.status IN ('pending', 'sending') THEN '' ELSE NEW.status END))
    EXECUTE FUNCTION webhook_delivery_state_count();

-- How many live webhooks a tenant has, by organization ('' for none) and
-- whether they are active: one row each, kept by the trigger below in
-- the writing transaction (webhooks are written rarely, so writers
-- waiting on a count row's lock is no cost; a change that moves a
-- webhook between two rows takes them in key order, so two such changes
-- never wait on each other crosswise).
CREATE TABLE webhook_list_counts (
    tenant_id TEXT NOT NULL,
    organization_id TEXT NOT NULL,
    is_active BOOLEAN NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, organization_id, is_active)
);
INSERT INTO webhook_list_counts (tenant_id, organization_id, is_active, n)
    SELECT tenant_id, COALESCE(organization_id, ''), is_active, count(*) FROM webhooks WHERE deleted_at IS NULL
    GROUP BY tenant_id, COALESCE(organization_id, ''), is_active;

CREATE FUNCTION webhook_list_count() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_live BOOLEAN := TG_OP <> 'INSERT' AND OLD.deleted_at IS NULL;
    new_live BOOLEAN := TG_OP <> 'DELETE' AND NEW.deleted_at IS NULL;
    old_key TEXT;
    new_key TEXT;
BEGIN
    IF old_live THEN
        old_key := OLD.tenant_id || ':' || COALESCE(OLD.organization_id, '') || ':' || OLD.is_active::text;
    END IF;
    IF new_live THEN
        new_key := NEW.tenant_id || ':' || COALESCE(NEW.organization_id, '') || ':' || NEW.is_active::text;
    END IF;
    IF old_live AND new_live AND old_key = new_key THEN
        RETURN NULL;
    END IF;
    IF new_live AND (NOT old_live OR new_key < old_key) THEN
        INSERT INTO webhook_list_counts AS k (tenant_id, organization_id, is_active, n)
        VALUES (NEW.tenant_id, COALESCE(NEW.organization_id, ''), NEW.is_active, 1)
        ON CONFLICT (tenant_id, organization_id, is_active) DO UPDATE SET n = k.n + 1;
        new_live := FALSE;
    END IF;
    IF old_live THEN
        UPDATE webhook_list_counts SET n = n - 1
        WHERE tenant_id = OLD.tenant_id AND organization_id = COALESCE(OLD.organization_id, '') AND is_active = OLD.is_active;
    END IF;
    IF new_live THEN
        INSERT INTO webhook_list_counts AS k (tenant_id, organization_id, is_active, n)
        VALUES (NEW.tenant_id, COALESCE(NEW.organization_id, ''), NEW.is_active, 1)
        ON CONFLICT (tenant_id, organization_id, is_active) DO UPDATE SET n = k.n + 1;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER webhooks_list_count AFTER INSERT OR DELETE OR UPDATE OF deleted_at, is_active, organization_id, tenant_id
    ON webhooks FOR EACH ROW EXECUTE FUNCTION webhook_list_count();

-- The webhooks list's pages, newest first (created_at, then id,
-- descending), read from the index in order.
DROP INDEX webhooks_tenant_idx;
CREATE INDEX webhooks_tenant_idx ON webhooks (tenant_id, created_at, id) WHERE deleted_at IS NULL;
