/*
 * Unit tests of store.c, the store's life cycle, health and names: a memory database opened migrated and healthy,
 * options refused or defaulted, no store said plainly, closing writes what is queued, and a full database reported
 * while its backlog waits. The parts have their own tests (test_store_db.c, _queue, _writer, _read, _sql).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "check_main.h"
#include "check_store.h"

START_TEST(memory_database_is_migrated_and_healthy)
{
	struct store *st = NULL;
	char err[256];

	ck_assert_int_eq(store_open(":memory:", &st, err, sizeof(err)), ACCELD_OK);
	ck_assert_str_eq(err, "");
	ck_assert(store_healthy(st, err, sizeof(err)));
	ck_assert_int_eq(store_schema_version(), 10);
	ck_assert_str_eq(store_sqlite_version(), sqlite3_libversion());
	store_close(st);
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

START_TEST(names_of_sources_metrics_and_tiers)
{
	static const char *const sources[] = {"none", "proc_stat", "cgroup", "device", "executor"};
	static const char *const metrics[] = {"utilization_ratio", "memory_used_bytes", "temperature_celsius",
					      "power_watts"};
	enum store_metric m;

	for (int i = 0; i < STORE_SRC_COUNT; i++)
		ck_assert_str_eq(store_source_name((enum store_source)i), sources[i]);
	/* a source no row should carry reads as no measurement, not as garbage */
	ck_assert_str_eq(store_source_name(STORE_SRC_COUNT), "none");
	ck_assert_str_eq(store_source_name((enum store_source)-1), "none");
	for (int i = 0; i < STORE_METRIC_COUNT; i++) {
		ck_assert_str_eq(store_metric_name((enum store_metric)i), metrics[i]);
		ck_assert_int_eq(store_metric_parse(metrics[i], &m), 0);
		ck_assert_int_eq(m, i);
	}
	ck_assert_int_eq(store_metric_parse("humidity", &m), -1);
	ck_assert_int_eq(store_metric_parse("Power_Watts", &m), -1);
	ck_assert_int_eq(store_metric_parse("", &m), -1);
	ck_assert_str_eq(store_tier_name(STORE_RAW), "raw");
	ck_assert_str_eq(store_tier_name(STORE_MINUTE), "minute");
	ck_assert_str_eq(store_tier_name(STORE_HOUR), "hour");
}
END_TEST

START_TEST(options_are_checked_and_defaulted)
{
	struct store *st = NULL;
	struct store_opts o = {.path = ""};
	struct store_stats stats;
	int64_t raw, minute, hour;
	char err[256];

	ck_assert_int_eq(store_open_opts(NULL, &st, err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_str_eq(err, "no database path");
	ck_assert_int_eq(store_open_opts(&o, &st, err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(store_open(NULL, &st, err, sizeof(err)), ACCELD_EINVAL);

	/* retention left at 0 is the documented default of each tier */
	ck_assert_int_eq(store_open(":memory:", &st, err, sizeof(err)), ACCELD_OK);
	store_retention(st, &raw, &minute, &hour);
	ck_assert_int_eq(raw, STORE_RETENTION_RAW_MS);
	ck_assert_int_eq(minute, STORE_RETENTION_MINUTE_MS);
	ck_assert_int_eq(hour, STORE_RETENTION_HOUR_MS);
	store_stats(st, &stats);
	ck_assert(stats.open);
	ck_assert_uint_eq(stats.reopens, 1);
	ck_assert_str_eq(stats.last_error, "");
	store_close(st);

	o = (struct store_opts){.path = ":memory:", .retention_raw_ms = STORE_HOUR_MS, .retention_hour_ms = -5};
	ck_assert_int_eq(store_open_opts(&o, &st, err, sizeof(err)), ACCELD_OK);
	store_retention(st, &raw, &minute, &hour);
	ck_assert_int_eq(raw, STORE_HOUR_MS);
	ck_assert_int_eq(minute, STORE_RETENTION_MINUTE_MS);
	ck_assert_int_eq(hour, STORE_RETENTION_HOUR_MS);
	store_close(st);
}
END_TEST

/* No store (the service runs without one when it cannot be opened) is said plainly, never a crash. */
START_TEST(no_store_is_unhealthy_and_empty)
{
	struct store_stats stats;
	char err[256];

	ck_assert(!store_healthy(NULL, err, sizeof(err)));
	ck_assert_str_eq(err, "database not open");
	memset(&stats, 0xff, sizeof(stats));
	store_stats(NULL, &stats);
	ck_assert_uint_eq(stats.backlog, 0);
	ck_assert(!stats.open);
	store_close(NULL);
}
END_TEST

/* Closing writes what is queued, though the writer would wait a minute before its next batch. */
START_TEST(close_writes_what_is_queued)
{
	struct store *st = NULL;
	struct store_opts o = {.flush_interval_ms = 60000};
	struct store_job j = {.id = "job-c", .device = "cpu:0", .kernel = "dot", .state = "succeeded",
			      .submitted_ms = T0, .started_ms = T0, .finished_ms = T0 + 1, .flops = NAN, .bytes = NAN,
			      .queued_ms = NAN, .transfer_ms = NAN, .kernel_ms = 1, .total_ms = NAN, .cost_usd = NAN};
	char path[300], err[256];

	tmp_path(path, sizeof(path), "close.db");
	o.path = path;
	ck_assert_int_eq(store_open_opts(&o, &st, err, sizeof(err)), ACCELD_OK);
	for (int i = 0; i < 100; i++) {
		struct store_sample s = sample("cpu:0", T0 + i * 1000, 1000, 0.5);

		store_add_samples(st, &s, 1);
	}
	store_job_record(st, &j);
	store_close(st);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM samples"), 100);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM jobs WHERE id = 'job-c'"), 1);
	ck_assert_int_eq(file_query(path, "SELECT count(*) FROM devices"), 1);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("store");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, memory_database_is_migrated_and_healthy);
	tcase_add_test(tc, full_database_fails_writes_and_keeps_the_backlog);
	tcase_add_test(tc, names_of_sources_metrics_and_tiers);
	tcase_add_test(tc, options_are_checked_and_defaulted);
	tcase_add_test(tc, no_store_is_unhealthy_and_empty);
	tcase_add_test(tc, close_writes_what_is_queued);
	suite_add_tcase(s, tc);
	return s;
}
