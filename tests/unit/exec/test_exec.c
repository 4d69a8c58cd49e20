/*
 * Unit tests of exec.c, the executor's life cycle, on the fakes of check_exec.h: threads that fail to start, the
 * options refused, free cancelling what is queued, and many jobs submitted at once from many threads. Nothing here
 * depends on timing: tests wait for states, never for durations.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "check_exec.h"
#include "check_main.h"
#include "exec/kernel.h"

START_TEST(free_cancels_queued_jobs)
{
	struct exec *ex = start(&blocking_native, 4, 1u << 24);
	struct exec_request r = saxpy(64, "cpu:0");
	struct exec_job *a;
	struct exec_job *b;

	a = submit_ok(ex, &r);
	gate_wait_entered(1);
	r = saxpy(64, "cpu:0");
	b = submit_ok(ex, &r);
	gate_set(true); /* lets the running kernel end; exec_free waits for it */
	exec_free(ex);
	ck_assert(a != NULL && b != NULL);
	exec_job_unref(a);
	exec_job_unref(b);
}
END_TEST

struct submitter {
	struct exec *ex;
	int ok;
};

static void *submit_many(void *arg)
{
	struct submitter *s = arg;

	for (int i = 0; i < 12; i++) {
		struct exec_request r;
		struct exec_job *job = NULL;
		struct refusal why;

		exec_request_init(&r);
		r.kernel = (enum kernel_id)(i % KERNEL_COUNT);
		r.shape = (struct kernel_shape){.m = 9 + (uint64_t)i, .n = 31 + (uint64_t)i, .k = 5};
		r.seed = (uint64_t)i;
		r.verify = true;
		exec_request_add_device(&r, "cpu:0");
		if (exec_submit(s->ex, &r, NULL, NULL, &job, &why) != ACCELD_OK) {
			json_decref(why.extra);
			continue;
		}
		exec_job_wait(job);
		if (exec_job_state(job) == EXEC_SUCCEEDED) {
			json_t *doc = exec_job_json(job);

			if (json_is_true(json_object_get(doc, "verified")))
				s->ok++;
			json_decref(doc);
		}
		exec_job_unref(job);
	}
	return NULL;
}

START_TEST(many_jobs_at_once)
{
	struct exec *ex = start(&backend_native, 64, 1u << 24);
	pthread_t th[8];
	struct submitter s[8];
	int total = 0;

	for (int i = 0; i < 8; i++) {
		s[i] = (struct submitter){.ex = ex};
		pthread_create(&th[i], NULL, submit_many, &s[i]);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		total += s[i].ok;
	}
	ck_assert_int_eq(total, 8 * 12);
	wait_records(8 * 12);
	{
		/* the ring keeps the 64 most recent */
		json_t *all = exec_list_json(ex, -1, 1000, 0);

		ck_assert_int_eq(json_array_size(json_object_get(all, "jobs")), 64);
		json_decref(all);
	}
	exec_free(ex);
}
END_TEST

/* a thread creator that fails for the worker of the second device (and the reaper when told) */
static int creations;
static bool fail_reaper;

static int failing_create(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	int n = __atomic_add_fetch(&creations, 1, __ATOMIC_SEQ_CST);

	/* workers start in device order (cpu:0, gpu:0; the TPU has none), then the reaper */
	if (n == 2 || (fail_reaper && n == 3))
		return EAGAIN;
	return pthread_create(thread, NULL, fn, arg);
}

/* A worker that cannot start is said, and leaves its device without jobs; without a reaper nothing runs. */
START_TEST(threads_that_fail_to_start_are_said)
{
	struct exec *ex;
	struct exec_request r;
	struct refusal why;
	struct exec_job *job = NULL;
	struct exec_opts bad = {.queue_depth = 1};

	creations = 0;
	fail_reaper = false;
	thread_create_in_use = failing_create;
	ex = start(&backend_native, 8, 1u << 24);
	ck_assert_ptr_nonnull(exec_device(ex, "cpu:0"));
	ck_assert_ptr_null(exec_device(ex, "gpu:0"));
	ck_assert_ptr_null(exec_device(ex, "tpu:0"));
	ck_assert_str_eq(exec_device_backend(ex, "cpu:0"), "native");
	ck_assert_ptr_null(exec_device_backend(ex, "gpu:0"));
	r = saxpy(1u << 19, "gpu:0");
	ck_assert_int_eq(exec_submit(ex, &r, NULL, NULL, &job, &why), ACCELD_EUNSUPPORTED);
	ck_assert_str_eq(reason_name(why.reason), "UNSUPPORTED");
	ck_assert_msg(strstr(why.detail, "worker thread could not be started") != NULL, "%s", why.detail);
	/* placed by preference, the job goes on to the CPU */
	r = saxpy(1u << 19, NULL);
	rank(&r, gpu_first);
	job = submit_ok(ex, &r);
	exec_job_wait(job);
	ck_assert_int_eq(exec_job_state(job), EXEC_SUCCEEDED);
	exec_job_unref(job);
	exec_free(ex);

	creations = 0;
	fail_reaper = true;
	make_devices();
	{
		struct exec_opts o = {.devices = devs, .ndevices = 3, .max_elements = 1000, .queue_depth = 1,
				      .default_timeout_ms = 1000, .max_timeout_ms = 1000, .recent = 4,
				      .backends = ops_in_use, .thread_create = failing_create};

		ex = (struct exec *)&bad; /* must be cleared on failure */
		ck_assert_int_eq(exec_new(&o, &ex), ACCELD_EUNAVAILABLE);
		ck_assert_ptr_null(ex);
	}
	thread_create_in_use = NULL;
	/* options the configuration would never give are refused, not patched */
	ck_assert_int_eq(exec_new(&bad, &ex), ACCELD_EINVAL);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("exec");
	TCase *tc = tcase_create("executor");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, threads_that_fail_to_start_are_said);
	tcase_add_test(tc, free_cancels_queued_jobs);
	tcase_add_test(tc, many_jobs_at_once);
	suite_add_tcase(s, tc);
	return s;
}
