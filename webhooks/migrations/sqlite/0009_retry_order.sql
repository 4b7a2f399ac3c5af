-- webhooks 0009: a webhook's next retry time, read from an index in that
-- order.
--
-- When none of a webhook's deliveries is due, its drain asks for the
-- earliest retry to come (Store.NextDue) to know when to wake. That read
-- went through the queue index (0004: the webhook's deliveries still to
-- send, by event and id) and sorted every delivery waiting for a retry, so
-- its cost followed the backlog of a receiver that keeps failing (in a
-- 30-minute PostgreSQL soak, whose receivers fail on purpose, 2.5 buffers a
-- call at the start and 48 at the end). This index holds only the
-- deliveries waiting for a retry (next_retry_at set), in retry order, so
-- the read takes its first entry. A delivery enters it when an attempt
-- fails or a retry is asked for, not when it is enqueued, and leaves it
-- when it is sent or given up.
CREATE INDEX webhook_deliveries_retry_idx ON webhook_deliveries (webhook_id, next_retry_at)
    WHERE status IN ('pending', 'sending') AND next_retry_at IS NOT NULL;
