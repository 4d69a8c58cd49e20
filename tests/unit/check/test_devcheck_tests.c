/*
 * Unit tests of devcheck_tests.c, the tests a check runs, on the service of check_devcheck.h: the sgemm ramp and its
 * budget, sizes that fit the job limit, verification of every run, a device's failure said by its test, a full
 * queue waited out, telemetry sampled between runs, and the long level's sustained load. Nothing here waits for a
 * duration: tests wait for states.
 */
#include <string.h>
#include <time.h>

#include "check_devcheck.h"
#include "check_main.h"
#include "exec/kernel.h"

/*
 * One-off costs stay out of the ramp's budget. On an H100 through PJRT the first job took 5.6 s (the client, CUDA
 * and autotuning) for a kernel of 0.6 ms, and each new size compiled for up to 8 s: the ramp stopped at its first
 * size and judged the GPU at 0.7 % of its peak. Here the first run takes 1.8 s and each size's compile 0.9 s,
 * against a budget of 1.5 s, which either alone would exhaust: the ramp must still reach the largest size (512, as
 * the job limit allows) and say what it kept out. The budget leaves the real 256^3 product (a few ms, 100 to 300 ms
 * under the sanitizers on a loaded host) room to be doubled.
 */
/* The service anew with a 1.5 s sgemm budget and sizes up to 512 (the job limit's). */
static void start_small_ramp(void)
{
	struct devcheck_settings s = settings();

	devcheck_free(dc);
	exec_free(ex);
	s.matrix_budget_ms = 1500;
	s.matrix_max_n = 512;
	start_with(&s);
}

START_TEST(ramp_keeps_one_off_costs_out_of_its_budget)
{
	json_t *doc;
	json_t *sg;

	start_small_ramp();
	pthread_mutex_lock(&mu);
	cold_ms = 1800;
	compile_ms = 900;
	pthread_mutex_unlock(&mu);
	doc = run_check(DEVCHECK_QUICK, 0, NULL);
	sg = test_of(doc, "sgemm");
	ck_assert_msg(json_integer_value(json_object_get(json_object_get(sg, "size"), "n")) == 512, "%s",
		      str(sg, "steady"));
	ck_assert_int_eq(json_array_size(json_object_get(sg, "ramp")), 2);
	/* the warm-up's 1.8 s and two compiles' 1.8 s are set aside, not counted as the device's time */
	ck_assert_double_ge(json_real_value(json_object_get(sg, "setup_ms")), 3600);
	ck_assert_double_lt(json_real_value(json_object_get(sg, "device_ms")),
			    json_real_value(json_object_get(sg, "setup_ms")));
	ck_assert_str_eq(str(sg, "verdict"), "pass");
	json_decref(doc);
}
END_TEST

/*
 * A program loaded from the compile cache runs cold once: on an H200 the first sgemm 1024^3 after a load took 125 ms
 * for a 0.1 ms kernel, and the ramp stopped there at 19 % of the expected figure; the triad's first sample was 46
 * GB/s of 2,342. Each size's first run after a load is setup; the figures are the warm runs'.
 */
START_TEST(a_loaded_program_runs_cold_once)
{
	json_t *doc;
	json_t *sg, *tr;

	start_small_ramp();
	pthread_mutex_lock(&mu);
	loaded_ms = 1000;
	pthread_mutex_unlock(&mu);
	doc = run_check(DEVCHECK_QUICK, 0, NULL);
	sg = test_of(doc, "sgemm");
	tr = test_of(doc, "triad");
	ck_assert_msg(json_integer_value(json_object_get(json_object_get(sg, "size"), "n")) == 512, "%s",
		      str(sg, "steady"));
	ck_assert_str_eq(str(doc, "verdict"), "pass");
	/* no sample of either test carries the cold run's second (the fake device: 80 GFLOP/s, 8 GB/s) */
	for (size_t i = 0; i < json_array_size(json_object_get(sg, "samples")); i++)
		ck_assert_double_ge(json_real_value(json_array_get(json_object_get(sg, "samples"), i)), 40.0);
	for (size_t i = 0; i < json_array_size(json_object_get(tr, "samples")); i++)
		ck_assert_double_ge(json_real_value(json_array_get(json_object_get(tr, "samples"), i)), 4.0);
	json_decref(doc);
}
END_TEST

START_TEST(wrong_result_always_fails)
{
	json_t *doc;
	json_t *sg;

	pthread_mutex_lock(&mu);
	wrong = true;
	pthread_mutex_unlock(&mu);
	doc = run_check(DEVCHECK_QUICK, 0, NULL);
	sg = test_of(doc, "sgemm");
	ck_assert_str_eq(str(doc, "verdict"), "fail");
	ck_assert(json_is_false(json_object_get(sg, "verified")));
	ck_assert_ptr_nonnull(strstr(str(sg, "rule"), "wrong result"));
	ck_assert_ptr_nonnull(strstr(str(test_of(doc, "triad"), "rule"), "wrong result"));
	/* a wrong figure is no measurement */
	ck_assert_ptr_null(json_object_get(json_object_get(doc, "measured"), "gflops"));
	json_decref(doc);
}
END_TEST

START_TEST(failing_device_fails_with_the_reason)
{
	json_t *doc;

	pthread_mutex_lock(&mu);
	failing = true;
	pthread_mutex_unlock(&mu);
	doc = run_check(DEVCHECK_QUICK, 0, NULL);
	/* the check ran to its verdict: the device is what failed, and its tests say so */
	ck_assert_str_eq(str(doc, "state"), "succeeded");
	ck_assert_str_eq(str(doc, "verdict"), "fail");
	ck_assert_msg(strstr(str(doc, "rule"), "no run completed: DEVICE_FAILURE") != NULL, "%s", str(doc, "rule"));
	ck_assert_ptr_nonnull(strstr(str(test_of(doc, "sgemm"), "failure"), "CL_OUT_OF_RESOURCES"));
	ck_assert_str_eq(str(test_of(doc, "sgemm"), "state"), "failed");
	json_decref(doc);
}
END_TEST

START_TEST(a_full_queue_is_waited_out)
{
	struct exec_request job;
	struct refusal jwhy;
	struct exec_job *a = NULL, *b = NULL;
	struct devcheck_request req;
	struct refusal why;
	struct devcheck_run *run = NULL;
	struct devcheck_settings s = settings();
	json_t *doc;

	/* a queue of one: a job running at the gate and one waiting fill the device */
	devcheck_free(dc);
	exec_free(ex);
	queue_depth = 1;
	start_with(&s);
	queue_depth = 16;
	gate(true);
	exec_request_init(&job);
	job.kernel = KERNEL_SAXPY;
	job.shape.n = 100000;
	exec_request_add_device(&job, "cpu:0");
	job.pinned = true;
	ck_assert_int_eq(exec_submit(ex, &job, NULL, NULL, &a, &jwhy), ACCELD_OK);
	wait_at_gate(1);
	ck_assert_int_eq(exec_submit(ex, &job, NULL, NULL, &b, &jwhy), ACCELD_OK);
	devcheck_request_init(&req);
	ck_assert_int_eq(devcheck_start(dc, "cpu:0", &req, NULL, NULL, &run, &why), ACCELD_OK);
	/* the check asks again while the queue stays full: jobs of others are no fault of the device */
	for (;;) {
		doc = devcheck_run_json(run);
		if (json_integer_value(json_object_get(doc, "jobs")) >= 2)
			break;
		json_decref(doc);
		nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL); /* ask again, without spinning */
	}
	json_decref(doc);
	gate(false);
	devcheck_run_wait(run);
	doc = devcheck_run_json(run);
	ck_assert_msg(strcmp(str(doc, "verdict"), "pass") == 0, "%s", str(doc, "rule"));
	json_decref(doc);
	devcheck_run_unref(run);
	exec_job_wait(a);
	exec_job_wait(b);
	exec_job_unref(a);
	exec_job_unref(b);
	exec_request_release(&job);
}
END_TEST

START_TEST(telemetry_findings_decide)
{
	json_t *doc;
	json_t *tel;

	/* a throttled GPU's telemetry on the CPU test device: hot, clocks held down, ECC errors */
	pthread_mutex_lock(&rec_mu);
	devs[0].sources |= SOURCE_NVML;
	devs[0].telemetry.temperature_celsius = 92;
	devs[0].gpu.slowdown_temperature_celsius = 87;
	devs[0].telemetry.throttle_known = true;
	devs[0].telemetry.throttle_reasons = DEVICE_THROTTLE_SW_THERMAL | DEVICE_THROTTLE_SW_POWER_CAP;
	devs[0].telemetry.ecc_uncorrected = 0;
	devs[0].telemetry.retired_pages_pending = 0;
	devs[0].clock_mhz = 2000;
	devs[0].telemetry.clock_mhz = 1200;
	pthread_mutex_unlock(&rec_mu);
	doc = run_check(DEVCHECK_QUICK, 0, NULL);
	tel = test_of(doc, "telemetry");
	ck_assert_str_eq(str(doc, "verdict"), "warn");
	ck_assert_str_eq(str(tel, "verdict"), "warn");
	/* every finding is said; a power cap alone is no fault */
	ck_assert_ptr_nonnull(strstr(str(tel, "rule"), "clocks held down during the check by sw_thermal"));
	ck_assert_ptr_null(strstr(str(tel, "rule"), "sw_power_cap"));
	ck_assert_ptr_nonnull(strstr(str(tel, "rule"), "reached 92 C, at or past its slowdown temperature of 87 C"));
	ck_assert_str_eq(str(json_object_get(doc, "telemetry"), "source"), "nvml");
	json_decref(doc);

	/* uncorrectable ECC errors fail the device whatever else */
	pthread_mutex_lock(&rec_mu);
	devs[0].telemetry.ecc_uncorrected = 3;
	pthread_mutex_unlock(&rec_mu);
	doc = run_check(DEVCHECK_QUICK, 0, NULL);
	ck_assert_str_eq(str(doc, "verdict"), "fail");
	ck_assert_msg(strncmp(str(doc, "rule"), "telemetry: 3 uncorrectable ECC errors", 37) == 0, "%s",
		      str(doc, "rule"));
	json_decref(doc);

	/* a clock under load below the setting's share of the maximum warns */
	pthread_mutex_lock(&rec_mu);
	devs[0].telemetry.ecc_uncorrected = 0;
	devs[0].telemetry.throttle_reasons = 0;
	devs[0].telemetry.temperature_celsius = 60;
	devs[0].telemetry.clock_mhz = 800;
	pthread_mutex_unlock(&rec_mu);
	doc = run_check(DEVCHECK_QUICK, 0, NULL);
	ck_assert_str_eq(str(doc, "verdict"), "warn");
	ck_assert_ptr_nonnull(strstr(str(doc, "rule"), "ran at 800 MHz on average, 40.0 % of its maximum 2000 MHz"));
	json_decref(doc);
}
END_TEST

START_TEST(long_level_exposes_throttling)
{
	json_t *doc;
	json_t *su;

	/* after the quick part's runs and a few sustained ones, the device runs at a third of its speed */
	pthread_mutex_lock(&mu);
	throttle_after = 7; /* the quick part's warm-up and ramp, its repeats and three sustained runs */
	pthread_mutex_unlock(&mu);
	doc = run_check(DEVCHECK_LONG, 1500, NULL);
	su = test_of(doc, "sustained");
	ck_assert_ptr_nonnull(su);
	ck_assert_int_ge(json_integer_value(json_object_get(su, "runs")), 8);
	ck_assert_str_eq(str(doc, "verdict"), "warn");
	ck_assert_msg(strstr(str(su, "rule"), "throughput fell from") != NULL, "%s", str(su, "rule"));
	ck_assert_ptr_nonnull(strstr(str(su, "rule"), "thermal or power throttling"));
	ck_assert(json_array_size(json_object_get(doc, "series")) > 0);
	ck_assert(json_real_value(json_object_get(su, "sustained_ratio")) < 0.9);
	json_decref(doc);
}
END_TEST

START_TEST(long_level_steady_passes)
{
	json_t *doc = run_check(DEVCHECK_LONG, 1000, NULL);
	json_t *su = test_of(doc, "sustained");

	ck_assert_msg(strcmp(str(doc, "verdict"), "pass") == 0, "%s", str(doc, "rule"));
	ck_assert_str_eq(str(su, "verdict"), "pass");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "budget"), "sustained_ms")), 1000);
	json_decref(doc);
}
END_TEST

/* The sizes fit the job limit: sgemm's start lowered and its ramp capped, triad's arrays halved, and said so. */
START_TEST(sizes_fit_the_job_limit)
{
	struct devcheck_settings s = settings();
	json_t *doc;
	json_t *sg;
	json_t *tr;

	devcheck_free(dc);
	exec_free(ex);
	s.max_elements = 3u << 16; /* sgemm while 4 n^2 fits: 128; triad while 3 n fits: 65536 */
	s.matrix_max_n = 512;
	start_with(&s);
	doc = run_check(DEVCHECK_QUICK, 0, NULL);
	sg = test_of(doc, "sgemm");
	tr = test_of(doc, "triad");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(sg, "size"), "n")), 128);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(tr, "size"), "n")), 1 << 16);
	ck_assert_msg(strstr(str(tr, "steady"), "assumed 32 MiB last-level cache") != NULL, "%s", str(tr, "steady"));
	ck_assert_msg(strstr(str(tr, "steady"), "halved to what the job limit and the memory allow") != NULL, "%s",
		      str(tr, "steady"));
	ck_assert_str_eq(str(sg, "verdict"), "pass");
	ck_assert_str_eq(str(tr, "verdict"), "pass");
	json_decref(doc);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("devcheck_tests");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, ramp_keeps_one_off_costs_out_of_its_budget);
	tcase_add_test(tc, a_loaded_program_runs_cold_once);
	tcase_add_test(tc, wrong_result_always_fails);
	tcase_add_test(tc, failing_device_fails_with_the_reason);
	tcase_add_test(tc, a_full_queue_is_waited_out);
	tcase_add_test(tc, telemetry_findings_decide);
	tcase_add_test(tc, long_level_exposes_throttling);
	tcase_add_test(tc, long_level_steady_passes);
	tcase_add_test(tc, sizes_fit_the_job_limit);
	suite_add_tcase(s, tc);
	return s;
}
