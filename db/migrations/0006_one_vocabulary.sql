-- 0006: one vocabulary. A job keeps who made it (trigger: api, cli or check, with the check's id) and the peak
-- figures its throughput was a fraction of, so a job read back shows the fraction it had when it finished, not one
-- against a newer peak (rows of earlier versions kept no peak: their fraction is unknown and left out). A health
-- check ends as a job does: 'done' becomes 'succeeded', or 'failed' when an error stopped it (its device gone), in
-- the row and in its document, whose tests read queued, running, succeeded or failed ('pending' and 'done' before).
ALTER TABLE jobs ADD COLUMN trigger TEXT;
ALTER TABLE jobs ADD COLUMN check_id TEXT;
ALTER TABLE jobs ADD COLUMN peak_gflops REAL;
ALTER TABLE jobs ADD COLUMN peak_gbytes_per_s REAL;
UPDATE checks SET state = CASE WHEN json_extract(doc, '$.error') IS NULL THEN 'succeeded' ELSE 'failed' END
	WHERE state = 'done';
UPDATE checks SET doc = json_set(doc, '$.state', state) WHERE json_extract(doc, '$.state') = 'done';
UPDATE checks SET doc = json_set(doc, '$.tests[0].state', CASE json_extract(doc, '$.tests[0].state')
	WHEN 'pending' THEN 'queued' WHEN 'done' THEN CASE WHEN json_extract(doc, '$.tests[0].failure') IS NULL
	THEN 'succeeded' ELSE 'failed' END END) WHERE json_extract(doc, '$.tests[0].state') IN ('pending', 'done');
UPDATE checks SET doc = json_set(doc, '$.tests[1].state', CASE json_extract(doc, '$.tests[1].state')
	WHEN 'pending' THEN 'queued' WHEN 'done' THEN CASE WHEN json_extract(doc, '$.tests[1].failure') IS NULL
	THEN 'succeeded' ELSE 'failed' END END) WHERE json_extract(doc, '$.tests[1].state') IN ('pending', 'done');
UPDATE checks SET doc = json_set(doc, '$.tests[2].state', CASE json_extract(doc, '$.tests[2].state')
	WHEN 'pending' THEN 'queued' WHEN 'done' THEN CASE WHEN json_extract(doc, '$.tests[2].failure') IS NULL
	THEN 'succeeded' ELSE 'failed' END END) WHERE json_extract(doc, '$.tests[2].state') IN ('pending', 'done');
UPDATE checks SET doc = json_set(doc, '$.tests[3].state', CASE json_extract(doc, '$.tests[3].state')
	WHEN 'pending' THEN 'queued' WHEN 'done' THEN CASE WHEN json_extract(doc, '$.tests[3].failure') IS NULL
	THEN 'succeeded' ELSE 'failed' END END) WHERE json_extract(doc, '$.tests[3].state') IN ('pending', 'done');
