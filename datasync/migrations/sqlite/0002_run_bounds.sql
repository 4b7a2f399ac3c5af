-- datasync 0002: what a run keeps so that it stays within its caller's
-- reach and ends, across resumed jobs: organization_ids are the
-- organizations it may read (a JSON array; NULL: every organization of
-- the tenant), page_attempts the attempts made at the page at its cursor,
-- seen_cursors the hashes of the cursors it read (a JSON object, '' for
-- none; see datasync/cursors.go).
ALTER TABLE data_sync_runs ADD COLUMN organization_ids TEXT;
ALTER TABLE data_sync_runs ADD COLUMN page_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE data_sync_runs ADD COLUMN seen_cursors TEXT NOT NULL DEFAULT '';
