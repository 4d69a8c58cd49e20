-- 0005: device health checks (src/check.c). One row per check: the figures that are read back after a restart
-- (the last check of each device, for GET /devices, /metrics and /select) and the whole document as the API
-- shows it. A check left 'queued' or 'running' by a crash becomes 'interrupted' at the next start.

CREATE TABLE checks (
	id TEXT PRIMARY KEY,
	device TEXT NOT NULL,           -- device id as it was when the check ran
	level TEXT NOT NULL,            -- quick | long
	state TEXT NOT NULL,            -- queued | running | done | interrupted
	verdict TEXT,                   -- pass | warn | fail, once done
	created_at INTEGER NOT NULL,
	finished_at INTEGER,
	gflops REAL,                    -- best verified sgemm GFLOP/s
	gbytes_per_s REAL,              -- best verified triad GB/s
	doc TEXT NOT NULL               -- the check as JSON (GET /devices/{id}/checks/{check_id})
);
CREATE INDEX checks_by_device_created ON checks (device, created_at, id);
CREATE INDEX checks_unfinished ON checks (state) WHERE state IN ('queued', 'running');
