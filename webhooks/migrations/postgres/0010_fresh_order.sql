-- webhooks 0010: a webhook's deliveries never attempted, in the order
-- they are sent, apart from those waiting for a retry.
--
-- A drain asks whether its webhook has a delivery due (Store.Due) and
-- takes the next ones (Store.ClaimDeliveries). Both walked the queue
-- index (0004: every delivery still to send, by event and id) and
-- skipped, row by row, each delivery whose retry was not yet due: for a
-- receiver that keeps failing, the whole backlog of retries on every
-- wake. Now each reads two indexes: this one, of the deliveries not yet
-- attempted (next_retry_at unset), in event order, and the retry index
-- (0009) up to now. A delivery leaves this index when its first attempt
-- fails (its next retry is set) or it is sent.
CREATE INDEX webhook_deliveries_fresh_idx ON webhook_deliveries (webhook_id, event_id, id)
    WHERE status IN ('pending', 'sending') AND next_retry_at IS NULL;

-- The queue index of 0004 held both sets; every read of deliveries still
-- to send now reads the two indexes instead (the sweeps' too: Stuck and
-- Owners), so it goes, and a delivery written costs no more index entries
-- than before.
DROP INDEX webhook_deliveries_queue_idx;
