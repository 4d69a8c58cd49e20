/* store_sql: every SQL text acceld runs against the store, one constant per statement id, parameters bound. */
#include "store/store_int.h"

#define ROLLUP_MINUTE_SQL                                                                                      \
	"INSERT OR REPLACE INTO rollup_minute (device, ts, n, present_ms, util_ms, busy_ms, util_max, mem_avg, "   \
	"mem_max, temp_avg, temp_max, power_avg, power_max) "                                                   \
	"SELECT device, ts / 60000 * 60000, count(*), sum(dt), total(CASE WHEN util IS NOT NULL THEN dt END), "    \
	"total(util * dt), max(util), avg(mem), max(mem), avg(temp), max(temp), avg(power), max(power) "          \
	"FROM samples WHERE device IN (SELECT key FROM devices) AND ts >= ?1 AND ts < ?2 GROUP BY device, ts / 60000"

#define ROLLUP_HOUR_SQL                                                                                        \
	"INSERT OR REPLACE INTO rollup_hour (device, ts, n, present_ms, util_ms, busy_ms, util_max, mem_avg, "     \
	"mem_max, temp_avg, temp_max, power_avg, power_max) "                                                   \
	"SELECT device, ts / 3600000 * 3600000, sum(n), sum(present_ms), sum(util_ms), total(busy_ms), "           \
	"max(util_max), total(mem_avg * n) / sum(CASE WHEN mem_avg IS NOT NULL THEN n END), max(mem_max), "       \
	"total(temp_avg * n) / sum(CASE WHEN temp_avg IS NOT NULL THEN n END), max(temp_max), "                  \
	"total(power_avg * n) / sum(CASE WHEN power_avg IS NOT NULL THEN n END), max(power_max) "                \
	"FROM rollup_minute WHERE device IN (SELECT key FROM devices) AND ts >= ?1 AND ts < ?2 "                 \
	"GROUP BY device, ts / 3600000"

/* ?1 device key, [?2, ?3) the rows' range, ?4 the first bucket's start, ?5 the bucket width */
#define RANGE "WHERE device = ?1 AND ts >= ?2 AND ts < ?3 "
#define BUCKET "SELECT (ts - ?4) / ?5 AS b, "

#define SERIES_RAW(col) \
	BUCKET "total(" col "), count(" col "), max(" col "), sum(DISTINCT 1 << source) FROM samples " RANGE \
	       "AND " col " IS NOT NULL GROUP BY b"
#define SERIES_RAW_UTIL \
	BUCKET "total(util * dt), total(dt), max(util), sum(DISTINCT 1 << source) FROM samples " RANGE \
	       "AND util IS NOT NULL GROUP BY b"
#define SERIES_ROLL(table, col) \
	BUCKET "total(" col "_avg * n), total(n), max(" col "_max), 0 FROM " table " " RANGE "AND " col \
	       "_avg IS NOT NULL GROUP BY b"
#define SERIES_ROLL_UTIL(table) \
	BUCKET "total(busy_ms), total(util_ms), max(util_max), 0 FROM " table " " RANGE "AND util_ms > 0 GROUP BY b"
#define USAGE_ROLL(table) \
	BUCKET "total(present_ms), total(util_ms), total(busy_ms) FROM " table " " RANGE "GROUP BY b"

#define SER(tier, metric) [S_SERIES + (tier) * STORE_METRIC_COUNT + (metric)]

const char *const store_stmt_sql[S_COUNT] = {
	[S_DEVICE_UPSERT] =
		"INSERT INTO devices (id, type, model, accelerator_type, uuid, usd_per_hour, price_source, first_seen, "
		"last_seen) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (id) DO UPDATE SET "
		"type = excluded.type, model = excluded.model, accelerator_type = excluded.accelerator_type, "
		"uuid = excluded.uuid, usd_per_hour = excluded.usd_per_hour, price_source = excluded.price_source, "
		"first_seen = min(first_seen, excluded.first_seen), last_seen = max(last_seen, excluded.last_seen)",
	[S_DEVICE_ENSURE] = "INSERT INTO devices (id, type, first_seen, last_seen) VALUES (?1, ?2, ?3, ?3) "
			    "ON CONFLICT (id) DO NOTHING",
	[S_DEVICE_KEY] = "SELECT key FROM devices WHERE id = ?1",
	[S_SAMPLE] = "INSERT OR REPLACE INTO samples (device, ts, dt, source, util, mem, temp, power) "
		     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	[S_JOB] = "INSERT INTO jobs (id, device, kernel, backend, state, submitted_at, started_at, finished_at, n, m, "
		  "k, flops, bytes, kernel_ms, total_ms, cost_usd, error, reason, queued_ms, transfer_ms, trigger, "
		  "check_id, peak_gflops, peak_gbytes_per_s, setup_ms, generate_ms, verify_ms, transfer_bytes, "
		  "upload_ms, upload_bytes, download_ms, download_bytes, transfer_memory) VALUES "
		  "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, "
		  "?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33) "
		  "ON CONFLICT (id) DO UPDATE SET device = excluded.device, "
		  "kernel = excluded.kernel, backend = coalesce(excluded.backend, backend), "
		  /* a final state is never taken back by a late "running" */
		  "state = CASE WHEN excluded.state IN ('queued', 'running') AND state NOT IN ('queued', 'running') "
		  "THEN state ELSE excluded.state END, "
		  "submitted_at = coalesce(excluded.submitted_at, submitted_at), "
		  "started_at = coalesce(excluded.started_at, started_at), "
		  "finished_at = coalesce(excluded.finished_at, finished_at), n = coalesce(excluded.n, n), "
		  "m = coalesce(excluded.m, m), k = coalesce(excluded.k, k), flops = coalesce(excluded.flops, flops), "
		  "bytes = coalesce(excluded.bytes, bytes), kernel_ms = coalesce(excluded.kernel_ms, kernel_ms), "
		  "total_ms = coalesce(excluded.total_ms, total_ms), cost_usd = coalesce(excluded.cost_usd, cost_usd), "
		  "error = coalesce(excluded.error, error), reason = coalesce(excluded.reason, reason), "
		  "queued_ms = coalesce(excluded.queued_ms, queued_ms), "
		  "transfer_ms = coalesce(excluded.transfer_ms, transfer_ms), "
		  "trigger = coalesce(excluded.trigger, trigger), check_id = coalesce(excluded.check_id, check_id), "
		  "peak_gflops = coalesce(excluded.peak_gflops, peak_gflops), "
		  "peak_gbytes_per_s = coalesce(excluded.peak_gbytes_per_s, peak_gbytes_per_s), "
		  "setup_ms = coalesce(excluded.setup_ms, setup_ms), "
		  "generate_ms = coalesce(excluded.generate_ms, generate_ms), "
		  "verify_ms = coalesce(excluded.verify_ms, verify_ms), "
		  "transfer_bytes = coalesce(excluded.transfer_bytes, transfer_bytes), "
		  "upload_ms = coalesce(excluded.upload_ms, upload_ms), "
		  "upload_bytes = coalesce(excluded.upload_bytes, upload_bytes), "
		  "download_ms = coalesce(excluded.download_ms, download_ms), "
		  "download_bytes = coalesce(excluded.download_bytes, download_bytes), "
		  "transfer_memory = coalesce(excluded.transfer_memory, transfer_memory)",
	/* when it stopped is unknown: the row keeps no run time, so usage and cost do not count the downtime */
	[S_JOBS_INTERRUPT] = "UPDATE jobs SET state = 'interrupted', finished_at = coalesce(finished_at, ?1), "
			     "total_ms = coalesce(total_ms, 0), kernel_ms = coalesce(kernel_ms, 0), "
			     "error = coalesce(error, 'acceld stopped before the job finished; its run time is "
			     "unknown'), "
			     "reason = coalesce(reason, 'INTERRUPTED') "
			     "WHERE state IN ('queued', 'running')",
	[S_PRICES_CLEAR] = "DELETE FROM prices",
	[S_PRICE] = "INSERT OR REPLACE INTO prices (selector, value, usd_per_hour, usd_per_hour_spot, unit, note, "
		    "updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[S_ROLL_MINUTE] = ROLLUP_MINUTE_SQL,
	[S_ROLL_HOUR] = ROLLUP_HOUR_SQL,
	[S_DEL_RAW] = "DELETE FROM samples WHERE device IN (SELECT key FROM devices) AND ts < ?1",
	[S_DEL_MINUTE] = "DELETE FROM rollup_minute WHERE device IN (SELECT key FROM devices) AND ts < ?1",
	[S_DEL_HOUR] = "DELETE FROM rollup_hour WHERE device IN (SELECT key FROM devices) AND ts < ?1",
	[S_DEL_JOBS] = "DELETE FROM jobs WHERE finished_at < ?1",
	[S_WM_MINUTE] = "SELECT max((SELECT max(ts) FROM rollup_minute WHERE device = d.key)) FROM devices d",
	[S_WM_HOUR] = "SELECT max((SELECT max(ts) FROM rollup_hour WHERE device = d.key)) FROM devices d",
	[S_SAMPLES_MIN] = "SELECT min((SELECT min(ts) FROM samples WHERE device = d.key)) FROM devices d",
	[S_SAMPLES_MAX] = "SELECT max((SELECT max(ts) FROM samples WHERE device = d.key)) FROM devices d",
	[S_DEVICES] = "SELECT id, type, model, accelerator_type, uuid, usd_per_hour, price_source, first_seen, "
		      "last_seen FROM devices ORDER BY id",
	/* a job's time is the device time it ran, its queue wait left out (as its cost_usd is) */
	[S_JOBS_USAGE] = "SELECT count(*), total(max(0, coalesce(total_ms - coalesce(queued_ms, 0), "
			 "finished_at - started_at, 0))) / 1000.0, "
			 "total(cost_usd), count(cost_usd) FROM jobs WHERE device = ?1 AND finished_at >= ?2 "
			 "AND finished_at < ?3",
	[S_THROUGHPUT] = "SELECT total(flops), total(kernel_ms), count(*) FROM (SELECT flops, kernel_ms FROM jobs "
			 "WHERE device = ?1 AND kernel = ?2 AND state = 'succeeded' AND flops > 0 AND kernel_ms > 0 "
			 "ORDER BY finished_at DESC LIMIT 20)",
	[S_PRICES] = "SELECT selector, value, usd_per_hour, usd_per_hour_spot, unit, note, updated_at FROM prices "
		     "ORDER BY selector, value",
	[S_JOB_GET] = "SELECT " STORE_JOB_COLUMNS " FROM jobs WHERE id = ?1",
	/* ?1 a state or NULL; before (?2 submitted_at, ?3 id) when ?2 > 0; ?4 rows */
	[S_JOBS_RECENT] = "SELECT " STORE_JOB_COLUMNS " FROM jobs WHERE (?1 IS NULL OR state = ?1) AND (?2 = 0 OR "
			  "submitted_at < ?2 OR (submitted_at = ?2 AND id < ?3)) ORDER BY submitted_at DESC, id DESC "
			  "LIMIT ?4",
	[S_CHECK_PUT] = "INSERT OR REPLACE INTO checks (id, device, level, state, verdict, created_at, finished_at, "
			"gflops, gbytes_per_s, doc) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
	[S_CHECKS_EXPIRE] = "DELETE FROM checks WHERE finished_at < ?1",
	[S_CHECK_GET] = "SELECT doc FROM checks WHERE device = ?1 AND id = ?3",
	[S_CHECKS_FIRST] = "SELECT doc FROM checks WHERE device = ?1 ORDER BY created_at DESC, id DESC LIMIT ?2",
	/* the page after the check with id ?3 (store_checks_list has made sure it is one of the device's) */
	[S_CHECKS_AFTER] = "SELECT doc FROM checks WHERE device = ?1 AND (created_at, id) < (SELECT created_at, id "
			   "FROM checks WHERE id = ?3) ORDER BY created_at DESC, id DESC LIMIT ?2",
	[S_CHECKS_LATEST] = "SELECT doc FROM checks c WHERE state IN ('succeeded', 'failed', 'interrupted') AND id = "
			    "(SELECT id FROM checks WHERE device = c.device AND state IN ('succeeded', 'failed', "
			    "'interrupted') ORDER BY finished_at DESC, id DESC LIMIT 1)",
	[S_CHECKS_UNFINISHED] = "SELECT doc FROM checks WHERE state IN ('queued', 'running')",
	[S_BEGIN] = "BEGIN IMMEDIATE",
	[S_COMMIT] = "COMMIT",
	[S_USAGE + STORE_RAW] = BUCKET "total(dt), total(CASE WHEN util IS NOT NULL THEN dt END), total(util * dt) "
				       "FROM samples " RANGE "GROUP BY b",
	[S_USAGE + STORE_MINUTE] = USAGE_ROLL("rollup_minute"),
	[S_USAGE + STORE_HOUR] = USAGE_ROLL("rollup_hour"),
	SER(STORE_RAW, STORE_UTILIZATION) = SERIES_RAW_UTIL,
	SER(STORE_RAW, STORE_MEMORY_USED) = SERIES_RAW("mem"),
	SER(STORE_RAW, STORE_TEMPERATURE) = SERIES_RAW("temp"),
	SER(STORE_RAW, STORE_POWER) = SERIES_RAW("power"),
	SER(STORE_MINUTE, STORE_UTILIZATION) = SERIES_ROLL_UTIL("rollup_minute"),
	SER(STORE_MINUTE, STORE_MEMORY_USED) = SERIES_ROLL("rollup_minute", "mem"),
	SER(STORE_MINUTE, STORE_TEMPERATURE) = SERIES_ROLL("rollup_minute", "temp"),
	SER(STORE_MINUTE, STORE_POWER) = SERIES_ROLL("rollup_minute", "power"),
	SER(STORE_HOUR, STORE_UTILIZATION) = SERIES_ROLL_UTIL("rollup_hour"),
	SER(STORE_HOUR, STORE_MEMORY_USED) = SERIES_ROLL("rollup_hour", "mem"),
	SER(STORE_HOUR, STORE_TEMPERATURE) = SERIES_ROLL("rollup_hour", "temp"),
	SER(STORE_HOUR, STORE_POWER) = SERIES_ROLL("rollup_hour", "power"),
};
