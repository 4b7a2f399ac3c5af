-- webhooks 0008: the sweep folds the delivery counts written since its last
-- fold into a table of their sums, rather than grouping every count kept.
--
-- The kept counts (0005-0007) were one table of insert-only delta rows,
-- which the sweep folded once a second by grouping the whole table to find
-- the counts kept in more than one row: its cost grew with every webhook,
-- event type, state and hour ever counted, not with the deliveries since
-- (in a 30-minute PostgreSQL soak, which creates webhooks all along, 12 ms
-- a sweep at the start and 57 ms at the end; its deletion of the hours
-- older than two days scanned the table too, 0.7 to 18 ms).
--
-- webhook_delivery_counts now holds only the deltas written since the last
-- fold (by InsertDeliveries and the state trigger, unchanged), and
-- webhook_delivery_folded_counts one row per count (webhook, event type,
-- state and hour) with the sum folded so far, written only by the fold: it
-- moves a count's deltas into its sum (a DELETE ... RETURNING of the
-- deltas, then an upsert of their sum in the same transaction). The fold
-- reads the deltas table, which holds a second of writes; the writers pay
-- no index more than before. Reads sum both tables, through the view
-- webhook_delivery_kept_counts. The hours older than two days are deleted
-- from the sums through their index by hour.

CREATE TABLE webhook_delivery_folded_counts (
    tenant_id TEXT NOT NULL,
    created_hour BIGINT NOT NULL,
    webhook_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    state TEXT NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, created_hour, webhook_id, event_type, state) INCLUDE (n)
);
CREATE INDEX webhook_delivery_folded_counts_hour_idx ON webhook_delivery_folded_counts (created_hour) WHERE created_hour > 0;

-- The counts so far become sums: the rows moved are exactly those deleted
-- (one statement), so a delta that a process still running the earlier
-- version writes meanwhile stays a delta, folded by the next sweep.
WITH moved AS (DELETE FROM webhook_delivery_counts RETURNING tenant_id, created_hour, webhook_id, event_type, state, delta)
INSERT INTO webhook_delivery_folded_counts (tenant_id, created_hour, webhook_id, event_type, state, n)
    SELECT tenant_id, created_hour, webhook_id, event_type, state, sum(delta) FROM moved
    GROUP BY tenant_id, created_hour, webhook_id, event_type, state HAVING sum(delta) <> 0;

CREATE VIEW webhook_delivery_kept_counts AS
    SELECT tenant_id, created_hour, webhook_id, event_type, state, delta AS n FROM webhook_delivery_counts
    UNION ALL
    SELECT tenant_id, created_hour, webhook_id, event_type, state, n FROM webhook_delivery_folded_counts;
