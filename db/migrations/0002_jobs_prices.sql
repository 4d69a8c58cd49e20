-- 0002: jobs run by the executor, and price overrides set through PUT /cost/prices.

CREATE TABLE jobs (
	id TEXT PRIMARY KEY,
	device TEXT NOT NULL,           -- device id as it was when the job ran
	kernel TEXT NOT NULL,           -- saxpy | dot | sgemm | softmax | triad
	backend TEXT,
	state TEXT NOT NULL,            -- queued | running | succeeded | failed | timeout | cancelled | interrupted
	submitted_at INTEGER,
	started_at INTEGER,
	finished_at INTEGER,
	n INTEGER, m INTEGER, k INTEGER,
	flops REAL,                     -- floating-point operations the job performed
	bytes REAL,                     -- bytes it moved
	kernel_ms REAL,
	total_ms REAL,
	cost_usd REAL,
	error TEXT
);
CREATE INDEX jobs_by_device_kernel ON jobs (device, kernel, finished_at);
CREATE INDEX jobs_by_finished ON jobs (finished_at);
CREATE INDEX jobs_unfinished ON jobs (state) WHERE state IN ('queued', 'running');

-- selector names what a row prices: a device id, an accelerator type or a device type.
CREATE TABLE prices (
	selector TEXT NOT NULL CHECK (selector IN ('device', 'accelerator_type', 'type')),
	value TEXT NOT NULL,
	usd_per_hour REAL NOT NULL,
	usd_per_hour_spot REAL,
	unit TEXT,
	note TEXT,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (selector, value)
) WITHOUT ROWID;
