/*
 * Unit tests of exec_job.c, the executor's jobs, on the fakes of check_exec.h: the names of their states, requests'
 * defaults, a final job answered once its record is confirmed (or a second after it ended when the record stalls),
 * the devices' queues (a full one refuses), cancelling a queued job, and the ring of recent jobs listed in pages.
 * Nothing here depends on timing, but for the bounds of the stalled record's second.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_exec.h"
#include "check_main.h"
#include "core/clock.h"

/* on_job_record of a store whose commit stalls: keeps the job, confirms nothing. */
static struct exec_job *stalled_job;

static void stall_record(void *ctx, const struct exec_record *rec)
{
	(void)ctx;
	if (!rec->provisional && stalled_job == NULL) {
		exec_job_ref(rec->job);
		stalled_job = rec->job;
	}
}

START_TEST(state_names)
{
	enum exec_state st;

	ck_assert(exec_state_parse("timed_out", &st));
	ck_assert_int_eq(st, EXEC_TIMED_OUT);
	ck_assert(exec_state_parse("interrupted", &st));
	ck_assert_int_eq(st, EXEC_INTERRUPTED);
	ck_assert(!exec_state_parse("timeout", &st));
	for (unsigned i = 0; i < EXEC_STATE_COUNT; i++)
		ck_assert_ptr_nonnull(strstr(exec_state_names_text(), exec_state_name((enum exec_state)i)));
}
END_TEST

/* --- tests --- */

START_TEST(stalled_record_is_answered_within_two_seconds)
{
	struct exec *ex;
	struct exec_request r = saxpy(1000, "cpu:0");
	struct exec_job *job;
	uint64_t t0;
	json_t *doc;

	record_hook_in_use = stall_record;
	ex = start(&backend_native, 8, 1u << 24);
	record_hook_in_use = NULL;
	t0 = clock_mono_ns();
	job = submit_ok(ex, &r);
	/* until its record is confirmed, a finished job reads as running */
	while (stalled_job == NULL)
		usleep(1000);
	ck_assert_int_eq(exec_job_state(job), EXEC_RUNNING);
	exec_job_wait(job);
	ck_assert_uint_ge(clock_mono_ns() - t0, 900000000ull);
	ck_assert_uint_lt(clock_mono_ns() - t0, 2500000000ull);
	ck_assert_int_eq(exec_job_state(job), EXEC_SUCCEEDED);
	doc = exec_job_json(job);
	ck_assert(json_is_false(json_object_get(doc, "recorded")));
	json_decref(doc);
	/* the commit comes later: the job says so */
	exec_record_confirmed(stalled_job, false, true);
	doc = exec_job_json(job);
	ck_assert(json_is_true(json_object_get(doc, "recorded")));
	json_decref(doc);
	exec_job_unref(stalled_job);
	stalled_job = NULL;
	exec_job_unref(job);
	exec_free(ex);
}
END_TEST

START_TEST(queue_full_and_cancel)
{
	struct exec *ex = start(&blocking_native, 2, 1u << 24);
	struct exec_request r;
	struct exec_job *running;
	struct exec_job *q1;
	struct exec_job *q2;

	r = saxpy(64, "cpu:0");
	running = submit_ok(ex, &r);
	gate_wait_entered(1); /* the first job is in the kernel; the queue is empty */
	r = saxpy(64, "cpu:0");
	q1 = submit_ok(ex, &r);
	r = saxpy(64, "cpu:0");
	q2 = submit_ok(ex, &r);
	r = saxpy(64, "cpu:0");
	submit_refused(ex, &r, ACCELD_EBUSY, "QUEUE_FULL");
	ck_assert_int_eq(exec_job_state(q1), EXEC_QUEUED);
	ck_assert_int_eq(exec_cancel(ex, exec_job_id(q1), NULL, NULL), ACCELD_OK);
	ck_assert_int_eq(exec_job_state(q1), EXEC_CANCELLED);
	ck_assert_int_eq(exec_cancel(ex, exec_job_id(q1), NULL, NULL), ACCELD_ECONFLICT);
	ck_assert_int_eq(exec_cancel(ex, exec_job_id(running), NULL, NULL), ACCELD_ECONFLICT);
	ck_assert_int_eq(exec_cancel(ex, "0000", NULL, NULL), ACCELD_ENOTFOUND);
	gate_set(true);
	exec_job_wait(running);
	exec_job_wait(q2);
	ck_assert_int_eq(exec_job_state(running), EXEC_SUCCEEDED);
	ck_assert_int_eq(exec_job_state(q2), EXEC_SUCCEEDED);
	wait_dones(3);
	{
		json_t *all = exec_list_json(ex, -1, 100, 0);
		json_t *cancelled = exec_list_json(ex, EXEC_CANCELLED, 100, 0);
		json_t *page = exec_list_json(ex, -1, 2, 0);
		json_t *next;
		const char *tok = jstr(page, "next_page_token");
		uint64_t after = strtoull(tok, NULL, 10);

		ck_assert_int_eq(json_array_size(json_object_get(all, "jobs")), 3);
		ck_assert_int_eq(json_array_size(json_object_get(cancelled, "jobs")), 1);
		ck_assert_int_eq(json_array_size(json_object_get(page, "jobs")), 2);
		ck_assert_uint_gt(after, 0);
		next = exec_list_json(ex, -1, 2, after);
		ck_assert_int_eq(json_array_size(json_object_get(next, "jobs")), 1);
		ck_assert_ptr_null(json_object_get(next, "next_page_token"));
		/* newest first */
		ck_assert_str_eq(jstr(json_array_get(json_object_get(all, "jobs"), 0), "id"), exec_job_id(q2));
		json_decref(all);
		json_decref(cancelled);
		json_decref(page);
		json_decref(next);
	}
	exec_job_unref(running);
	exec_job_unref(q1);
	exec_job_unref(q2);
	exec_free(ex);
}
END_TEST

START_TEST(requests_start_from_their_defaults)
{
	struct exec_request r;

	exec_request_init(&r);
	ck_assert_float_eq(r.alpha, 1.0f);
	ck_assert_float_eq(r.beta, 0.0f);
	ck_assert_float_eq(r.scale, 1.0f);
	ck_assert_uint_eq(r.seed, 1);
	ck_assert_str_eq(r.trigger, "api");
	ck_assert_uint_eq(r.ndevices, 0);
	ck_assert(!r.pinned && !r.fallback && !r.verify && !r.full && !r.has_inputs);
	ck_assert_uint_eq(r.timeout_ms, 0);
	ck_assert_str_eq(r.backend, "");
	/* a chain holds EXEC_CHAIN_MAX devices; more are ignored, not written past its end */
	for (int i = 0; i < EXEC_CHAIN_MAX + 2; i++) {
		char id[16];

		snprintf(id, sizeof(id), "gpu:%d", i);
		exec_request_add_device(&r, id);
	}
	ck_assert_uint_eq(r.ndevices, EXEC_CHAIN_MAX);
	ck_assert_str_eq(r.devices[0], "gpu:0");
	ck_assert_str_eq(r.devices[EXEC_CHAIN_MAX - 1], "gpu:7");
	/* inline inputs the request still owns are freed with it, twice harmlessly */
	r.inputs[0] = calloc(4, sizeof(float));
	r.inputs[1] = calloc(4, sizeof(float));
	exec_request_release(&r);
	ck_assert_ptr_null(r.inputs[0]);
	ck_assert_ptr_null(r.inputs[1]);
	exec_request_release(&r);
}
END_TEST

/* The ring of recent jobs lists newest first, in pages, by the state shown, without the outputs. */
START_TEST(recent_jobs_are_listed_newest_first_in_pages)
{
	struct exec *ex = start(&backend_native, 8, 1u << 24);
	char ids[5][24];
	char tok[24];
	json_t *page;
	json_t *jobs;
	json_t *doc;

	for (int i = 0; i < 5; i++) {
		struct exec_request r = saxpy(3, "cpu:0");
		struct exec_job *job;

		r.full = true;
		job = submit_ok(ex, &r);
		exec_job_wait(job);
		doc = exec_job_json(job);
		snprintf(ids[i], sizeof(ids[i]), "%s", jstr(doc, "id"));
		ck_assert_int_eq(json_array_size(json_object_get(json_object_get(doc, "result"), "output")), 3);
		json_decref(doc);
		exec_job_unref(job);
	}
	page = exec_list_json(ex, -1, 2, 0);
	jobs = json_object_get(page, "jobs");
	ck_assert_uint_eq(json_array_size(jobs), 2);
	ck_assert_str_eq(jstr(json_array_get(jobs, 0), "id"), ids[4]);
	ck_assert_str_eq(jstr(json_array_get(jobs, 1), "id"), ids[3]);
	ck_assert_ptr_null(json_object_get(json_object_get(json_array_get(jobs, 0), "result"), "output"));
	snprintf(tok, sizeof(tok), "%s", jstr(page, "next_page_token"));
	ck_assert_str_ne(tok, "");
	json_decref(page);
	page = exec_list_json(ex, -1, 2, strtoull(tok, NULL, 10));
	jobs = json_object_get(page, "jobs");
	ck_assert_uint_eq(json_array_size(jobs), 2);
	ck_assert_str_eq(jstr(json_array_get(jobs, 0), "id"), ids[2]);
	ck_assert_str_eq(jstr(json_array_get(jobs, 1), "id"), ids[1]);
	snprintf(tok, sizeof(tok), "%s", jstr(page, "next_page_token"));
	json_decref(page);
	page = exec_list_json(ex, -1, 2, strtoull(tok, NULL, 10));
	jobs = json_object_get(page, "jobs");
	ck_assert_uint_eq(json_array_size(jobs), 1);
	ck_assert_str_eq(jstr(json_array_get(jobs, 0), "id"), ids[0]);
	ck_assert_ptr_null(json_object_get(page, "next_page_token"));
	json_decref(page);
	/* by state: every one succeeded, none failed */
	page = exec_list_json(ex, EXEC_SUCCEEDED, 0, 0);
	ck_assert_uint_eq(json_array_size(json_object_get(page, "jobs")), 5);
	json_decref(page);
	page = exec_list_json(ex, EXEC_FAILED, 0, 0);
	ck_assert_uint_eq(json_array_size(json_object_get(page, "jobs")), 0);
	ck_assert_ptr_null(json_object_get(page, "next_page_token"));
	json_decref(page);
	exec_free(ex);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("exec_job");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, state_names);
	tcase_add_test(tc, stalled_record_is_answered_within_two_seconds);
	tcase_add_test(tc, queue_full_and_cancel);
	tcase_add_test(tc, requests_start_from_their_defaults);
	tcase_add_test(tc, recent_jobs_are_listed_newest_first_in_pages);
	suite_add_tcase(s, tc);
	return s;
}
