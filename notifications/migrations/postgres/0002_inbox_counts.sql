-- notifications 0002: the inbox's total and unread count without reading
-- every notification.
--
-- How many notifications each inbox holds, read and unread (state
-- 'read' or 'unread'), written by every insert, read mark and delete in
-- its own transaction (store.Counts: a key's count is the sum of its
-- slots' rows), so that the inbox's total and unread count are sums of a
-- few rows.
CREATE TABLE notification_counts (
    tenant_id TEXT NOT NULL,
    recipient TEXT NOT NULL,
    state TEXT NOT NULL,
    slot INTEGER NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, recipient, state, slot)
);
-- The counts of the notifications stored before this migration.
INSERT INTO notification_counts (tenant_id, recipient, state, slot, n)
    SELECT tenant_id, recipient, CASE WHEN read_at IS NULL THEN 'unread' ELSE 'read' END, 0, count(*) FROM notifications
    GROUP BY tenant_id, recipient, CASE WHEN read_at IS NULL THEN 'unread' ELSE 'read' END;
-- The unread page, newest first, from an index of the unread
-- notifications only (those read are skipped without being read).
CREATE INDEX notifications_unread_idx ON notifications (tenant_id, recipient, created_at, id) WHERE read_at IS NULL;
