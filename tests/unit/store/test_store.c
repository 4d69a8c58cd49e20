/*
 * Unit tests for the store (src/store/store*.c): migrations (fresh, upgrade from an older user_version, refusing a
 * newer one; a version 5 history read back in one vocabulary), samples (their points on the step's clock boundaries),
 * rollups and retention, the bounded queue's loss policy, faults (unwritable path, corrupt file, full database), jobs
 * (who made them, the peak they were measured against), prices, health checks (written, replaced, paged, expired,
 * waiting while the database fails), the journal of confirmed job records (replayed after a crash, owned by one store),
 * and the size of a month of 1 s samples for 8 devices.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "check_main.h"
#include "core/clock.h"
#include "detect/device.h"
#include "store/store.h"

#define T0 1700002800000LL /* 2023-11-14T23:00:00Z, an hour boundary */

static char tmpdir[256];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/acceld-store-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static void tmp_path(char *out, size_t outsz, const char *name)
{
	snprintf(out, outsz, "%s/%s", tmpdir, name);
}

static struct store_sample sample(const char *dev, int64_t ts, uint32_t dt, double util)
{
	struct store_sample s = {.ts_ms = ts, .dt_ms = dt, .source = STORE_SRC_PROC_STAT, .utilization_ratio = util,
				 .memory_used_bytes = 1e9, .temperature_celsius = NAN, .power_watts = NAN};

	snprintf(s.device, sizeof(s.device), "%s", dev);
	return s;
}

/* Runs a one-number query on a database file with a separate connection. */
static long long file_query(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	long long v = -1;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

/* The first text value of a query on a database file (static storage). */
static const char *file_text(const char *path, const char *sql)
{
	static char out[256];
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;

	out[0] = '\0';
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
		snprintf(out, sizeof(out), "%s", (const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	sqlite3_close(db);
	return out;
}

static void file_exec(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	char *msg = NULL;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK, "%s", msg ? msg : "?");
	sqlite3_close(db);
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "r");
	char *text;
	long len;

	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	text = calloc(1, (size_t)len + 1);
	ck_assert_uint_eq(fread(text, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	return text;
}

START_TEST(memory_database_is_migrated_and_healthy)
{
	struct store *st = NULL;
	char err[256];

	ck_assert_int_eq(store_open(":memory:", &st, err, sizeof(err)), ACCELD_OK);
	ck_assert_str_eq(err, "");
	ck_assert(store_healthy(st, err, sizeof(err)));
	ck_assert_int_eq(store_schema_version(), 7);
	ck_assert_str_eq(store_sqlite_version(), sqlite3_libversion());
	store_close(st);
}
END_TEST

START_TEST(fresh_file_gets_the_newest_schema)
{
	struct store *st = NULL;
	char path[300], err[256];

	tmp_path(path, sizeof(path), "sub/dir/a.db");
	ck_assert_int_eq(store_open(path, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert(store_healthy(st, err, sizeof(err)));
	store_close(st);
	ck_assert_int_eq(file_query(path, "PRAGMA user_version"), 7);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM sqlite_schema WHERE name IN ('devices', 'samples', "
					  "'rollup_minute', 'rollup_hour', 'jobs', 'prices', 'checks')"),
			 7);
	ck_assert_str_eq(file_text(path, "PRAGMA journal_mode"), "wal");
}
END_TEST

START_TEST(older_file_is_upgraded_keeping_its_rows)
{
	struct store *st = NULL;
	char path[300], err[256];
	char *v1 = read_text("db/migrations/0001_init.sql");

	tmp_path(path, sizeof(path), "old.db");
	file_exec(path, v1);
	file_exec(path, "PRAGMA user_version = 1; INSERT INTO devices (id, type, first_seen, last_seen) "
			"VALUES ('gpu:7', 'gpu', 1, 2)");
	free(v1);
	ck_assert_int_eq(store_open(path, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert_msg(store_healthy(st, err, sizeof(err)), "%s", err);
	store_close(st);
	ck_assert_int_eq(file_query(path, "PRAGMA user_version"), 7);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM devices WHERE id = 'gpu:7'"), 1);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM jobs"), 0);
}
END_TEST

/* A history written before 0004 reads back with the API's state names and reasons. */
START_TEST(old_job_states_are_migrated)
{
	struct store *st = NULL;
	struct store_job j;
	char path[300], err[256];
	char *v1 = read_text("db/migrations/0001_init.sql");
	char *v2 = read_text("db/migrations/0002_jobs_prices.sql");

	tmp_path(path, sizeof(path), "v2.db");
	file_exec(path, v1);
	file_exec(path, v2);
	file_exec(path, "PRAGMA user_version = 2; INSERT INTO jobs (id, device, kernel, state, error) VALUES "
			"('late', 'cpu:0', 'dot', 'timeout', 'ran past its timeout'), "
			"('ok', 'cpu:0', 'dot', 'succeeded', NULL)");
	free(v1);
	free(v2);
	ck_assert_int_eq(store_open(path, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(store_job_get(st, "late", &j), ACCELD_OK);
	ck_assert_str_eq(j.state, "timed_out");
	ck_assert_str_eq(j.reason, "TIMED_OUT");
	ck_assert(isnan(j.queued_ms));
	ck_assert_int_eq(store_job_get(st, "ok", &j), ACCELD_OK);
	ck_assert_str_eq(j.reason, "");
	store_close(st);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM jobs WHERE state = 'timeout'"), 0);
}
END_TEST

/*
 * A history written before 0006: its jobs read back with no trigger and no peak (a fraction of peak unknown, not
 * one against today's peak), its checks under the jobs' state names, in the row and in the document.
 */
START_TEST(version_5_reads_back_in_one_vocabulary)
{
	static const char *const migrations[] = {"db/migrations/0001_init.sql", "db/migrations/0002_jobs_prices.sql",
						 "db/migrations/0003_jobs_by_device_time.sql",
						 "db/migrations/0004_job_states.sql", "db/migrations/0005_checks.sql"};
	struct store *st = NULL;
	struct store_job j;
	struct store_check_docs docs = {0};
	char path[300], err[256];
	char *doc = NULL;

	tmp_path(path, sizeof(path), "v5.db");
	for (size_t i = 0; i < sizeof(migrations) / sizeof(migrations[0]); i++) {
		char *sql = read_text(migrations[i]);

		file_exec(path, sql);
		free(sql);
	}
	file_exec(path, "PRAGMA user_version = 5; INSERT INTO jobs (id, device, kernel, state, flops, kernel_ms) "
			"VALUES ('old', 'cpu:0', 'sgemm', 'succeeded', 2e9, 10); "
			"INSERT INTO checks (id, device, level, state, verdict, created_at, finished_at, doc) VALUES "
			"('chk-ok', 'cpu:0', 'quick', 'done', 'pass', 1, 2, '{\"id\":\"chk-ok\",\"state\":\"done\","
			"\"ratio\":0.1,\"tests\":[{\"state\":\"done\"},{\"state\":\"done\",\"failure\":\"x\"}]}'), "
			"('chk-gone', 'gpu:0', 'quick', 'done', 'fail', 1, 2, '{\"id\":\"chk-gone\",\"state\":\"done\","
			"\"error\":{\"reason\":\"UNKNOWN_DEVICE\"},\"tests\":[{\"state\":\"pending\"}]}'), "
			"('chk-cut', 'tpu:0', 'quick', 'interrupted', NULL, 1, 2, '{\"id\":\"chk-cut\","
			"\"state\":\"interrupted\",\"tests\":[{\"state\":\"running\"}]}')");
	ck_assert_int_eq(store_open(path, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert_msg(store_healthy(st, err, sizeof(err)), "%s", err);
	ck_assert_int_eq(store_job_get(st, "old", &j), ACCELD_OK);
	ck_assert_str_eq(j.trigger, "");
	ck_assert(isnan(j.peak_gflops) && isnan(j.peak_gbytes_per_s));
	ck_assert_int_eq(store_check_get(st, "cpu:0", "chk-ok", &doc), ACCELD_OK);
	ck_assert_str_eq(doc, "{\"id\":\"chk-ok\",\"state\":\"succeeded\",\"ratio\":0.1,\"tests\":[{\"state\":"
			      "\"succeeded\"},{\"state\":\"failed\",\"failure\":\"x\"}]}");
	free(doc);
	ck_assert_int_eq(store_check_get(st, "gpu:0", "chk-gone", &doc), ACCELD_OK);
	ck_assert_ptr_nonnull(strstr(doc, "\"state\":\"failed\""));
	ck_assert_ptr_nonnull(strstr(doc, "\"tests\":[{\"state\":\"queued\"}]"));
	free(doc);
	ck_assert_int_eq(store_checks_latest(st, &docs), ACCELD_OK);
	ck_assert_uint_eq(docs.n, 3);
	store_check_docs_release(&docs);
	store_close(st);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM checks WHERE state = 'done'"), 0);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM checks WHERE state = 'failed'"), 1);
}
END_TEST

START_TEST(newer_file_is_refused_and_left_alone)
{
	struct store *st = NULL;
	char path[300], err[256];
	struct store_sample s = sample("cpu:0", T0, 1000, 0.5);

	tmp_path(path, sizeof(path), "new.db");
	file_exec(path, "CREATE TABLE future (x); PRAGMA user_version = 99");
	ck_assert_int_eq(store_open(path, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert_ptr_nonnull(strstr(err, "newer"));
	ck_assert(!store_healthy(st, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "schema version 99 is newer"));
	store_add_samples(st, &s, 1);
	ck_assert(!store_flush(st, 100));
	store_close(st);
	ck_assert_int_eq(file_query(path, "PRAGMA user_version"), 99);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'samples'"), 0);
}
END_TEST

START_TEST(samples_read_back_as_a_raw_series)
{
	struct store *st = NULL;
	struct store_series ser;
	char err[256];

	ck_assert_int_eq(store_open(":memory:", &st, err, sizeof(err)), ACCELD_OK);
	for (int i = 0; i < 30; i++) {
		struct store_sample s = sample("cpu:0", T0 + i * 1000, 1000, i < 10 ? 0.2 : 0.8);

		store_add_samples(st, &s, 1);
	}
	ck_assert(store_flush(st, 5000));
	ck_assert_int_eq(store_series(st, "cpu:0", STORE_UTILIZATION, T0, T0 + 30000, 10000, T0 + 30000, &ser),
			 ACCELD_OK);
	ck_assert_int_eq(ser.tier, STORE_RAW);
	ck_assert_uint_eq(ser.n, 3);
	ck_assert_double_eq_tol(ser.points[0].value, 0.2, 1e-9);
	ck_assert_double_eq_tol(ser.points[2].value, 0.8, 1e-9);
	ck_assert_int_eq(ser.points[1].t_ms, T0 + 10000);
	ck_assert_uint_eq(ser.sources, 1u << STORE_SRC_PROC_STAT);
	free(ser.points);
	/*
	 * asked 1.3 s and 4.7 s later, the same question answers the same points: they fall on the step's clock
	 * boundaries, whole steps, the first one holding the start
	 */
	for (int64_t late = 1300; late <= 4700; late += 3400) {
		ck_assert_int_eq(store_series(st, "cpu:0", STORE_UTILIZATION, T0 + late, T0 + 30000 + late, 10000,
					      T0 + 30000 + late, &ser),
				 ACCELD_OK);
		ck_assert_uint_eq(ser.n, 3);
		for (size_t i = 0; i < ser.n; i++)
			ck_assert_int_eq(ser.points[i].t_ms, T0 + (int64_t)i * 10000);
		ck_assert_double_eq_tol(ser.points[0].value, 0.2, 1e-9);
		ck_assert_double_eq_tol(ser.points[2].value, 0.8, 1e-9);
		free(ser.points);
	}
	/* a 60 s step starts on the minute */
	ck_assert_int_eq(store_series(st, "cpu:0", STORE_UTILIZATION, T0 + 12345, T0 + 30000, 60000, T0 + 30000, &ser),
			 ACCELD_OK);
	ck_assert_uint_eq(ser.n, 1);
	ck_assert_int_eq(ser.points[0].t_ms % 60000, 0);
	ck_assert_double_eq_tol(ser.points[0].value, (10 * 0.2 + 20 * 0.8) / 30, 1e-9);
	free(ser.points);
	/* a device never seen is not found; a metric never measured has no points */
	ck_assert_int_eq(store_series(st, "gpu:9", STORE_UTILIZATION, T0, T0 + 30000, 10000, T0, &ser),
			 ACCELD_ENOTFOUND);
	ck_assert_int_eq(store_series(st, "cpu:0", STORE_POWER, T0, T0 + 30000, 10000, T0 + 30000, &ser), ACCELD_OK);
	ck_assert_uint_eq(ser.n, 0);
	free(ser.points);
	store_close(st);
}
END_TEST

START_TEST(rollups_answer_coarse_series_and_usage)
{
	struct store *st = NULL;
	struct store_series ser;
	struct store_usage *u = NULL;
	size_t n = 0;
	char err[256];

	ck_assert_int_eq(store_open(":memory:", &st, err, sizeof(err)), ACCELD_OK);
	/* 3 hours at 10 s: util 0.25 in the first hour, 0.75 afterwards */
	for (int64_t t = 0; t < 3 * STORE_HOUR_MS; t += 10000) {
		struct store_sample s = sample("gpu:0", T0 + t, 10000, t < STORE_HOUR_MS ? 0.25 : 0.75);

		store_add_samples(st, &s, 1);
	}
	ck_assert(store_flush(st, 5000));
	ck_assert_int_eq(store_series(st, "gpu:0", STORE_UTILIZATION, T0, T0 + 3 * STORE_HOUR_MS, STORE_HOUR_MS,
				      T0 + 3 * STORE_HOUR_MS, &ser),
			 ACCELD_OK);
	ck_assert_int_eq(ser.tier, STORE_HOUR);
	ck_assert_uint_eq(ser.n, 3);
	ck_assert_double_eq_tol(ser.points[0].value, 0.25, 1e-9);
	ck_assert_double_eq_tol(ser.points[1].value, 0.75, 1e-9);
	/* the last hour is not rolled up yet (no later sample): it comes from minutes and raw rows */
	ck_assert_double_eq_tol(ser.points[2].value, 0.75, 1e-9);
	free(ser.points);
	/* a window starting mid-hour takes its edges from finer tiers */
	ck_assert_int_eq(store_usage(st, "gpu:0", T0 + 30 * STORE_MINUTE_MS, T0 + 3 * STORE_HOUR_MS, STORE_HOUR_MS,
				     &u, &n),
			 ACCELD_OK);
	ck_assert_uint_eq(n, 3);
	ck_assert_double_eq_tol(u[0].present_ms, 30 * STORE_MINUTE_MS, 1);
	ck_assert_double_eq_tol(u[0].busy_ms, 0.25 * 30 * STORE_MINUTE_MS, 1);
	ck_assert_double_eq_tol(u[1].present_ms, STORE_HOUR_MS, 1);
	ck_assert_double_eq_tol(u[1].busy_ms, 0.75 * STORE_HOUR_MS, 1);
	ck_assert_int_eq(u[0].t_ms, T0);
	free(u);
	store_close(st);
}
END_TEST

START_TEST(retention_drops_old_raw_rows_but_keeps_rollups)
{
	struct store *st = NULL;
	struct store_opts o = {.retention_raw_ms = STORE_HOUR_MS, .retention_minute_ms = 2 * STORE_HOUR_MS,
			       .retention_hour_ms = 3 * STORE_HOUR_MS};
	struct store_job old = {.id = "old", .device = "cpu:0", .kernel = "dot", .state = "succeeded",
				.submitted_ms = T0, .started_ms = T0, .finished_ms = T0 + 1, .n = 8, .flops = NAN,
				.bytes = NAN, .kernel_ms = NAN, .total_ms = 1, .cost_usd = NAN};
	struct store_job recent = old;
	char path[300], err[256];

	tmp_path(path, sizeof(path), "ret.db");
	o.path = path;
	ck_assert_int_eq(store_open_opts(&o, &st, err, sizeof(err)), ACCELD_OK);
	/* finished jobs are kept as long as the hourly rollups */
	snprintf(recent.id, sizeof(recent.id), "recent");
	recent.finished_ms = T0 + 3 * STORE_HOUR_MS + 1;
	store_job_record(st, &old);
	store_job_record(st, &recent);
	for (int64_t t = 0; t <= 4 * STORE_HOUR_MS; t += 10000) {
		struct store_sample s = sample("cpu:0", T0 + t, 10000, 0.5);

		store_add_samples(st, &s, 1);
		if (t % (30 * STORE_MINUTE_MS) == 0)
			ck_assert(store_flush(st, 5000));
	}
	ck_assert(store_flush(st, 5000));
	store_close(st);
	ck_assert_int_le(file_query(path, "SELECT min(ts) FROM samples") - T0, 3 * STORE_HOUR_MS + 60000);
	ck_assert_int_ge(file_query(path, "SELECT min(ts) FROM samples") - T0, 3 * STORE_HOUR_MS - 60000);
	ck_assert_int_ge(file_query(path, "SELECT min(ts) FROM rollup_minute") - T0, 2 * STORE_HOUR_MS - 60000);
	ck_assert_int_ge(file_query(path, "SELECT min(ts) FROM rollup_hour") - T0, STORE_HOUR_MS);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM rollup_hour"), 3);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM jobs WHERE id = 'old'"), 0);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM jobs WHERE id = 'recent'"), 1);
	/* /cost's range over a device's jobs is served by an index, not a scan of all its jobs */
	ck_assert_str_eq(file_text(path, "SELECT sql FROM sqlite_master WHERE name = 'jobs_by_device_finished'"),
			 "CREATE INDEX jobs_by_device_finished ON jobs (device, finished_at)");
	ck_assert_str_eq(file_text(path, "PRAGMA integrity_check"), "ok");
}
END_TEST

START_TEST(full_queue_drops_the_oldest_and_recovers)
{
	struct store *st = NULL;
	struct store_opts o = {.backlog_samples = 16, .retry_interval_ms = 50};
	struct store_stats stats;
	struct store_series ser;
	char path[320], blocker[300], err[256];
	FILE *f;

	/* the database's folder is a regular file: nothing can be created there */
	tmp_path(blocker, sizeof(blocker), "blocked");
	snprintf(path, sizeof(path), "%s/a.db", blocker);
	f = fopen(blocker, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	o.path = path;
	ck_assert_int_eq(store_open_opts(&o, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert_ptr_nonnull(strstr(err, "cannot open database"));
	ck_assert(!store_healthy(st, err, sizeof(err)));
	for (int i = 0; i < 20; i++) {
		struct store_sample s = sample("cpu:0", T0 + i * 1000, 1000, i / 100.0);

		store_add_samples(st, &s, 1);
	}
	store_stats(st, &stats);
	ck_assert_uint_eq(stats.dropped_samples, 4);
	ck_assert_uint_eq(stats.backlog, 16);
	ck_assert(!stats.open);
	ck_assert_str_ne(stats.last_error, "");
	/* the folder appears: the writer opens the file and writes the 16 samples it kept */
	ck_assert_int_eq(unlink(blocker), 0);
	ck_assert_int_eq(mkdir(blocker, 0700), 0);
	ck_assert(store_flush(st, 10000));
	ck_assert(store_healthy(st, err, sizeof(err)));
	store_stats(st, &stats);
	ck_assert_uint_eq(stats.written_samples, 16);
	ck_assert_uint_eq(stats.backlog, 0);
	ck_assert_int_eq(store_series(st, "cpu:0", STORE_UTILIZATION, T0, T0 + 20000, 1000, T0 + 20000, &ser),
			 ACCELD_OK);
	ck_assert_uint_eq(ser.n, 16);
	ck_assert_int_eq(ser.points[0].t_ms, T0 + 4000); /* the four oldest went */
	free(ser.points);
	store_close(st);
}
END_TEST

START_TEST(corrupt_file_is_reported_and_replaced_file_recovers)
{
	struct store *st = NULL;
	struct store_opts o = {.retry_interval_ms = 50};
	struct store_sample s = sample("cpu:0", T0, 1000, 0.5);
	char path[300], err[256];
	FILE *f;

	tmp_path(path, sizeof(path), "bad.db");
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < 512; i++)
		fputs("this is not a database file ", f);
	fclose(f);
	o.path = path;
	ck_assert_int_eq(store_open_opts(&o, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert(!store_healthy(st, err, sizeof(err)));
	ck_assert_msg(strstr(err, "not a database") != NULL, "%s", err);
	store_add_samples(st, &s, 1);
	ck_assert(!store_flush(st, 200));
	/* an operator moves the file aside: the next attempt creates a fresh database with the waiting sample */
	ck_assert_int_eq(unlink(path), 0);
	ck_assert(store_flush(st, 10000));
	ck_assert(store_healthy(st, err, sizeof(err)));
	store_close(st);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM samples"), 1);
}
END_TEST

START_TEST(full_database_fails_writes_and_keeps_the_backlog)
{
	struct store *st = NULL;
	struct store_opts o = {.retry_interval_ms = 50, .max_pages = 12};
	struct store_stats stats;
	char path[300], err[256];

	tmp_path(path, sizeof(path), "full.db");
	o.path = path;
	ck_assert_int_eq(store_open_opts(&o, &st, err, sizeof(err)), ACCELD_OK);
	for (int i = 0; i < 5000; i++) {
		struct store_sample s = sample(i % 2 ? "cpu:0" : "gpu:0", T0 + i * 1000, 1000, 0.5);

		store_add_samples(st, &s, 1);
	}
	ck_assert(!store_flush(st, 500));
	ck_assert(!store_healthy(st, err, sizeof(err)));
	ck_assert_msg(strstr(err, "full") != NULL, "%s", err);
	store_stats(st, &stats);
	ck_assert_uint_gt(stats.write_errors, 0);
	ck_assert_uint_gt(stats.backlog, 0);
	ck_assert_uint_eq(stats.dropped_samples, 0);
	store_close(st);
	ck_assert_str_eq(file_text(path, "PRAGMA integrity_check"), "ok");
}
END_TEST

START_TEST(jobs_are_recorded_interrupted_and_measured)
{
	struct store *st = NULL;
	struct store_job j = {.id = "job-1", .device = "cpu:0", .kernel = "sgemm", .state = "running",
			      .submitted_ms = T0, .started_ms = T0 + 5, .flops = NAN, .bytes = NAN, .kernel_ms = NAN,
			      .total_ms = NAN, .cost_usd = NAN, .trigger = "check", .check_id = "chk-1",
			      .peak_gflops = 150.5, .peak_gbytes_per_s = NAN};
	struct store_job got;
	struct store_jobs_usage ju;
	double fps;
	unsigned nj;
	char path[300], err[256];

	tmp_path(path, sizeof(path), "jobs.db");
	ck_assert_int_eq(store_open(path, &st, err, sizeof(err)), ACCELD_OK);
	store_job_record(st, &j);
	for (int i = 0; i < 3; i++) {
		struct store_job d = j;

		snprintf(d.id, sizeof(d.id), "done-%d", i);
		snprintf(d.state, sizeof(d.state), "succeeded");
		d.finished_ms = T0 + 1000 + i;
		d.flops = 2e9;
		d.kernel_ms = 10;
		d.total_ms = 2000;
		d.cost_usd = 0.01;
		store_job_record(st, &d);
	}
	ck_assert(store_flush(st, 5000));
	ck_assert_int_eq(store_throughput(st, "cpu:0", "sgemm", &fps, &nj), ACCELD_OK);
	ck_assert_uint_eq(nj, 3);
	ck_assert_double_eq_tol(fps, 2e11, 1);
	ck_assert_int_eq(store_throughput(st, "cpu:0", "dot", &fps, &nj), ACCELD_OK);
	ck_assert_uint_eq(nj, 0);
	ck_assert(isnan(fps));
	ck_assert_int_eq(store_jobs_usage(st, "cpu:0", T0, T0 + 2000, &ju), ACCELD_OK);
	ck_assert_uint_eq(ju.jobs, 3);
	ck_assert_double_eq_tol(ju.seconds, 6, 1e-9);
	ck_assert_double_eq_tol(ju.cost_usd, 0.03, 1e-9);
	store_close(st);

	/* the next start finds job-1 still running: it was interrupted */
	ck_assert_int_eq(store_open(path, &st, err, sizeof(err)), ACCELD_OK);
	store_jobs_mark_interrupted(st);
	ck_assert(store_flush(st, 5000));
	ck_assert_int_eq(store_job_get(st, "job-1", &got), ACCELD_OK);
	ck_assert_str_eq(got.state, "interrupted");
	ck_assert_int_eq(got.started_ms, T0 + 5);
	ck_assert_ptr_nonnull(strstr(got.error, "run time is unknown"));
	/* when it stopped is unknown, so the time until the restart is not counted as its run time */
	ck_assert_double_eq_tol(got.total_ms, 0, 1e-9);
	ck_assert_int_eq(store_jobs_usage(st, "cpu:0", T0, clock_real_ms() + 1000, &ju), ACCELD_OK);
	ck_assert_uint_eq(ju.jobs, 4);
	ck_assert_double_eq_tol(ju.seconds, 6, 1e-9);
	ck_assert_int_eq(store_job_get(st, "done-0", &got), ACCELD_OK);
	ck_assert_str_eq(got.state, "succeeded");
	/* who made it, and the peak its throughput was a fraction of, as it was then */
	ck_assert_str_eq(got.trigger, "check");
	ck_assert_str_eq(got.check_id, "chk-1");
	ck_assert_double_eq(got.peak_gflops, 150.5);
	ck_assert(isnan(got.peak_gbytes_per_s));
	/* a late "running" row (a job answered by its timeout while its kernel still ran) takes no final state back */
	{
		struct store_job late = j;

		snprintf(late.id, sizeof(late.id), "done-0");
		store_job_record(st, &late);
		ck_assert(store_flush(st, 5000));
		ck_assert_int_eq(store_job_get(st, "done-0", &got), ACCELD_OK);
		ck_assert_str_eq(got.state, "succeeded");
		ck_assert_int_eq(got.finished_ms, T0 + 1000);
	}
	ck_assert_int_eq(store_job_get(st, "nope", &got), ACCELD_ENOTFOUND);
	store_close(st);
}
END_TEST

/* A completion's calls: how many, and the last outcome. */
struct done_count {
	int calls;
	bool recorded;
};

static void count_done(void *ctx, bool recorded)
{
	struct done_count *c = ctx;

	c->calls++;
	c->recorded = recorded;
}

START_TEST(notified_writes_are_answered_once_durable)
{
	struct store *st = NULL;
	struct store_opts o = {.retry_interval_ms = 50, .flush_interval_ms = 100};
	struct store_job run = {.id = "job-n", .device = "cpu:0", .kernel = "dot", .state = "running",
				.submitted_ms = T0, .started_ms = T0 + 1, .flops = NAN, .bytes = NAN, .kernel_ms = NAN,
				.total_ms = NAN, .cost_usd = NAN};
	struct store_job fin = run;
	struct store_price p = {.selector = "type", .value = "cpu", .usd_per_hour = 0.5, .usd_per_hour_spot = NAN};
	struct done_count jc = {0}, pc = {0}, fc = {0};
	struct store_stats stats;
	struct store_job got;
	struct store_price *pv = NULL;
	size_t np = 0;
	char path[300], err[256];
	FILE *f;

	tmp_path(path, sizeof(path), "notify.db");
	o.path = path;
	ck_assert_int_eq(store_open_opts(&o, &st, err, sizeof(err)), ACCELD_OK);
	/* the start record waits unconfirmed; the final one is confirmed by the journal before returning */
	store_job_record(st, &run);
	snprintf(fin.state, sizeof(fin.state), "succeeded");
	fin.finished_ms = T0 + 9;
	fin.kernel_ms = 3;
	store_job_record_notify(st, &fin, count_done, &jc);
	ck_assert_int_eq(jc.calls, 1);
	ck_assert(jc.recorded);
	ck_assert_int_eq(store_job_get(st, "job-n", &got), ACCELD_OK);
	ck_assert_str_eq(got.state, "succeeded");
	ck_assert_int_eq(got.started_ms, T0 + 1);
	store_prices_replace_notify(st, &p, 1, count_done, &pc);
	ck_assert_int_eq(pc.calls, 1);
	ck_assert(pc.recorded);
	ck_assert_int_eq(store_prices_load(st, &pv, &np), ACCELD_OK);
	ck_assert_uint_eq(np, 1);
	free(pv);
	store_stats(st, &stats);
	ck_assert_uint_eq(stats.confirmed, 2);
	ck_assert_uint_ge(stats.commits, 2);
	/* nothing waits any more: the writer sleeps (it once kept polling after a price change) */
	{
		struct timespec a, b;

		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
		usleep(300000);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
		ck_assert_int_lt((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec), 100000000L);
	}
	store_close(st);

	/* a database known to fail answers at once, false, and keeps the record for later */
	tmp_path(path, sizeof(path), "notify-bad.db");
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < 512; i++)
		fputs("this is not a database file ", f);
	fclose(f);
	ck_assert_int_eq(store_open_opts(&o, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert(!store_healthy(st, err, sizeof(err)));
	snprintf(fin.id, sizeof(fin.id), "job-f");
	store_job_record_notify(st, &fin, count_done, &fc);
	ck_assert_int_eq(fc.calls, 1);
	ck_assert(!fc.recorded);
	store_stats(st, &stats);
	ck_assert_uint_eq(stats.unconfirmed, 1);
	ck_assert_uint_eq(stats.backlog, 1);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert(store_flush(st, 10000));
	ck_assert_int_eq(store_job_get(st, "job-f", &got), ACCELD_OK);
	ck_assert_int_eq(fc.calls, 1);
	store_close(st);
}
END_TEST

/* The size of a file, -1 when there is none. */
static long size_of(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

START_TEST(journaled_records_survive_a_crash)
{
	struct store *st = NULL;
	struct store_opts o = {.flush_interval_ms = 60000}; /* the writer would commit in a minute */
	struct store_job got;
	struct store_stats stats;
	char path[300], redo[320], err[256];
	int status;
	pid_t pid;

	tmp_path(path, sizeof(path), "crash.db");
	snprintf(redo, sizeof(redo), "%s-redo", path);
	o.path = path;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int bad = 0;

		if (store_open_opts(&o, &st, err, sizeof(err)) != ACCELD_OK)
			_exit(2);
		for (int i = 0; i < 5; i++) {
			struct store_job j = {.device = "cpu:0", .kernel = "dot", .state = "running", .submitted_ms = T0,
					      .started_ms = T0 + i, .flops = NAN, .bytes = NAN, .queued_ms = NAN,
					      .transfer_ms = NAN, .kernel_ms = NAN, .total_ms = NAN, .cost_usd = NAN};
			struct done_count c = {0};

			snprintf(j.id, sizeof(j.id), "crash-%d", i);
			store_job_record(st, &j); /* its start: not confirmed, not journaled */
			snprintf(j.state, sizeof(j.state), "%s", i == 4 ? "failed" : "succeeded");
			j.finished_ms = T0 + 10 + i;
			j.kernel_ms = 0.5 + i;
			if (i == 4)
				snprintf(j.reason, sizeof(j.reason), "DEVICE_FAILURE");
			store_job_record_notify(st, &j, count_done, &c);
			bad += c.calls != 1 || !c.recorded;
		}
		/* answered, not committed: a crash now must lose none of them */
		_exit(bad ? 1 : 0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert_int_gt(size_of(redo), 0);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM jobs"), 0);

	/* the next open writes them before anything else, then starts an empty journal */
	ck_assert_int_eq(store_open_opts(&o, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(size_of(redo), 0);
	for (int i = 0; i < 5; i++) {
		char id[16];

		snprintf(id, sizeof(id), "crash-%d", i);
		ck_assert_int_eq(store_job_get(st, id, &got), ACCELD_OK);
		ck_assert_str_eq(got.state, i == 4 ? "failed" : "succeeded");
		ck_assert_int_eq(got.finished_ms, T0 + 10 + i);
		ck_assert(got.kernel_ms == 0.5 + i);
	}
	ck_assert_str_eq(got.reason, "DEVICE_FAILURE");
	/* a read sees a record answered a moment ago, though the writer would wait a minute */
	{
		struct store_job j = got;
		struct done_count c = {0};

		snprintf(j.id, sizeof(j.id), "crash-late");
		store_job_record_notify(st, &j, count_done, &c);
		ck_assert(c.calls == 1 && c.recorded);
		ck_assert_int_eq(store_job_get(st, "crash-late", &got), ACCELD_OK);
	}
	store_stats(st, &stats);
	ck_assert_uint_eq(stats.journaled, 1);
	/* a clean close commits everything: nothing is left to replay */
	store_close(st);
	ck_assert_int_eq(size_of(redo), -1);

	/* with every commit synced (ACCELD_DB_SYNC=full) a record waits for its commit instead */
	o.sync_full = true;
	ck_assert_int_eq(store_open_opts(&o, &st, err, sizeof(err)), ACCELD_OK);
	{
		struct store_job j = got;
		struct done_count c = {0};

		snprintf(j.id, sizeof(j.id), "crash-full");
		store_job_record_notify(st, &j, count_done, &c);
		ck_assert(c.calls == 1 && c.recorded);
	}
	ck_assert_int_eq(size_of(redo), -1);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM jobs WHERE id = 'crash-full'"), 1);
	store_stats(st, &stats);
	ck_assert_uint_eq(stats.journaled, 0);
	store_close(st);
}
END_TEST

START_TEST(a_second_store_on_the_file_leaves_the_journal_alone)
{
	struct store *a = NULL, *b = NULL;
	struct store_opts o = {.flush_interval_ms = 60000};
	struct store_job j = {.device = "cpu:0", .kernel = "dot", .state = "succeeded", .submitted_ms = T0,
			      .started_ms = T0, .finished_ms = T0 + 1, .flops = NAN, .bytes = NAN, .queued_ms = NAN,
			      .transfer_ms = NAN, .kernel_ms = 1, .total_ms = NAN, .cost_usd = NAN};
	struct done_count ca = {0}, cb = {0};
	struct store_stats stats;
	char path[300], redo[320], err[256];
	long held;

	tmp_path(path, sizeof(path), "two.db");
	snprintf(redo, sizeof(redo), "%s-redo", path);
	o.path = path;
	ck_assert_int_eq(store_open_opts(&o, &a, err, sizeof(err)), ACCELD_OK);
	snprintf(j.id, sizeof(j.id), "from-a");
	store_job_record_notify(a, &j, count_done, &ca);
	ck_assert(ca.calls == 1 && ca.recorded);
	held = size_of(redo);
	ck_assert_int_gt(held, 0);
	/* a second acceld on the same file (a rolling update on one volume) neither replays nor removes it */
	ck_assert_int_eq(store_open_opts(&o, &b, err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(size_of(redo), held);
	snprintf(j.id, sizeof(j.id), "from-b");
	store_job_record_notify(b, &j, count_done, &cb);
	ck_assert(cb.calls == 1 && cb.recorded); /* committed, not journaled */
	store_stats(b, &stats);
	ck_assert_uint_eq(stats.journaled, 0);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM jobs WHERE id = 'from-b'"), 1);
	store_close(b);
	ck_assert_int_eq(size_of(redo), held);
	store_close(a);
	ck_assert_int_eq(size_of(redo), -1);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM jobs"), 2);
}
END_TEST

START_TEST(a_full_record_queue_refuses_the_new_record_not_a_confirmed_one)
{
	struct store *st = NULL;
	struct store_opts o = {.flush_interval_ms = 60000, .retry_interval_ms = 50, .busy_timeout_ms = 10};
	struct store_job j = {.device = "cpu:0", .kernel = "dot", .state = "succeeded", .submitted_ms = T0,
			      .started_ms = T0, .finished_ms = T0 + 1, .flops = NAN, .bytes = NAN, .queued_ms = NAN,
			      .transfer_ms = NAN, .kernel_ms = 1, .total_ms = NAN, .cost_usd = NAN};
	struct store_stats stats;
	struct done_count c = {0};
	sqlite3 *other = NULL;
	char path[300], err[256];
	int confirmed = 0;

	tmp_path(path, sizeof(path), "fullq.db");
	o.path = path;
	ck_assert_int_eq(store_open_opts(&o, &st, err, sizeof(err)), ACCELD_OK);
	/* another process holds the write lock: no commit can happen, but the journal still takes records */
	ck_assert_int_eq(sqlite3_open(path, &other), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(other, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
	for (int i = 0; i < STORE_BACKLOG_RECORDS; i++) {
		snprintf(j.id, sizeof(j.id), "q-%d", i);
		c.calls = 0;
		store_job_record_notify(st, &j, count_done, &c);
		confirmed += c.calls == 1 && c.recorded;
	}
	ck_assert_int_eq(confirmed, STORE_BACKLOG_RECORDS);
	/* the queue is full of confirmed records: the new one is refused, and told so */
	snprintf(j.id, sizeof(j.id), "refused");
	c.calls = 0;
	store_job_record_notify(st, &j, count_done, &c);
	ck_assert(c.calls == 1 && !c.recorded);
	store_stats(st, &stats);
	ck_assert_uint_eq(stats.dropped_records, 1);
	ck_assert_uint_eq(stats.journaled, STORE_BACKLOG_RECORDS);
	/* the lock goes: every confirmed record is committed, the refused one is not */
	ck_assert_int_eq(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(other);
	ck_assert(store_flush(st, 20000));
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM jobs"), STORE_BACKLOG_RECORDS);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM jobs WHERE id = 'refused'"), 0);
	store_close(st);
}
END_TEST

/* A check row with document {"id": id, "state": state}; finished 0 while it runs. */
static struct store_check check_row(const char *id, const char *device, const char *state, int64_t created,
				    int64_t finished, char *doc, size_t docsz)
{
	struct store_check c = {.created_ms = created, .finished_ms = finished, .gflops = 100, .gbytes_per_s = NAN};

	snprintf(c.id, sizeof(c.id), "%s", id);
	snprintf(c.device, sizeof(c.device), "%s", device);
	snprintf(c.level, sizeof(c.level), "quick");
	snprintf(c.state, sizeof(c.state), "%s", state);
	if (finished > 0)
		snprintf(c.verdict, sizeof(c.verdict), "pass");
	snprintf(doc, docsz, "{\"id\": \"%s\", \"state\": \"%s\"}", id, state);
	c.doc = doc;
	return c;
}

/* Whether docs holds, in this order, documents with these ids (n of them). */
static bool docs_are(const struct store_check_docs *docs, const char *const *ids, size_t n)
{
	char want[64];

	if (docs->n != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "\"id\": \"%s\"", ids[i]);
		if (strstr(docs->v[i], want) == NULL)
			return false;
	}
	return true;
}

START_TEST(checks_are_written_replaced_listed_and_expired)
{
	static const char *const paths[] = {"checks.db", ":memory:"};

	/* on a file (readers) and in memory (the writer's one connection) alike */
	for (size_t k = 0; k < 2; k++) {
		struct store *st = NULL;
		struct store_check_docs docs = {0};
		struct done_count dc = {0};
		struct store_check c;
		struct store_stats stats;
		char path[300], err[256], doc[128];
		char *one = NULL;

		if (k == 0)
			tmp_path(path, sizeof(path), paths[k]);
		else
			snprintf(path, sizeof(path), "%s", paths[k]);
		ck_assert_int_eq(store_open(path, &st, err, sizeof(err)), ACCELD_OK);
		c = check_row("chk-a", "cpu:0", "succeeded", T0, T0 + 4000, doc, sizeof(doc));
		store_check_put_notify(st, &c, NULL, NULL);
		c = check_row("chk-g", "gpu:0", "succeeded", T0 + 500, T0 + 4500, doc, sizeof(doc));
		store_check_put_notify(st, &c, NULL, NULL);
		c = check_row("chk-b", "cpu:0", "running", T0 + 1000, 0, doc, sizeof(doc));
		store_check_put_notify(st, &c, NULL, NULL);
		ck_assert(store_flush(st, 5000));
		ck_assert_int_eq(store_checks_unfinished(st, &docs), ACCELD_OK);
		ck_assert(docs_are(&docs, (const char *const[]){"chk-b"}, 1));
		store_check_docs_release(&docs);
		ck_assert_ptr_null(docs.v);

		/* written again when it ends: the row is replaced, and committed before the completion says so */
		c = check_row("chk-b", "cpu:0", "succeeded", T0 + 1000, T0 + 5000, doc, sizeof(doc));
		store_check_put_notify(st, &c, count_done, &dc);
		ck_assert_int_eq(dc.calls, 1);
		ck_assert(dc.recorded);
		ck_assert_int_eq(store_check_get(st, "cpu:0", "chk-b", &one), ACCELD_OK);
		ck_assert_ptr_nonnull(strstr(one, "\"succeeded\""));
		free(one);
		ck_assert_int_eq(store_check_get(st, "gpu:0", "chk-b", &one), ACCELD_ENOTFOUND);
		ck_assert_ptr_null(one);
		ck_assert_int_eq(store_checks_unfinished(st, &docs), ACCELD_OK);
		ck_assert_uint_eq(docs.n, 0);
		store_check_docs_release(&docs);

		/* newest first, in pages after a check of the device */
		ck_assert_int_eq(store_checks_list(st, "cpu:0", NULL, 1, &docs), ACCELD_OK);
		ck_assert(docs_are(&docs, (const char *const[]){"chk-b"}, 1));
		store_check_docs_release(&docs);
		ck_assert_int_eq(store_checks_list(st, "cpu:0", "chk-b", 5, &docs), ACCELD_OK);
		ck_assert(docs_are(&docs, (const char *const[]){"chk-a"}, 1));
		store_check_docs_release(&docs);
		ck_assert_int_eq(store_checks_list(st, "cpu:0", "chk-g", 5, &docs), ACCELD_ENOTFOUND);
		ck_assert_uint_eq(docs.n, 0);
		ck_assert_int_eq(store_checks_latest(st, &docs), ACCELD_OK);
		ck_assert_uint_eq(docs.n, 2);
		ck_assert(strstr(docs.v[0], "chk-b") != NULL || strstr(docs.v[1], "chk-b") != NULL);
		store_check_docs_release(&docs);

		/* a check finished an hour after the others, with an hour's retention, takes the older ones away */
		c = check_row("chk-c", "cpu:0", "succeeded", T0 + STORE_HOUR_MS, T0 + STORE_HOUR_MS + 4600, doc,
			      sizeof(doc));
		c.retention_ms = STORE_HOUR_MS;
		store_check_put_notify(st, &c, count_done, &dc);
		ck_assert(dc.calls == 2 && dc.recorded);
		ck_assert_int_eq(store_checks_list(st, "cpu:0", NULL, 10, &docs), ACCELD_OK);
		ck_assert(docs_are(&docs, (const char *const[]){"chk-c", "chk-b"}, 2));
		store_check_docs_release(&docs);
		store_stats(st, &stats);
		ck_assert_uint_eq(stats.written_records, 5);
		store_close(st);
	}
}
END_TEST

START_TEST(checks_wait_while_the_database_fails)
{
	struct store *st = NULL;
	struct store_opts o = {.retry_interval_ms = 50};
	struct store_check_docs docs = {0};
	struct store_check c;
	struct store_stats stats;
	struct done_count dc = {0};
	char path[300], err[256], doc[128];
	char *one = NULL;
	FILE *f;

	tmp_path(path, sizeof(path), "checks-bad.db");
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < 512; i++)
		fputs("this is not a database file ", f);
	fclose(f);
	o.path = path;
	ck_assert_int_eq(store_open_opts(&o, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert(!store_healthy(st, err, sizeof(err)));
	ck_assert_int_eq(store_checks_latest(st, &docs), ACCELD_EUNAVAILABLE);
	ck_assert_int_eq(store_check_get(st, "cpu:0", "chk-1", &one), ACCELD_EUNAVAILABLE);
	/* answered at once, false; the newest row of each check waits */
	c = check_row("chk-1", "cpu:0", "running", T0, 0, doc, sizeof(doc));
	store_check_put_notify(st, &c, count_done, &dc);
	ck_assert(dc.calls == 1 && !dc.recorded);
	c = check_row("chk-1", "cpu:0", "succeeded", T0, T0 + 4000, doc, sizeof(doc));
	store_check_put_notify(st, &c, NULL, NULL);
	for (int i = 2; i <= STORE_BACKLOG_CHECKS; i++) {
		char id[16];

		snprintf(id, sizeof(id), "chk-%d", i);
		c = check_row(id, "cpu:0", "succeeded", T0 + i, T0 + 4000 + i, doc, sizeof(doc));
		store_check_put_notify(st, &c, NULL, NULL);
	}
	store_stats(st, &stats);
	ck_assert_uint_eq(stats.backlog, STORE_BACKLOG_CHECKS);
	/* the queue is full: a new check is refused, told so, and counted; a waiting one may still be replaced */
	c = check_row("chk-refused", "cpu:0", "running", T0, 0, doc, sizeof(doc));
	store_check_put_notify(st, &c, count_done, &dc);
	ck_assert(dc.calls == 2 && !dc.recorded);
	c = check_row("chk-2", "cpu:0", "interrupted", T0 + 2, T0 + 4002, doc, sizeof(doc));
	store_check_put_notify(st, &c, NULL, NULL);
	store_stats(st, &stats);
	ck_assert_uint_eq(stats.dropped_records, 1);
	ck_assert_uint_eq(stats.backlog, STORE_BACKLOG_CHECKS);
	/* the file is moved aside: the waiting checks are committed */
	ck_assert_int_eq(unlink(path), 0);
	ck_assert(store_flush(st, 10000));
	ck_assert_int_eq(store_check_get(st, "cpu:0", "chk-1", &one), ACCELD_OK);
	ck_assert_ptr_nonnull(strstr(one, "\"succeeded\""));
	free(one);
	ck_assert_int_eq(store_check_get(st, "cpu:0", "chk-2", &one), ACCELD_OK);
	ck_assert_ptr_nonnull(strstr(one, "\"interrupted\""));
	free(one);
	ck_assert_int_eq(store_check_get(st, "cpu:0", "chk-refused", &one), ACCELD_ENOTFOUND);
	ck_assert_int_eq(dc.calls, 2);
	store_close(st);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM checks"), STORE_BACKLOG_CHECKS);
}
END_TEST

START_TEST(prices_and_devices_persist)
{
	struct store *st = NULL;
	struct store_price p[2] = {{.selector = "device", .value = "gpu:0", .usd_per_hour = 2.5,
				    .usd_per_hour_spot = NAN, .updated_ms = T0},
				   {.selector = "accelerator_type", .value = "H100", .usd_per_hour = 9,
				    .usd_per_hour_spot = 3, .unit = "gpu", .note = "contract", .updated_ms = T0}};
	struct store_price *got = NULL;
	struct store_device_row *rows = NULL;
	struct device d;
	size_t n = 0;
	char path[300], err[256];

	tmp_path(path, sizeof(path), "prices.db");
	ck_assert_int_eq(store_open(path, &st, err, sizeof(err)), ACCELD_OK);
	store_prices_replace(st, p, 2);
	device_init(&d, DEVICE_GPU);
	snprintf(d.id, sizeof(d.id), "gpu:0");
	snprintf(d.model, sizeof(d.model), "NVIDIA H100 80GB HBM3");
	snprintf(d.accelerator_type, sizeof(d.accelerator_type), "H100");
	d.price.usd_per_hour = 10.98;
	snprintf(d.price.source, sizeof(d.price.source), "built-in table");
	store_devices_seen(st, &d, 1, T0);
	store_devices_seen(st, &d, 1, T0 + 5000);
	ck_assert(store_flush(st, 5000));
	store_close(st);

	ck_assert_int_eq(store_open(path, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(store_prices_load(st, &got, &n), ACCELD_OK);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(got[0].selector, "accelerator_type");
	ck_assert_double_eq(got[0].usd_per_hour_spot, 3);
	ck_assert_str_eq(got[1].value, "gpu:0");
	ck_assert(isnan(got[1].usd_per_hour_spot));
	free(got);
	store_prices_replace(st, NULL, 0);
	ck_assert(store_flush(st, 5000));
	ck_assert_int_eq(store_prices_load(st, &got, &n), ACCELD_OK);
	ck_assert_uint_eq(n, 0);
	free(got);
	ck_assert_int_eq(store_devices_list(st, &rows, &n), ACCELD_OK);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(rows[0].accelerator_type, "H100");
	ck_assert_int_eq(rows[0].first_seen_ms, T0);
	ck_assert_int_eq(rows[0].last_seen_ms, T0 + 5000);
	ck_assert_double_eq(rows[0].usd_per_hour, 10.98);
	free(rows);
	store_close(st);
}
END_TEST

START_TEST(tier_choice_follows_step_and_age)
{
	int64_t now = T0 + 30 * STORE_DAY_MS;

	ck_assert_int_eq(store_pick_tier(NULL, now - STORE_HOUR_MS, 1000, now), STORE_RAW);
	ck_assert_int_eq(store_pick_tier(NULL, now - STORE_HOUR_MS, 60000, now), STORE_MINUTE);
	ck_assert_int_eq(store_pick_tier(NULL, now - 2 * STORE_DAY_MS, 1000, now), STORE_MINUTE);
	ck_assert_int_eq(store_pick_tier(NULL, now - STORE_HOUR_MS, STORE_HOUR_MS, now), STORE_HOUR);
	ck_assert_int_eq(store_pick_tier(NULL, now - 20 * STORE_DAY_MS, 60000, now), STORE_HOUR);
}
END_TEST

/*
 * A month of samples for 8 devices at 1 s (simulated time, written as fast as the writer goes) stays within the
 * documented bound: raw rows live 24 h, minute rollups 14 days, hour rollups 400 days. To stay fast the first
 * 29 days are fed one sample a minute per device: rows older than the raw retention are deleted and each minute
 * becomes one rollup row however many samples it had, so the file holds exactly what a month at 1 s leaves
 * behind. The last 26 hours are fed at 1 s, so the raw tier is full and 1 s rows are already being deleted and
 * their pages reused. ACCELD_STORE_MONTH_DENSE=1 feeds the whole month at 1 s (about a minute).
 * Documented bound: 64 MiB for 8 devices (docs/operations.md, "History").
 */
#define MONTH_DEVICES 8
#define MONTH_DAYS 30
#define MONTH_SIZE_BOUND (64ll << 20)

static size_t month_tick(struct store_sample *out, int64_t s, uint32_t dt)
{
	for (int d = 0; d < MONTH_DEVICES; d++) {
		char id[DEVICE_ID_MAX];

		snprintf(id, sizeof(id), "%s:%d", d == 0 ? "cpu" : "gpu", d == 0 ? 0 : d - 1);
		out[d] = sample(id, T0 + s * 1000, dt, (double)((s + d) % 100) / 100.0);
		out[d].temperature_celsius = 40 + d;
		out[d].power_watts = 100 + (double)(s % 50);
	}
	return MONTH_DEVICES;
}

START_TEST(a_month_of_samples_stays_bounded)
{
	static struct store_sample chunk[MONTH_DEVICES * 4096];
	struct store *st = NULL;
	struct store_opts o = {.backlog_samples = 1 << 16};
	struct store_stats stats;
	const int64_t end = MONTH_DAYS * 86400LL;
	const int64_t dense_from = getenv("ACCELD_STORE_MONTH_DENSE") ? 0 : end - 26 * 3600;
	char path[300], err[256];
	struct stat sb;
	size_t n = 0;

	tmp_path(path, sizeof(path), "month.db");
	o.path = path;
	ck_assert_int_eq(store_open_opts(&o, &st, err, sizeof(err)), ACCELD_OK);
	for (int64_t s = 0; s < end;) {
		uint32_t dt = s < dense_from ? 60 : 1;

		n += month_tick(chunk + n, s, dt * 1000);
		s += dt;
		if (n == sizeof(chunk) / sizeof(chunk[0]) || s >= end) {
			store_add_samples(st, chunk, n);
			n = 0;
			ck_assert(store_flush(st, 60000));
		}
	}
	store_stats(st, &stats);
	ck_assert_uint_eq(stats.dropped_samples, 0);
	store_close(st);
	/* closing checkpoints and removes the WAL: the file is all there is */
	ck_assert_int_eq(stat(path, &sb), 0);
	fprintf(stderr, "a month of samples for %d devices: %.1f MiB (bound %lld MiB)\n", MONTH_DEVICES,
		(double)sb.st_size / 1048576.0, MONTH_SIZE_BOUND >> 20);
	ck_assert_int_le((long long)sb.st_size, MONTH_SIZE_BOUND);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM rollup_hour"), MONTH_DEVICES * (24 * MONTH_DAYS - 1));
	ck_assert_int_ge(file_query(path, "SELECT count(*) FROM rollup_minute"), MONTH_DEVICES * 14 * 1440 - 8);
	ck_assert_int_le(file_query(path, "SELECT count(*) FROM rollup_minute"), MONTH_DEVICES * (14 * 1440 + 61));
	ck_assert_int_ge(file_query(path, "SELECT count(*) FROM samples"), MONTH_DEVICES * 86400);
	ck_assert_int_le(file_query(path, "SELECT count(*) FROM samples"), MONTH_DEVICES * (86400 + 120));
	ck_assert_str_eq(file_text(path, "PRAGMA integrity_check"), "ok");
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("store");
	TCase *tc = tcase_create("store");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, memory_database_is_migrated_and_healthy);
	tcase_add_test(tc, fresh_file_gets_the_newest_schema);
	tcase_add_test(tc, older_file_is_upgraded_keeping_its_rows);
	tcase_add_test(tc, old_job_states_are_migrated);
	tcase_add_test(tc, version_5_reads_back_in_one_vocabulary);
	tcase_add_test(tc, newer_file_is_refused_and_left_alone);
	tcase_add_test(tc, samples_read_back_as_a_raw_series);
	tcase_add_test(tc, rollups_answer_coarse_series_and_usage);
	tcase_add_test(tc, retention_drops_old_raw_rows_but_keeps_rollups);
	tcase_add_test(tc, full_queue_drops_the_oldest_and_recovers);
	tcase_add_test(tc, corrupt_file_is_reported_and_replaced_file_recovers);
	tcase_add_test(tc, full_database_fails_writes_and_keeps_the_backlog);
	tcase_add_test(tc, jobs_are_recorded_interrupted_and_measured);
	tcase_add_test(tc, prices_and_devices_persist);
	tcase_add_test(tc, checks_are_written_replaced_listed_and_expired);
	tcase_add_test(tc, checks_wait_while_the_database_fails);
	tcase_add_test(tc, notified_writes_are_answered_once_durable);
	tcase_add_test(tc, journaled_records_survive_a_crash);
	tcase_add_test(tc, a_second_store_on_the_file_leaves_the_journal_alone);
	tcase_add_test(tc, a_full_record_queue_refuses_the_new_record_not_a_confirmed_one);
	tcase_add_test(tc, tier_choice_follows_step_and_age);
	tcase_add_test(tc, a_month_of_samples_stays_bounded);
	suite_add_tcase(s, tc);
	return s;
}
