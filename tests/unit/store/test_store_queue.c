/*
 * Unit tests of store_queue.c, the queues that writes go into: the sample queue's loss policy (the oldest go), the
 * record queue's (the newest is refused, never a confirmed one), completions answered once durable, group commit
 * without a journal before the call returns, and health checks waiting while the database fails.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "check_main.h"
#include "check_store.h"

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
	ck_assert_msg(strstr(err, "cannot create the folder") != NULL && strstr(err, "Not a directory") != NULL, "%s", err);
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

/*
 * Group commit without a journal (a memory database): a record with a completion is committed by the calling
 * thread, and its completion called true, before store_job_record_notify returns, though the writer would wait a
 * minute; a read sees it at once.
 */
START_TEST(group_commit_answers_before_returning)
{
	struct store *st = NULL;
	struct store_opts o = {.path = ":memory:", .flush_interval_ms = 60000};
	struct store_job j = {.id = "job-g", .device = "cpu:0", .kernel = "dot", .state = "succeeded",
			      .submitted_ms = T0, .started_ms = T0, .finished_ms = T0 + 1, .flops = NAN, .bytes = NAN,
			      .queued_ms = NAN, .transfer_ms = NAN, .kernel_ms = 1, .total_ms = NAN, .cost_usd = NAN};
	struct store_price p = {.selector = "type", .value = "gpu", .usd_per_hour = 2, .usd_per_hour_spot = NAN};
	struct store_price *pv = NULL;
	struct done_count jc = {0}, pc = {0};
	struct store_stats stats;
	struct store_job got;
	size_t np = 0;
	char err[256];

	ck_assert_int_eq(store_open_opts(&o, &st, err, sizeof(err)), ACCELD_OK);
	/* records without a completion wait for the writer's batch, and go into the next commit */
	for (int i = 0; i < 3; i++) {
		struct store_job q = j;

		snprintf(q.id, sizeof(q.id), "queued-%d", i);
		store_job_record(st, &q);
	}
	store_job_record_notify(st, &j, count_done, &jc);
	ck_assert_int_eq(jc.calls, 1);
	ck_assert(jc.recorded);
	store_stats(st, &stats);
	ck_assert_uint_eq(stats.journaled, 0);
	ck_assert_uint_ge(stats.commits, 1);
	ck_assert_uint_eq(stats.backlog, 0); /* the three before it shared its commit */
	ck_assert_int_eq(store_job_get(st, "job-g", &got), ACCELD_OK);
	ck_assert_int_eq(store_job_get(st, "queued-2", &got), ACCELD_OK);
	/* prices the same way */
	store_prices_replace_notify(st, &p, 1, count_done, &pc);
	ck_assert(pc.calls == 1 && pc.recorded);
	ck_assert_int_eq(store_prices_load(st, &pv, &np), ACCELD_OK);
	ck_assert_uint_eq(np, 1);
	ck_assert_str_eq(pv[0].value, "gpu");
	free(pv);
	store_stats(st, &stats);
	ck_assert_uint_eq(stats.confirmed, 2);
	ck_assert_uint_eq(stats.unconfirmed, 0);
	store_close(st);
}
END_TEST

/* Samples past the queue's capacity push out the oldest, counted; added in one call or one at a time alike. */
START_TEST(a_full_sample_queue_keeps_the_newest)
{
	struct store *st = NULL;
	struct store_opts o = {.backlog_samples = 8, .retry_interval_ms = 60000};
	struct store_sample v[20];
	struct store_stats stats;
	char path[320], blocker[300], err[256];
	FILE *f;

	/* a database that cannot be opened keeps everything in the queue */
	tmp_path(blocker, sizeof(blocker), "blocked");
	snprintf(path, sizeof(path), "%s/a.db", blocker);
	f = fopen(blocker, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	o.path = path;
	ck_assert_int_eq(store_open_opts(&o, &st, err, sizeof(err)), ACCELD_OK);
	for (int i = 0; i < 20; i++)
		v[i] = sample("cpu:0", T0 + i * 1000, 1000, 0.5);
	store_add_samples(st, v, 20);
	store_stats(st, &stats);
	ck_assert_uint_eq(stats.dropped_samples, 12);
	ck_assert_uint_eq(stats.backlog, 8);
	store_add_samples(st, v, 3);
	store_stats(st, &stats);
	ck_assert_uint_eq(stats.dropped_samples, 15);
	ck_assert_uint_eq(stats.backlog, 8);
	ck_assert_uint_eq(stats.written_samples, 0);
	store_close(st);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("store_queue");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, full_queue_drops_the_oldest_and_recovers);
	tcase_add_test(tc, notified_writes_are_answered_once_durable);
	tcase_add_test(tc, a_full_record_queue_refuses_the_new_record_not_a_confirmed_one);
	tcase_add_test(tc, checks_wait_while_the_database_fails);
	tcase_add_test(tc, group_commit_answers_before_returning);
	tcase_add_test(tc, a_full_sample_queue_keeps_the_newest);
	suite_add_tcase(s, tc);
	return s;
}
