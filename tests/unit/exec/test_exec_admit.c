/*
 * Unit tests of exec_admit.c, a job's admission, on the fakes of check_exec.h: the limits on its sizes and the
 * estimate checked before it queues, placement along the request's devices (unsupported devices, devices gone or
 * changed since start, a named backend), and tiny jobs run on the submitting thread only when the device is idle.
 * Nothing here depends on timing: tests wait for states, never for durations.
 */
#include <stdio.h>
#include <string.h>

#include "check_exec.h"
#include "check_main.h"
#include "exec/kernel.h"

static int dones_now(void)
{
	int n;

	pthread_mutex_lock(&rec_mu);
	n = dones;
	pthread_mutex_unlock(&rec_mu);
	return n;
}

static json_t *result_of(struct exec_job *job)
{
	json_t *doc = exec_job_json(job);
	json_t *res = json_incref(json_object_get(doc, "result"));

	ck_assert(json_is_true(json_object_get(doc, "verified")));
	json_decref(doc);
	return res;
}

START_TEST(limits_are_checked_up_front)
{
	struct exec *ex = start(&backend_native, 8, 1000);
	struct exec_request r = saxpy(400, "cpu:0");
	struct exec_request g;

	submit_refused(ex, &r, ACCELD_ETOOLARGE, "JOB_TOO_LARGE"); /* 3 x 400 elements > 1000 */
	r = saxpy(10, "nope:0");
	submit_refused(ex, &r, ACCELD_ENOTFOUND, "UNKNOWN_DEVICE");
	exec_request_init(&g);
	g.kernel = KERNEL_SGEMM;
	g.shape = (struct kernel_shape){.m = 4, .n = 4, .k = 4};
	g.timeout_ms = 1;
	g.full = true;
	exec_request_add_device(&g, "cpu:0");
	exec_free(ex);

	ex = start(&backend_native, 8, 1ull << 40);
	/* 2 * 8192^3 flops cannot finish in 1 ms even at the optimistic ceiling */
	g.shape = (struct kernel_shape){.m = 8192, .n = 8192, .k = 8192};
	g.full = false;
	submit_refused(ex, &g, ACCELD_EUNPROCESSABLE, "WOULD_TIME_OUT");
	g.shape = (struct kernel_shape){.m = 1024, .n = 1024, .k = 1};
	g.full = true;
	g.timeout_ms = 0;
	submit_refused(ex, &g, ACCELD_ETOOLARGE, "OUTPUT_TOO_LARGE");
	/* the GPU's largest allocation is 4 MiB: 2 Mi floats do not fit */
	r = saxpy(1u << 21, "gpu:0");
	submit_refused(ex, &r, ACCELD_ETOOLARGE, "EXCEEDS_DEVICE_ALLOCATION");
	exec_free(ex);
}
END_TEST

/*
 * A job that fits gpu:0's memory but not what other processes leave free is DEVICE_BUSY up front, naming them; one
 * that does not fit at all is not this check's (EXCEEDS_DEVICE_MEMORY is the backend's); nobody listed, what acceld's
 * own workers hold, or an unknown figure refuses nothing.
 */
START_TEST(memory_other_processes_hold)
{
	struct exec *ex = start(&backend_native, 8, 1ull << 30);
	struct exec_request r = saxpy(1u << 18, "gpu:0"); /* 3 MiB of buffers */
	struct exec_job *job = NULL;
	struct refusal why;
	json_t *doc;

	gpu_available = 1u << 20;
	gpu_holders = 2;
	ck_assert_int_eq(exec_submit(ex, &r, NULL, NULL, &job, &why), ACCELD_EHELD);
	ck_assert_str_eq(reason_name(why.reason), "DEVICE_BUSY");
	ck_assert_msg(strstr(why.detail, "gpu:0's memory is held by process 4242 (python3) holding 100000000 bytes, "
				       "process 4243 (python3) holding 100000000 bytes") != NULL,
		      "%s", why.detail);
	ck_assert_msg(strstr(why.detail, "1048576 of its 1073741824 bytes are free, and the job's buffers take 3145728 "
				       "bytes") != NULL,
		      "%s", why.detail);
	json_decref(why.extra);
	/* with fallback it moves on, saying why */
	r = saxpy(1u << 18, NULL);
	rank(&r, gpu_first);
	job = submit_ok(ex, &r);
	exec_job_wait(job);
	doc = exec_job_json(job);
	ck_assert_str_eq(jstr(doc, "device"), "cpu:0");
	ck_assert_msg(strstr(jstr(doc, "fallback_reason"), "DEVICE_BUSY") != NULL, "%s", jstr(doc, "fallback_reason"));
	json_decref(doc);
	exec_job_unref(job);
	/* admitted (its run then fails on the failing GPU backend): acceld's own workers hold the rest, nobody else is
	 * listed, the figure is unknown, or the job fits what is free */
	gpu_own = 4u << 20;
	r = saxpy(1u << 18, "gpu:0");
	exec_job_unref(submit_ok(ex, &r));
	gpu_own = 0;
	gpu_holders = 0;
	r = saxpy(1u << 18, "gpu:0");
	exec_job_unref(submit_ok(ex, &r));
	gpu_holders = 2;
	gpu_available = 0;
	r = saxpy(1u << 18, "gpu:0");
	exec_job_unref(submit_ok(ex, &r));
	gpu_available = 4u << 20;
	r = saxpy(1u << 18, "gpu:0");
	exec_job_unref(submit_ok(ex, &r));
	exec_free(ex);
}
END_TEST

START_TEST(tpu_is_unsupported_and_prefer_falls_back)
{
	struct exec *ex = start(&backend_native, 8, 1u << 24);
	struct exec_request r = saxpy(1000, "tpu:0");
	struct exec_job *job;
	json_t *doc;

	submit_refused(ex, &r, ACCELD_EUNSUPPORTED, "UNSUPPORTED");
	r = saxpy(1000, NULL);
	rank(&r, tpu_first);
	job = submit_ok(ex, &r);
	exec_job_wait(job);
	doc = exec_job_json(job);
	ck_assert_str_eq(jstr(doc, "state"), "succeeded");
	ck_assert(json_is_true(json_object_get(doc, "fell_back")));
	ck_assert_str_eq(jstr(doc, "fallback_from"), "tpu:0");
	ck_assert_msg(strstr(jstr(doc, "fallback_reason"), "not executable") != NULL, "%s", jstr(doc, "fallback_reason"));
	/* the GPU's (failing) OpenCL is skipped for a tiny job: it runs natively */
	ck_assert_str_eq(jstr(doc, "device"), "cpu:0");
	ck_assert_msg(strstr(jstr(doc, "placement"), "tiny job") != NULL, "%s", jstr(doc, "placement"));
	json_decref(doc);
	exec_job_unref(job);
	/* a named device may fall back when the request allows it */
	r = saxpy(1000, NULL);
	rank(&r, tpu_first);
	r.pinned = true;
	job = submit_ok(ex, &r);
	exec_job_wait(job);
	ck_assert_int_eq(exec_job_state(job), EXEC_SUCCEEDED);
	exec_job_unref(job);
	exec_free(ex);
}
END_TEST

START_TEST(devices_gone_or_changed_since_start_are_not_used)
{
	struct exec *ex = start(&backend_native, 8, 1u << 26);
	struct exec_request r = saxpy(1u << 19, NULL);
	struct exec_job *job;
	json_t *doc;

	gpu_presence = EXEC_GONE;
	rank(&r, gpu_first);
	job = submit_ok(ex, &r);
	exec_job_wait(job);
	doc = exec_job_json(job);
	/* the GPU is skipped, not tried and failed */
	ck_assert_str_eq(jstr(doc, "device"), "cpu:0");
	ck_assert(json_object_get(doc, "fallback_reason") == NULL ||
		  strstr(jstr(doc, "fallback_reason"), "gpu:0") == NULL);
	json_decref(doc);
	exec_job_unref(job);
	r = saxpy(1u << 19, "gpu:0");
	submit_refused(ex, &r, ACCELD_ENOTFOUND, "UNKNOWN_DEVICE");
	gpu_presence = EXEC_CHANGED;
	r = saxpy(1u << 19, "gpu:0");
	submit_refused(ex, &r, ACCELD_ECONFLICT, "DEVICE_CHANGED");
	exec_free(ex);
}
END_TEST

/* A named backend is used where it serves the device, and refused plainly where it does not. */
START_TEST(named_backend)
{
	struct exec *ex = start(&backend_native, 8, 1u << 24);
	struct exec_request r = saxpy(1000, "cpu:0");
	struct exec_job *job;
	json_t *doc;

	snprintf(r.backend, sizeof(r.backend), "opencl");
	submit_refused(ex, &r, ACCELD_EUNSUPPORTED, "UNSUPPORTED");
	r = saxpy(1000, "cpu:0");
	snprintf(r.backend, sizeof(r.backend), "cuda");
	submit_refused(ex, &r, ACCELD_EINVAL, "INVALID_VALUE");
	r = saxpy(1000, "cpu:0");
	snprintf(r.backend, sizeof(r.backend), "native");
	job = submit_ok(ex, &r);
	exec_job_wait(job);
	doc = exec_job_json(job);
	ck_assert_str_eq(jstr(doc, "backend"), "native");
	json_decref(doc);
	exec_job_unref(job);
	r = saxpy(10, NULL);
	submit_refused(ex, &r, ACCELD_ECONFLICT, "NO_MATCHING_DEVICE"); /* no device at all */
	exec_free(ex);
}
END_TEST

/*
 * A tiny job on an idle device runs on the submitting thread and is final (done called) when exec_submit returns;
 * with a job running on the device the same tiny job queues behind it and runs on the worker, with the same
 * result. Jobs above the inline size always queue.
 */
START_TEST(tiny_jobs_run_inline_only_when_idle)
{
	struct exec *ex = start(&noting_native, 8, 1u << 24);
	struct exec_request r = saxpy(1024, "cpu:0");
	struct exec_job *warm;
	struct exec_job *here;
	struct exec_job *gate;
	struct exec_job *queued;
	json_t *a;
	json_t *b;

	/* once a job has run on the worker, its backend is open and ready for inline runs */
	gate_set(true);
	r = saxpy(GATE_N, "cpu:0");
	warm = submit_ok(ex, &r);
	exec_job_wait(warm);
	ck_assert(!ran_on_this_thread()); /* above the inline size: the worker ran it */
	exec_job_unref(warm);
	wait_dones(1);

	r = saxpy(1024, "cpu:0");
	r.verify = true;
	here = submit_ok(ex, &r);
	ck_assert_int_eq(dones_now(), 2); /* answered before exec_submit returned */
	ck_assert_int_eq(exec_job_state(here), EXEC_SUCCEEDED);
	ck_assert(ran_on_this_thread());

	gate_set(false);
	r = saxpy(GATE_N, "cpu:0");
	gate = submit_ok(ex, &r);
	gate_wait_entered(1);
	r = saxpy(1024, "cpu:0");
	r.verify = true;
	queued = submit_ok(ex, &r);
	ck_assert_int_eq(exec_job_state(queued), EXEC_QUEUED);
	ck_assert_int_eq(dones_now(), 2);
	gate_set(true);
	exec_job_wait(queued);
	ck_assert_int_eq(exec_job_state(queued), EXEC_SUCCEEDED);
	ck_assert(!ran_on_this_thread());

	a = result_of(here);
	b = result_of(queued);
	ck_assert_msg(json_equal(a, b), "inline and queued runs of the same job differ");
	json_decref(a);
	json_decref(b);
	exec_job_unref(here);
	exec_job_unref(gate);
	exec_job_unref(queued);
	exec_free(ex);
}
END_TEST

/* Backends that do not allow inline runs (OpenCL, the fakes) always go through the worker. */
START_TEST(tiny_jobs_queue_on_other_backends)
{
	struct exec *ex = start(&blocking_native, 8, 1u << 24);
	struct exec_request r = saxpy(16, "cpu:0");
	struct exec_job *job;

	job = submit_ok(ex, &r);
	gate_wait_entered(1);
	ck_assert_int_eq(exec_job_state(job), EXEC_RUNNING);
	gate_set(true);
	exec_job_wait(job);
	ck_assert_int_eq(exec_job_state(job), EXEC_SUCCEEDED);
	exec_job_unref(job);
	exec_free(ex);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("exec_admit");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, limits_are_checked_up_front);
	tcase_add_test(tc, memory_other_processes_hold);
	tcase_add_test(tc, tpu_is_unsupported_and_prefer_falls_back);
	tcase_add_test(tc, devices_gone_or_changed_since_start_are_not_used);
	tcase_add_test(tc, named_backend);
	tcase_add_test(tc, tiny_jobs_run_inline_only_when_idle);
	tcase_add_test(tc, tiny_jobs_queue_on_other_backends);
	suite_add_tcase(s, tc);
	return s;
}
