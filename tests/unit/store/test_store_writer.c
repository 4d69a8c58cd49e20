/*
 * Unit tests of store_writer.c, the writer thread and its connection: minute and hour rollups and the series they
 * answer, retention of each tier and of jobs, job records (a late start record takes no final state back, jobs left
 * running marked interrupted), prices and devices, the journal replayed after a crash and left alone by a second
 * store on the file, and the size a month of 1 s samples for 8 devices leaves.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_main.h"
#include "check_store.h"
#include "core/clock.h"
#include "detect/device.h"

/* The size of a file, -1 when there is none. */
static long size_of(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

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

/* A minute's rollup keeps the time-weighted utilization, each figure's mean and maximum, and what it covered. */
START_TEST(minute_rollups_keep_the_mean_and_the_max)
{
	struct store *st = NULL;
	struct store_series ser;
	char path[300], err[256];

	tmp_path(path, sizeof(path), "minute.db");
	ck_assert_int_eq(store_open(path, &st, err, sizeof(err)), ACCELD_OK);
	/* the first minute: 30 s at 0.2, 30 s at 0.8, warming from 40 to 99 C; then two minutes more at 0.5 */
	for (int i = 0; i < 180; i++) {
		struct store_sample s = sample("cpu:0", T0 + i * 1000, 1000, i < 30 ? 0.2 : i < 60 ? 0.8 : 0.5);

		s.temperature_celsius = i < 60 ? 40 + i : 50;
		store_add_samples(st, &s, 1);
	}
	ck_assert(store_flush(st, 5000));
	ck_assert_int_eq(file_query(path, "SELECT n FROM rollup_minute WHERE ts = 1700002800000"), 60);
	ck_assert_int_eq(file_query(path, "SELECT present_ms FROM rollup_minute WHERE ts = 1700002800000"), 60000);
	ck_assert_int_eq(file_query(path, "SELECT round(busy_ms) FROM rollup_minute WHERE ts = 1700002800000"), 30000);
	ck_assert_int_eq(file_query(path, "SELECT round(util_max * 10) FROM rollup_minute WHERE ts = 1700002800000"), 8);
	ck_assert_int_eq(file_query(path, "SELECT round(temp_avg * 10) FROM rollup_minute WHERE ts = 1700002800000"),
			 695);
	ck_assert_int_eq(file_query(path, "SELECT temp_max FROM rollup_minute WHERE ts = 1700002800000"), 99);
	/* the minute tier answers with the same figures */
	ck_assert_int_eq(store_series(st, "cpu:0", STORE_UTILIZATION, T0, T0 + 180000, 60000, T0 + 180000, &ser),
			 ACCELD_OK);
	ck_assert_int_eq(ser.tier, STORE_MINUTE);
	ck_assert_uint_eq(ser.n, 3);
	ck_assert_double_eq_tol(ser.points[0].value, 0.5, 1e-9);
	ck_assert_double_eq_tol(ser.points[0].max, 0.8, 1e-9);
	ck_assert_double_eq_tol(ser.points[1].value, 0.5, 1e-9);
	free(ser.points);
	ck_assert_int_eq(store_series(st, "cpu:0", STORE_TEMPERATURE, T0, T0 + 60000, 60000, T0 + 180000, &ser),
			 ACCELD_OK);
	ck_assert_uint_eq(ser.n, 1);
	ck_assert_double_eq_tol(ser.points[0].value, 69.5, 1e-9);
	ck_assert_double_eq_tol(ser.points[0].max, 99, 1e-9);
	free(ser.points);
	store_close(st);
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
	Suite *s = suite_create("store_writer");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, rollups_answer_coarse_series_and_usage);
	tcase_add_test(tc, retention_drops_old_raw_rows_but_keeps_rollups);
	tcase_add_test(tc, jobs_are_recorded_interrupted_and_measured);
	tcase_add_test(tc, prices_and_devices_persist);
	tcase_add_test(tc, journaled_records_survive_a_crash);
	tcase_add_test(tc, a_second_store_on_the_file_leaves_the_journal_alone);
	tcase_add_test(tc, minute_rollups_keep_the_mean_and_the_max);
	tcase_add_test(tc, a_month_of_samples_stays_bounded);
	suite_add_tcase(s, tc);
	return s;
}
