-- jobs 0001: the leases of running jobs (see package jobs, "Failover"). A
-- row belongs to one River job; run is the number of the run holding (or
-- last holding) it, the fencing token (River's attempt plus the job's
-- snoozes: one higher at every fetch); holder is the process renewing it
-- (NULL once the run returned, or was declared dead by a sweep);
-- expires_at is when it lapses unless renewed (NULL: the run completed the
-- job, or was declared dead); crashes counts the runs declared dead.
CREATE TABLE job_leases (
    job_id INTEGER PRIMARY KEY,
    run INTEGER NOT NULL,
    holder TEXT,
    expires_at TIMESTAMP,
    crashes INTEGER NOT NULL DEFAULT 0
);
