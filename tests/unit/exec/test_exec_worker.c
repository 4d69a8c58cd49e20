/*
 * Unit tests of exec_worker.c, the devices' workers, on the fakes of check_exec.h: jobs run and verified on the
 * native backend for every kernel, inline inputs used, a job its device failed on moved to the next device of its
 * chain, and the reaper ending queued and running jobs past their deadlines. Nothing here depends on timing: tests
 * wait for states, never for durations.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_exec.h"
#include "check_main.h"
#include "exec/kernel.h"

START_TEST(runs_and_verifies_natively)
{
	struct exec *ex = start(&backend_native, 8, 1u << 24);
	struct exec_request r = saxpy(100003, "cpu:0");
	struct exec_job *job;
	json_t *doc;

	r.verify = true;
	job = submit_ok(ex, &r);
	exec_job_wait(job);
	ck_assert_int_eq(exec_job_state(job), EXEC_SUCCEEDED);
	doc = exec_job_json(job);
	ck_assert_str_eq(jstr(doc, "state"), "succeeded");
	ck_assert_str_eq(jstr(doc, "backend"), "native");
	ck_assert(json_is_true(json_object_get(doc, "verified")));
	ck_assert_ptr_nonnull(json_object_get(json_object_get(doc, "result"), "checksum"));
	ck_assert_int_eq(json_array_size(json_object_get(json_object_get(json_object_get(doc, "result"), "summary"),
							 "first")),
			 8);
	ck_assert_ptr_nonnull(json_object_get(doc, "cost_usd")); /* the CPU has a price */
	ck_assert_ptr_nonnull(json_object_get(json_object_get(doc, "throughput"), "gflops"));
	json_decref(doc);
	wait_records(1);
	ck_assert_str_eq(last_state, "succeeded");
	ck_assert(!isnan(last_cost));
	/* the store heard of it when it started, before it finished */
	ck_assert_int_eq(starts, 1);
	ck_assert_str_eq(start_state, "running");
	ck_assert_str_eq(start_id, exec_job_id(job));
	ck_assert_int_lt(start_seq, record_seq);
	exec_job_unref(job);
	exec_free(ex);
}
END_TEST

START_TEST(every_kernel_verifies)
{
	struct exec *ex = start(&backend_native, 8, 1u << 24);
	static const enum kernel_id kernels[] = {KERNEL_SAXPY, KERNEL_TRIAD, KERNEL_DOT, KERNEL_SGEMM, KERNEL_SOFTMAX};

	for (size_t i = 0; i < 5; i++) {
		struct exec_request r;
		struct exec_job *job;
		json_t *doc;

		exec_request_init(&r);
		r.kernel = kernels[i];
		r.shape = (struct kernel_shape){.m = 37, .n = 53, .k = 29};
		r.beta = -1.0f;
		r.verify = true;
		r.full = true;
		exec_request_add_device(&r, "cpu:0");
		job = submit_ok(ex, &r);
		exec_job_wait(job);
		doc = exec_job_json(job);
		ck_assert_msg(json_is_true(json_object_get(doc, "verified")), "%s not verified",
			      kernel_name(kernels[i]));
		ck_assert_ptr_nonnull(json_object_get(json_object_get(doc, "result"), "output"));
		json_decref(doc);
		exec_job_unref(job);
	}
	exec_free(ex);
}
END_TEST

START_TEST(inline_inputs_are_used)
{
	struct exec *ex = start(&backend_native, 8, 1u << 24);
	struct exec_request r = saxpy(3, "cpu:0");
	struct exec_job *job;
	json_t *doc;
	json_t *out;

	r.inputs[0] = malloc(3 * sizeof(float));
	r.inputs[1] = malloc(3 * sizeof(float));
	for (int i = 0; i < 3; i++) {
		r.inputs[0][i] = (float)(i + 1);
		r.inputs[1][i] = 10.0f;
	}
	r.has_inputs = true;
	r.full = true;
	job = submit_ok(ex, &r);
	ck_assert_ptr_null(r.inputs[0]); /* taken over */
	exec_job_wait(job);
	doc = exec_job_json(job);
	out = json_object_get(json_object_get(doc, "result"), "output");
	ck_assert_int_eq(json_array_size(out), 3);
	for (int i = 0; i < 3; i++)
		ck_assert(fabs(json_real_value(json_array_get(out, (size_t)i)) - (2.0 * (i + 1) + 10.0)) < 1e-6);
	ck_assert_str_eq(jstr(doc, "inputs"), "inline");
	json_decref(doc);
	exec_job_unref(job);
	exec_free(ex);
}
END_TEST

START_TEST(device_failure_retries_on_next_device)
{
	struct exec *ex = start(&backend_native, 8, 1u << 26);
	struct exec_request r = saxpy(1u << 19, NULL); /* 6 MB moved: not a tiny job */
	struct exec_job *job;
	json_t *doc;

	rank(&r, gpu_first);
	job = submit_ok(ex, &r);
	exec_job_wait(job);
	doc = exec_job_json(job);
	ck_assert_str_eq(jstr(doc, "state"), "succeeded");
	ck_assert_str_eq(jstr(doc, "device"), "cpu:0");
	ck_assert(json_is_true(json_object_get(doc, "fell_back")));
	ck_assert_str_eq(jstr(doc, "fallback_from"), "gpu:0");
	ck_assert_msg(strstr(jstr(doc, "fallback_reason"), "CL_OUT_OF_RESOURCES") != NULL, "%s",
		      jstr(doc, "fallback_reason"));
	json_decref(doc);
	exec_job_unref(job);
	/* naming the device means no fallback: the failure is the answer */
	r = saxpy(1u << 19, "gpu:0");
	job = submit_ok(ex, &r);
	exec_job_wait(job);
	ck_assert_int_eq(exec_job_state(job), EXEC_FAILED);
	{
		char detail[256];

		ck_assert_int_eq(exec_job_error(job, detail, sizeof(detail)), REASON_DEVICE_FAILURE);
		ck_assert(strstr(detail, "CL_OUT_OF_RESOURCES") != NULL);
	}
	exec_job_unref(job);
	exec_free(ex);
}
END_TEST

START_TEST(timeouts_of_queued_and_running_jobs)
{
	struct exec *ex = start(&blocking_native, 4, 1u << 24);
	struct exec_request r = saxpy(64, "cpu:0");
	struct exec_job *running;
	struct exec_job *queued;
	json_t *doc;

	r.timeout_ms = 50;
	running = submit_ok(ex, &r);
	gate_wait_entered(1);
	r = saxpy(64, "cpu:0");
	r.timeout_ms = 30;
	queued = submit_ok(ex, &r);
	/* both deadlines pass while the gate is shut: each is answered as timed out */
	wait_dones(2);
	ck_assert_int_eq(exec_job_state(queued), EXEC_TIMED_OUT);
	ck_assert_int_eq(exec_job_state(running), EXEC_TIMED_OUT);
	doc = exec_job_json(running);
	ck_assert_str_eq(jstr(json_object_get(doc, "error"), "reason"), "TIMED_OUT");
	json_decref(doc);
	/* the queued one is recorded at once; the running one when its kernel ends */
	wait_records(1);
	gate_set(true);
	exec_job_wait(running);
	wait_records(2);
	ck_assert_str_eq(last_state, "timed_out");
	ck_assert_int_eq(exec_job_state(running), EXEC_TIMED_OUT);
	exec_job_unref(running);
	exec_job_unref(queued);
	exec_free(ex);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("exec_worker");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, runs_and_verifies_natively);
	tcase_add_test(tc, every_kernel_verifies);
	tcase_add_test(tc, inline_inputs_are_used);
	tcase_add_test(tc, device_failure_retries_on_next_device);
	tcase_add_test(tc, timeouts_of_queued_and_running_jobs);
	suite_add_tcase(s, tc);
	return s;
}
