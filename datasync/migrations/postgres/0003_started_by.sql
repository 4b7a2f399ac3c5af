-- datasync 0003: who started a run (store.Scope.ActorID: a user id, or
-- "api_key:<id>"), told when the run fails. NULL: unknown (runs started
-- before this column, or by a caller without an actor).
ALTER TABLE data_sync_runs ADD COLUMN started_by TEXT;
