-- payments 0003: what the transactions created in each hour add up to,
-- kept, so that a summary of a recent window (Service.Summary, the
-- dashboard's widget) reads a few rows per hour rather than every
-- transaction of the window.
--
-- One count per tenant, organization ('' for none), hour of creation
-- (created_hour: the hour's start in Unix seconds), currency and status:
-- how many transactions (n) and the sum of their captured amounts
-- (captured). The slot column is the PostgreSQL migration's (there a
-- writer's connection picks it); the single writer here uses slot 0. The
-- triggers below keep the counts in the writing transaction, from the
-- row's old and new values, on every insert, every change of status or
-- captured amount (and of what places a transaction in a count), and
-- every delete.
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
    SELECT tenant_id, COALESCE(organization_id, ''), CAST(strftime('%s', created_at) AS INTEGER) / 3600 * 3600,
        currency_code, status, 0, count(*), sum(captured_amount)
    FROM payment_transactions
    GROUP BY tenant_id, COALESCE(organization_id, ''), CAST(strftime('%s', created_at) AS INTEGER) / 3600 * 3600,
        currency_code, status;

CREATE TRIGGER payment_transactions_summary_insert AFTER INSERT ON payment_transactions
BEGIN
    INSERT INTO payment_summary_hours (tenant_id, organization_id, created_hour, currency_code, status, slot, n, captured)
    VALUES (NEW.tenant_id, COALESCE(NEW.organization_id, ''), CAST(strftime('%s', NEW.created_at) AS INTEGER) / 3600 * 3600,
        NEW.currency_code, NEW.status, 0, 1, NEW.captured_amount)
    ON CONFLICT (tenant_id, created_hour, organization_id, currency_code, status, slot)
    DO UPDATE SET n = n + excluded.n, captured = captured + excluded.captured;
END;
CREATE TRIGGER payment_transactions_summary_update
    AFTER UPDATE OF status, captured_amount, tenant_id, organization_id, currency_code, created_at ON payment_transactions
    FOR EACH ROW WHEN OLD.status IS NOT NEW.status OR OLD.captured_amount IS NOT NEW.captured_amount
        OR OLD.tenant_id IS NOT NEW.tenant_id OR OLD.organization_id IS NOT NEW.organization_id
        OR OLD.currency_code IS NOT NEW.currency_code OR OLD.created_at IS NOT NEW.created_at
BEGIN
    INSERT INTO payment_summary_hours (tenant_id, organization_id, created_hour, currency_code, status, slot, n, captured)
    VALUES (OLD.tenant_id, COALESCE(OLD.organization_id, ''), CAST(strftime('%s', OLD.created_at) AS INTEGER) / 3600 * 3600,
        OLD.currency_code, OLD.status, 0, -1, -OLD.captured_amount)
    ON CONFLICT (tenant_id, created_hour, organization_id, currency_code, status, slot)
    DO UPDATE SET n = n + excluded.n, captured = captured + excluded.captured;
    INSERT INTO payment_summary_hours (tenant_id, organization_id, created_hour, currency_code, status, slot, n, captured)
    VALUES (NEW.tenant_id, COALESCE(NEW.organization_id, ''), CAST(strftime('%s', NEW.created_at) AS INTEGER) / 3600 * 3600,
        NEW.currency_code, NEW.status, 0, 1, NEW.captured_amount)
    ON CONFLICT (tenant_id, created_hour, organization_id, currency_code, status, slot)
    DO UPDATE SET n = n + excluded.n, captured = captured + excluded.captured;
END;
CREATE TRIGGER payment_transactions_summary_delete AFTER DELETE ON payment_transactions
BEGIN
    INSERT INTO payment_summary_hours (tenant_id, organization_id, created_hour, currency_code, status, slot, n, captured)
    VALUES (OLD.tenant_id, COALESCE(OLD.organization_id, ''), CAST(strftime('%s', OLD.created_at) AS INTEGER) / 3600 * 3600,
        OLD.currency_code, OLD.status, 0, -1, -OLD.captured_amount)
    ON CONFLICT (tenant_id, created_hour, organization_id, currency_code, status, slot)
    DO UPDATE SET n = n + excluded.n, captured = captured + excluded.captured;
END;
