-- 0009: a job's transfers by direction, as its answer says them: host to device (the inputs the host gave) and
-- device to host (the output asked for, the sample), each in ms and bytes; transfer_ms and transfer_bytes stay
-- their sums; and the host memory they used ('pinned' or 'pageable'). NULL for jobs an earlier version recorded
-- and for jobs that moved no data of the host's.
ALTER TABLE jobs ADD COLUMN upload_ms REAL;
ALTER TABLE jobs ADD COLUMN upload_bytes REAL;
ALTER TABLE jobs ADD COLUMN download_ms REAL;
ALTER TABLE jobs ADD COLUMN download_bytes REAL;
ALTER TABLE jobs ADD COLUMN transfer_memory TEXT;
