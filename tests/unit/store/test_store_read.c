/*
 * Unit tests of store_read.c, the queries: series on the step's clock boundaries, the tier a window reads, what a
 * query refuses (no window, no step, more than 100,000 buckets), jobs' usage and throughput windows, health checks
 * listed in pages, and reads of a database that cannot be opened.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "check_store.h"

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

/* What a query cannot answer is refused: no window, no step, too many buckets, an unknown metric. */
START_TEST(queries_refuse_what_they_cannot_answer)
{
	struct store *st = NULL;
	struct store_series ser;
	struct store_usage *u = NULL;
	size_t n = 0;
	char err[256];

	ck_assert_int_eq(store_open(":memory:", &st, err, sizeof(err)), ACCELD_OK);
	for (int i = 0; i < 10; i++) {
		struct store_sample s = sample("cpu:0", T0 + i * 1000, 1000, 0.5);

		store_add_samples(st, &s, 1);
	}
	ck_assert(store_flush(st, 5000));
	/* an empty window, a step of nothing, an unknown metric */
	ck_assert_int_eq(store_series(st, "cpu:0", STORE_UTILIZATION, T0 + 5000, T0 + 5000, 1000, T0, &ser),
			 ACCELD_EINVAL);
	ck_assert_int_eq(store_series(st, "cpu:0", STORE_UTILIZATION, T0 + 5000, T0, 1000, T0, &ser), ACCELD_EINVAL);
	ck_assert_int_eq(store_series(st, "cpu:0", STORE_UTILIZATION, T0, T0 + 5000, 0, T0, &ser), ACCELD_EINVAL);
	ck_assert_int_eq(store_series(st, "cpu:0", STORE_UTILIZATION, T0, T0 + 5000, -1000, T0, &ser), ACCELD_EINVAL);
	ck_assert_int_eq(store_series(st, "cpu:0", STORE_METRIC_COUNT, T0, T0 + 5000, 1000, T0, &ser), ACCELD_EINVAL);
	ck_assert_ptr_null(ser.points);
	/* 100,000 buckets at most */
	ck_assert_int_eq(store_series(st, "cpu:0", STORE_UTILIZATION, T0, T0 + 100000, 1, T0 + 100000, &ser),
			 ACCELD_OK);
	ck_assert_uint_eq(ser.n, 10); /* one point on the millisecond of each sample */
	free(ser.points);
	ck_assert_int_eq(store_series(st, "cpu:0", STORE_UTILIZATION, T0, T0 + 100001, 1, T0 + 100001, &ser),
			 ACCELD_EINVAL);
	ck_assert_int_eq(store_usage(st, "cpu:0", T0, T0 + 5000, 0, &u, &n), ACCELD_EINVAL);
	ck_assert_int_eq(store_usage(st, "cpu:0", T0, T0 + 100001, 1, &u, &n), ACCELD_EINVAL);
	ck_assert_int_eq(store_usage(st, "cpu:0", T0, T0, 1000, &u, &n), ACCELD_EINVAL);
	ck_assert_ptr_null(u);
	ck_assert_uint_eq(n, 0);
	/* a device never seen */
	ck_assert_int_eq(store_usage(st, "gpu:9", T0, T0 + 5000, 1000, &u, &n), ACCELD_ENOTFOUND);
	store_close(st);
}
END_TEST

/* Jobs count toward usage when they finished in [start, end); throughput is over the last 20 succeeded. */
START_TEST(job_reads_keep_their_windows)
{
	struct store *st = NULL;
	struct store_job j = {.device = "cpu:0", .kernel = "sgemm", .state = "succeeded", .submitted_ms = T0,
			      .started_ms = T0, .flops = 1e9, .bytes = NAN, .queued_ms = NAN, .transfer_ms = NAN,
			      .kernel_ms = 10, .total_ms = 1000, .cost_usd = NAN};
	struct store_jobs_usage ju;
	double fps;
	unsigned nj;
	char err[256];

	ck_assert_int_eq(store_open(":memory:", &st, err, sizeof(err)), ACCELD_OK);
	/* 5 old jobs at 100 GFLOP/s, then 20 newer at 400 GFLOP/s, and failures, which never count */
	for (int i = 0; i < 25; i++) {
		snprintf(j.id, sizeof(j.id), "j-%d", i);
		j.finished_ms = T0 + 1000 * (i + 1);
		j.flops = i < 5 ? 1e9 : 4e9;
		j.cost_usd = i == 0 ? 0.5 : NAN;
		store_job_record(st, &j);
	}
	snprintf(j.id, sizeof(j.id), "broken");
	snprintf(j.state, sizeof(j.state), "failed");
	j.finished_ms = T0 + 30000;
	j.flops = 1e15;
	store_job_record(st, &j);
	ck_assert(store_flush(st, 5000));
	ck_assert_int_eq(store_throughput(st, "cpu:0", "sgemm", &fps, &nj), ACCELD_OK);
	ck_assert_uint_eq(nj, 20);
	ck_assert_double_eq_tol(fps, 4e11, 1);
	/* the window is half-open: j-0 finished at T0 + 1000, j-4 at T0 + 5000 */
	ck_assert_int_eq(store_jobs_usage(st, "cpu:0", T0 + 1000, T0 + 5000, &ju), ACCELD_OK);
	ck_assert_uint_eq(ju.jobs, 4);
	ck_assert_double_eq_tol(ju.seconds, 4, 1e-9);
	ck_assert_uint_eq(ju.priced, 1);
	ck_assert_double_eq_tol(ju.cost_usd, 0.5, 1e-9);
	ck_assert_int_eq(store_jobs_usage(st, "cpu:0", T0 + 1001, T0 + 5000, &ju), ACCELD_OK);
	ck_assert_uint_eq(ju.jobs, 3);
	ck_assert_uint_eq(ju.priced, 0);
	ck_assert_int_eq(store_jobs_usage(st, "gpu:0", T0, T0 + 60000, &ju), ACCELD_OK);
	ck_assert_uint_eq(ju.jobs, 0);
	store_close(st);
}
END_TEST

/* A database that cannot be read answers every query with EUNAVAILABLE, and nothing half-filled. */
START_TEST(reads_of_a_database_that_cannot_be_opened_are_unavailable)
{
	struct store *st = NULL;
	struct store_opts o = {.retry_interval_ms = 60000};
	struct store_series ser;
	struct store_usage *u = NULL;
	struct store_device_row *rows = NULL;
	struct store_price *prices = NULL;
	struct store_jobs_usage ju;
	struct store_job got;
	size_t n = 7;
	char path[320], blocker[300], err[256];
	FILE *f;

	tmp_path(blocker, sizeof(blocker), "blocked");
	snprintf(path, sizeof(path), "%s/a.db", blocker);
	f = fopen(blocker, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	o.path = path;
	ck_assert_int_eq(store_open_opts(&o, &st, err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(store_series(st, "cpu:0", STORE_UTILIZATION, T0, T0 + 5000, 1000, T0, &ser),
			 ACCELD_EUNAVAILABLE);
	ck_assert_ptr_null(ser.points);
	ck_assert_int_eq(store_usage(st, "cpu:0", T0, T0 + 5000, 1000, &u, &n), ACCELD_EUNAVAILABLE);
	ck_assert_ptr_null(u);
	ck_assert_int_eq(store_devices_list(st, &rows, &n), ACCELD_EUNAVAILABLE);
	ck_assert_int_eq(store_prices_load(st, &prices, &n), ACCELD_EUNAVAILABLE);
	ck_assert_int_eq(store_jobs_usage(st, "cpu:0", T0, T0 + 5000, &ju), ACCELD_EUNAVAILABLE);
	ck_assert_int_eq(store_job_get(st, "j-1", &got), ACCELD_EUNAVAILABLE);
	store_close(st);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("store_read");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, samples_read_back_as_a_raw_series);
	tcase_add_test(tc, checks_are_written_replaced_listed_and_expired);
	tcase_add_test(tc, tier_choice_follows_step_and_age);
	tcase_add_test(tc, queries_refuse_what_they_cannot_answer);
	tcase_add_test(tc, job_reads_keep_their_windows);
	tcase_add_test(tc, reads_of_a_database_that_cannot_be_opened_are_unavailable);
	suite_add_tcase(s, tc);
	return s;
}
