-- 0001: the device registry, raw samples and their minute and hour rollups.
-- Times are milliseconds since the Unix epoch (UTC). Values that were not measured are NULL, never a sentinel.

CREATE TABLE devices (
	key INTEGER PRIMARY KEY,
	id TEXT NOT NULL UNIQUE,        -- "cpu:0", "gpu:1", "tpu:3"
	type TEXT NOT NULL,             -- cpu | gpu | tpu
	model TEXT,
	accelerator_type TEXT,          -- normalised, e.g. H100, TPU-V6E
	uuid TEXT,
	usd_per_hour REAL,              -- the built-in on-demand price last seen, so devices that left keep one
	price_source TEXT,
	first_seen INTEGER NOT NULL,
	last_seen INTEGER NOT NULL
);

-- One row per device per sampling tick. dt is the wall time the sample stands for (the sampling interval), so
-- accrued time and cost are sums of dt rather than guesses from row counts.
CREATE TABLE samples (
	device INTEGER NOT NULL,        -- devices.key
	ts INTEGER NOT NULL,
	dt INTEGER NOT NULL,
	source INTEGER NOT NULL,        -- 0 presence only, 1 /proc/stat, 2 cgroup cpu.stat, 3 device telemetry, 4 executor
	util REAL,                      -- utilisation ratio 0..1
	mem REAL,                       -- memory used, bytes
	temp REAL,                      -- degrees Celsius
	power REAL,                     -- watts
	PRIMARY KEY (device, ts)
) WITHOUT ROWID;

-- Rollups: ts is the start of the minute (hour); present_ms the time covered by samples, util_ms the part of it
-- with a known utilisation and busy_ms the utilisation-weighted time (so util avg = busy_ms / util_ms).
CREATE TABLE rollup_minute (
	device INTEGER NOT NULL,
	ts INTEGER NOT NULL,
	n INTEGER NOT NULL,
	present_ms INTEGER NOT NULL,
	util_ms INTEGER NOT NULL,
	busy_ms REAL NOT NULL,
	util_max REAL,
	mem_avg REAL, mem_max REAL,
	temp_avg REAL, temp_max REAL,
	power_avg REAL, power_max REAL,
	PRIMARY KEY (device, ts)
) WITHOUT ROWID;

CREATE TABLE rollup_hour (
	device INTEGER NOT NULL,
	ts INTEGER NOT NULL,
	n INTEGER NOT NULL,
	present_ms INTEGER NOT NULL,
	util_ms INTEGER NOT NULL,
	busy_ms REAL NOT NULL,
	util_max REAL,
	mem_avg REAL, mem_max REAL,
	temp_avg REAL, temp_max REAL,
	power_avg REAL, power_max REAL,
	PRIMARY KEY (device, ts)
) WITHOUT ROWID;
