-- Fenced leases and lanes for the job runner.
-- `lease_gen` grows by one at every claim: a worker holds (id, lease_gen), and completing,
-- failing, renewing or applying a job's result checks it, so a worker whose lease ran out
-- and was taken over cannot write anything for that job any more.
-- `lane` orders claims: 0 interactive (a command is waiting), 1 memory, 2 ingest.
ALTER TABLE jobs ADD COLUMN lease_gen INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN lane INTEGER NOT NULL DEFAULT 1 CHECK (lane BETWEEN 0 AND 2);
DROP INDEX jobs_ready;
CREATE INDEX jobs_ready ON jobs (state, lane, run_after, id);
