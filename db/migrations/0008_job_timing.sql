-- 0008: where a job's time went, as its answer says it: the program's setup (build or cache load), making the
-- generated inputs, verifying the result, and the bytes the transfers moved (their rate is transfer_bytes over
-- transfer_ms). NULL for jobs an earlier version recorded.
ALTER TABLE jobs ADD COLUMN setup_ms REAL;
ALTER TABLE jobs ADD COLUMN generate_ms REAL;
ALTER TABLE jobs ADD COLUMN verify_ms REAL;
ALTER TABLE jobs ADD COLUMN transfer_bytes REAL;
