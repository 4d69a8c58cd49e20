-- 0004: job rows use the API's state names ('timeout' becomes 'timed_out'), keep the reason of an error as the API
-- answered it, and the time a job waited and spent on copies, so a job read back from the history is the same
-- document as the job in memory.
UPDATE jobs SET state = 'timed_out' WHERE state = 'timeout';
ALTER TABLE jobs ADD COLUMN reason TEXT;
ALTER TABLE jobs ADD COLUMN queued_ms REAL;
ALTER TABLE jobs ADD COLUMN transfer_ms REAL;
-- a failed job of an earlier version failed on its device (the reason it was answered with)
UPDATE jobs SET reason = CASE state WHEN 'interrupted' THEN 'INTERRUPTED' WHEN 'timed_out' THEN 'TIMED_OUT'
	WHEN 'cancelled' THEN 'CANCELLED' ELSE 'DEVICE_FAILURE' END
	WHERE error IS NOT NULL AND state NOT IN ('succeeded', 'queued', 'running');
