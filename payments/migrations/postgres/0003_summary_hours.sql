-- payments 0003: what the transactions created in each hour add up to,
-- kept, so that a summary of a recent window (Service.Summary, the
-- dashboard's widget) reads a few rows per hour rather than every
-- transaction of the window.
--
-- One count per tenant, organization ('' for none), hour of creation
-- (created_hour: the hour's start in Unix seconds), currency and status:
-- how many transactions (n) and the sum of their captured amounts
-- (captured). Like the transactions list's counts (0002) a count is
-- spread over slots, so that concurrent writers of one key seldom wait
-- for each other's commit; its value is the sum of its rows. A writer's
-- slot is its connection's (the backend's process id modulo 8), the same
-- for every row it writes: with a slot picked at random per row, two
-- transactions that each add to a key and later subtract from it (a
-- session created pending, then settled) could lock each other's slots
-- in opposite orders, a deadlock PostgreSQL detects only after its
-- deadlock_timeout (a second). The triggers below keep it in the writing
-- transaction, from the row's old and new values, on every insert and
-- every change of status or captured amount (and of what places a
-- transaction in a count), and every delete.
CREATE TABLE payment_summary_hours (
    tenant_id TEXT NOT NULL,
    organization_id TEXT NOT NULL,
    created_hour BIGINT NOT NULL,
    currency_code TEXT NOT NULL,
    status TEXT NOT NULL,
    slot INTEGER NOT NULL,
    n BIGINT NOT NULL,
    captured BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, created_hour, organization_id, currency_code, status, slot)
);
INSERT INTO payment_summary_hours (tenant_id, organization_id, created_hour, currency_code, status, slot, n, captured)
    SELECT tenant_id, COALESCE(organization_id, ''), floor(extract(epoch FROM created_at) / 3600)::bigint * 3600,
        currency_code, status, 0, count(*), sum(captured_amount)
    FROM payment_transactions
    GROUP BY tenant_id, COALESCE(organization_id, ''), floor(extract(epoch FROM created_at) / 3600)::bigint * 3600,
        currency_code, status;

-- payment_summary_add adds n transactions and captured to a count, on the
-- connection's slot (PL/pgSQL, whose statements' plans are kept for
-- the session: an SQL function's would be planned on every call).
CREATE FUNCTION payment_summary_add(t payment_transactions, dn BIGINT, dcaptured BIGINT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO payment_summary_hours AS k (tenant_id, organization_id, created_hour, currency_code, status, slot, n, captured)
    VALUES (t.tenant_id, COALESCE(t.organization_id, ''), floor(extract(epoch FROM t.created_at) / 3600)::bigint * 3600,
        t.currency_code, t.status, pg_backend_pid() % 8, dn, dcaptured)
    ON CONFLICT (tenant_id, created_hour, organization_id, currency_code, status, slot)
    DO UPDATE SET n = k.n + excluded.n, captured = k.captured + excluded.captured;
END $$;

CREATE FUNCTION payment_summary_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM payment_summary_add(NEW, 1, NEW.captured_amount);
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM payment_summary_add(OLD, -1, -OLD.captured_amount);
    ELSIF OLD.status = NEW.status AND OLD.tenant_id = NEW.tenant_id AND OLD.organization_id IS NOT DISTINCT FROM NEW.organization_id
            AND OLD.currency_code = NEW.currency_code AND OLD.created_at = NEW.created_at THEN
        PERFORM payment_summary_add(NEW, 0, NEW.captured_amount - OLD.captured_amount);
    ELSIF OLD.status < NEW.status THEN -- two keys, taken in key order
        PERFORM payment_summary_add(OLD, -1, -OLD.captured_amount);
        PERFORM payment_summary_add(NEW, 1, NEW.captured_amount);
    ELSE
        PERFORM payment_summary_add(NEW, 1, NEW.captured_amount);
        PERFORM payment_summary_add(OLD, -1, -OLD.captured_amount);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER payment_transactions_summary_insert AFTER INSERT ON payment_transactions
    FOR EACH ROW EXECUTE FUNCTION payment_summary_count();
CREATE TRIGGER payment_transactions_summary_update
    AFTER UPDATE OF status, captured_amount, tenant_id, organization_id, currency_code, created_at ON payment_transactions
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.captured_amount IS DISTINCT FROM NEW.captured_amount
        OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id OR OLD.organization_id IS DISTINCT FROM NEW.organization_id
        OR OLD.currency_code IS DISTINCT FROM NEW.currency_code OR OLD.created_at IS DISTINCT FROM NEW.created_at)
    EXECUTE FUNCTION payment_summary_count();
CREATE TRIGGER payment_transactions_summary_delete AFTER DELETE ON payment_transactions
    FOR EACH ROW EXECUTE FUNCTION payment_summary_count();
