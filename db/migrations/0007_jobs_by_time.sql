-- 0007: GET /run lists the history's jobs newest first, after those still in memory (after a restart, all of
-- them); without an index on the submission time that listing read every job.
CREATE INDEX jobs_by_submitted ON jobs (submitted_at, id);
