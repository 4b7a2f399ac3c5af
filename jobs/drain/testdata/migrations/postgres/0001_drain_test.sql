-- The tests' queue table (the shape Table documents) and work table.
CREATE TABLE drain_test_queues (
    qkey TEXT PRIMARY KEY,
    grp TEXT NOT NULL,
    owner TEXT,
    lease_until TIMESTAMPTZ,
    queued BOOLEAN NOT NULL DEFAULT FALSE,
    queued_at TIMESTAMPTZ,
    wake_at TIMESTAMPTZ
);
CREATE TABLE drain_test_items (
    id TEXT PRIMARY KEY,
    grp TEXT NOT NULL,
    qkey TEXT NOT NULL,
    seq INTEGER NOT NULL,
    done BOOLEAN NOT NULL DEFAULT FALSE,
    due_at TIMESTAMPTZ
);
