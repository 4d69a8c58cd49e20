-- 0009: a job's transfers by direction, as its answer says them: host to device (the inputs the host gave) and
-- device to host (the output asked for, the sample), each in ms and bytes; transfer_ms and transfer_bytes stay
-- their sums. NULL for jobs an earlier version recorded.
ALTER TABLE jobs ADD COLUMN upload_ms REAL;
ALTER TABLE jobs ADD COLUMN upload_bytes REAL;
ALTER TABLE jobs ADD COLUMN download_ms REAL;
ALTER TABLE jobs ADD COLUMN download_bytes REAL;
