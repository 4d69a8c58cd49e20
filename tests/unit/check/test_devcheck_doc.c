/*
 * Unit tests of devcheck_doc.c: the names of levels, states and verdicts, and a check's document (api/openapi.yaml,
 * HealthCheck) built from runs set up by hand, so every member's rule is seen without running a check.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check/devcheck.h"
#include "check/devcheck_int.h"
#include "check_main.h"

static struct devcheck *mod;
static struct devcheck_run *run;

/* A quick check of cpu:0 that has not started: every test and the telemetry as a new run has them. */
static void setup(void)
{
	mod = calloc(1, sizeof(*mod));
	run = calloc(1, sizeof(*run));
	ck_assert(mod != NULL && run != NULL);
	pthread_mutex_init(&mod->mu, NULL);
	run->c = mod;
	snprintf(run->id, sizeof(run->id), "chk-1");
	snprintf(run->device, sizeof(run->device), "cpu:0");
	devcheck_request_init(&run->req);
	snprintf(run->req.trigger, sizeof(run->req.trigger), "api");
	run->state = DEVCHECK_QUEUED;
	run->created_ms = 1767312000000LL; /* 2026-01-02T00:00:00Z */
	devcheck_test_init(&run->matrix, "sgemm", "matrix", "GFLOP/s");
	devcheck_test_init(&run->memory, "triad", "memory", "GB/s");
	devcheck_test_init(&run->sustained, "sustained", "sustained", "GFLOP/s");
	devcheck_test_init(&run->telemetry, "telemetry", "telemetry", NULL);
	devcheck_test_init(&run->transfer, "transfer", "transfer", "GB/s");
	devcheck_tel_init(&run->tel);
}

static void teardown(void)
{
	pthread_mutex_destroy(&mod->mu);
	free(run);
	free(mod);
}

/* A test that ran to its end: n^3 sgemm (or triad of n), three runs, best and median, judged. */
static void finish(struct devcheck_test *t, uint64_t n, double best, double expected, enum devcheck_verdict v)
{
	t->started = true;
	t->finished = true;
	t->n = n;
	t->runs = 3;
	t->nsamples = 3;
	t->samples[0] = best * 0.9;
	t->samples[1] = best;
	t->samples[2] = best * 0.95;
	t->best = best;
	t->median = best * 0.95;
	t->expected = expected;
	snprintf(t->expected_source, sizeof(t->expected_source), "spec sheet");
	t->worst_error = 0.01;
	t->device_ms = 120;
	t->budget_ms = 2000;
	t->has_verdict = true;
	t->verdict = v;
	snprintf(t->rule, sizeof(t->rule), "%s: rule", t->name);
}

static json_t *test_of(json_t *doc, const char *name)
{
	size_t i;
	json_t *t;

	json_array_foreach(json_object_get(doc, "tests"), i, t)
		if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0)
			return t;
	return NULL;
}

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

static double num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	ck_assert_msg(json_is_number(v), "%s is not a number", key);
	return json_number_value(v);
}

START_TEST(names)
{
	enum devcheck_level l;
	enum devcheck_verdict v;
	enum devcheck_state st;

	ck_assert(devcheck_level_parse("long", &l));
	ck_assert_int_eq(l, DEVCHECK_LONG);
	ck_assert(!devcheck_level_parse("thorough", &l));
	ck_assert(!devcheck_level_parse(NULL, &l));
	ck_assert(devcheck_verdict_parse("warn", &v));
	ck_assert_int_eq(v, DEVCHECK_WARN);
	ck_assert_str_eq(devcheck_state_name(DEVCHECK_INTERRUPTED), "interrupted");
	/* a check's states are a job's */
	ck_assert_str_eq(devcheck_state_name(DEVCHECK_SUCCEEDED), "succeeded");
	ck_assert_str_eq(devcheck_state_name(DEVCHECK_FAILED), "failed");
	ck_assert(devcheck_state_parse("failed", &st) && st == DEVCHECK_FAILED);
	ck_assert(!devcheck_state_parse("done", &st));
	ck_assert(devcheck_state_judged(DEVCHECK_SUCCEEDED) && devcheck_state_judged(DEVCHECK_FAILED));
	ck_assert(!devcheck_state_judged(DEVCHECK_INTERRUPTED) && !devcheck_state_judged(DEVCHECK_RUNNING));
	ck_assert_str_eq(devcheck_level_name(DEVCHECK_QUICK), "quick");
}
END_TEST

START_TEST(a_queued_check_has_its_tests_queued_and_no_figures)
{
	json_t *doc = devcheck_run_json(run);
	json_t *tests = json_object_get(doc, "tests");
	json_t *sg = test_of(doc, "sgemm");
	json_t *tel = json_object_get(doc, "telemetry");

	ck_assert_str_eq(str(doc, "id"), "chk-1");
	ck_assert_str_eq(str(doc, "device"), "cpu:0");
	ck_assert_str_eq(str(doc, "level"), "quick");
	ck_assert_str_eq(str(doc, "trigger"), "api");
	ck_assert_str_eq(str(doc, "state"), "queued");
	ck_assert_str_eq(str(doc, "created_at"), "2026-01-02T00:00:00.000Z");
	/* what is not known yet is left out, not written as null */
	ck_assert_ptr_null(json_object_get(doc, "verdict"));
	ck_assert_ptr_null(json_object_get(doc, "started_at"));
	ck_assert_ptr_null(json_object_get(doc, "finished_at"));
	ck_assert_ptr_null(json_object_get(doc, "duration_s"));
	ck_assert_ptr_null(json_object_get(doc, "backend"));
	ck_assert_ptr_null(json_object_get(doc, "error"));
	ck_assert_uint_eq(json_object_size(json_object_get(doc, "measured")), 0);
	/* the quick level: sgemm, triad and telemetry in that order, no sustained test and no series */
	ck_assert_uint_eq(json_array_size(tests), 3);
	ck_assert_str_eq(str(json_array_get(tests, 0), "name"), "sgemm");
	ck_assert_str_eq(str(json_array_get(tests, 1), "name"), "triad");
	ck_assert_str_eq(str(json_array_get(tests, 2), "name"), "telemetry");
	ck_assert_ptr_null(json_object_get(doc, "series"));
	ck_assert_ptr_null(json_object_get(json_object_get(doc, "budget"), "sustained_ms"));
	ck_assert_str_eq(str(sg, "state"), "queued");
	ck_assert_str_eq(str(sg, "kind"), "matrix");
	ck_assert_str_eq(str(sg, "unit"), "GFLOP/s");
	ck_assert_int_eq(json_integer_value(json_object_get(sg, "runs")), 0);
	ck_assert_ptr_null(json_object_get(sg, "measured"));
	ck_assert_ptr_null(json_object_get(sg, "verified"));
	ck_assert_ptr_null(json_object_get(sg, "size"));
	ck_assert_uint_eq(json_array_size(json_object_get(sg, "samples")), 0);
	ck_assert_ptr_null(json_object_get(test_of(doc, "telemetry"), "unit"));
	/* telemetry with no sample: only the count, retired pages unknown */
	ck_assert_int_eq(json_integer_value(json_object_get(tel, "samples")), 0);
	ck_assert_uint_eq(json_object_size(tel), 1);
	json_decref(doc);
}
END_TEST

START_TEST(a_judged_check_shows_its_figures_and_verdicts)
{
	json_t *doc;
	json_t *sg;
	json_t *tr;

	run->state = DEVCHECK_SUCCEEDED;
	run->started_ms = run->created_ms + 500;
	run->finished_ms = run->started_ms + 2500;
	snprintf(run->backend, sizeof(run->backend), "native");
	finish(&run->matrix, 256, 80, 100, DEVCHECK_WARN);
	finish(&run->memory, 1 << 20, 8, 10, DEVCHECK_PASS);
	run->has_verdict = true;
	run->verdict = DEVCHECK_WARN;
	snprintf(run->rule, sizeof(run->rule), "sgemm: measured 80 GFLOP/s is 80 %% of the expected 100");
	run->jobs = 7;
	doc = devcheck_run_json(run);
	sg = test_of(doc, "sgemm");
	tr = test_of(doc, "triad");

	ck_assert_str_eq(str(doc, "state"), "succeeded");
	ck_assert_str_eq(str(doc, "verdict"), "warn");
	ck_assert_str_eq(str(doc, "rule"), run->rule);
	ck_assert_str_eq(str(doc, "backend"), "native");
	ck_assert_double_eq_tol(num(doc, "duration_s"), 2.5, 1e-9);
	ck_assert_int_eq(json_integer_value(json_object_get(doc, "jobs")), 7);
	ck_assert_double_eq_tol(num(json_object_get(doc, "measured"), "gflops"), 80, 1e-9);
	ck_assert_double_eq_tol(num(json_object_get(doc, "measured"), "gbytes_per_s"), 8, 1e-9);
	/* a matrix test's size is m, n and k; triad's one length */
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(sg, "size"), "k")), 256);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(tr, "size"), "n")), 1 << 20);
	ck_assert_uint_eq(json_object_size(json_object_get(tr, "size")), 1);
	/* the figures and the ratio measured / expected */
	ck_assert_str_eq(str(sg, "state"), "succeeded");
	ck_assert_double_eq_tol(num(sg, "measured"), 80, 1e-9);
	ck_assert_double_eq_tol(num(sg, "median"), 76, 1e-9);
	ck_assert_double_eq_tol(num(sg, "expected"), 100, 1e-9);
	ck_assert_str_eq(str(sg, "expected_source"), "spec sheet");
	ck_assert_double_eq_tol(num(sg, "ratio"), 0.8, 1e-9);
	ck_assert_uint_eq(json_array_size(json_object_get(sg, "samples")), 3);
	ck_assert(json_is_true(json_object_get(sg, "verified")));
	ck_assert_double_eq_tol(num(sg, "max_error_ratio"), 0.01, 1e-12);
	ck_assert_double_eq_tol(num(sg, "budget_ms"), 2000, 1e-9);
	ck_assert_ptr_null(json_object_get(sg, "setup_ms"));
	ck_assert_str_eq(str(sg, "verdict"), "warn");
	ck_assert_str_eq(str(sg, "rule"), "sgemm: rule");
	ck_assert_str_eq(str(tr, "verdict"), "pass");
	json_decref(doc);
}
END_TEST

START_TEST(a_wrong_or_unexpected_figure_is_not_shown_as_a_measurement)
{
	json_t *doc;
	json_t *sg;

	run->state = DEVCHECK_SUCCEEDED;
	finish(&run->matrix, 256, 80, NAN, DEVCHECK_FAIL);
	run->matrix.wrong = 1;
	finish(&run->memory, 1 << 20, 8, 0, DEVCHECK_PASS);
	doc = devcheck_run_json(run);
	sg = test_of(doc, "sgemm");
	/* a wrong result is no measurement of the device, though the test shows what it timed */
	ck_assert_ptr_null(json_object_get(json_object_get(doc, "measured"), "gflops"));
	ck_assert(json_is_false(json_object_get(sg, "verified")));
	ck_assert_double_eq_tol(num(sg, "measured"), 80, 1e-9);
	/* no expected figure: neither it, its source nor a ratio */
	ck_assert_ptr_null(json_object_get(sg, "expected"));
	ck_assert_ptr_null(json_object_get(sg, "expected_source"));
	ck_assert_ptr_null(json_object_get(sg, "ratio"));
	/* an expected figure of 0 stands for none: no ratio against it */
	ck_assert_ptr_null(json_object_get(test_of(doc, "triad"), "ratio"));
	ck_assert_double_eq_tol(num(json_object_get(doc, "measured"), "gbytes_per_s"), 8, 1e-9);
	/* no verdict for the check as a whole until it has one */
	ck_assert_ptr_null(json_object_get(doc, "verdict"));
	json_decref(doc);
}
END_TEST

START_TEST(tests_end_in_the_words_of_a_job)
{
	json_t *doc;

	/* sgemm was cut short by the stop, triad never started, the check says why */
	run->state = DEVCHECK_INTERRUPTED;
	run->matrix.started = true;
	run->has_verdict = true; /* a verdict is only shown for a judged state */
	run->verdict = DEVCHECK_PASS;
	run->has_error = true;
	run->error_reason = REASON_INTERRUPTED;
	snprintf(run->error, sizeof(run->error), "acceld stopped");
	doc = devcheck_run_json(run);
	ck_assert_str_eq(str(doc, "state"), "interrupted");
	ck_assert_str_eq(str(test_of(doc, "sgemm"), "state"), "interrupted");
	ck_assert_str_eq(str(test_of(doc, "triad"), "state"), "queued");
	ck_assert_ptr_null(json_object_get(doc, "verdict"));
	ck_assert_str_eq(str(json_object_get(doc, "error"), "reason"), "INTERRUPTED");
	ck_assert_str_eq(str(json_object_get(doc, "error"), "detail"), "acceld stopped");
	json_decref(doc);

	/* while the check runs its test does; a test whose run failed ended failed, saying how */
	run->state = DEVCHECK_RUNNING;
	run->has_error = false;
	run->memory.started = true;
	run->memory.finished = true;
	run->memory.failed = true;
	snprintf(run->memory.failure, sizeof(run->memory.failure), "DEVICE_FAILURE: out of resources");
	doc = devcheck_run_json(run);
	ck_assert_str_eq(str(test_of(doc, "sgemm"), "state"), "running");
	ck_assert_str_eq(str(test_of(doc, "triad"), "state"), "failed");
	ck_assert_str_eq(str(test_of(doc, "triad"), "failure"), "DEVICE_FAILURE: out of resources");
	ck_assert_ptr_null(json_object_get(doc, "error"));
	json_decref(doc);
}
END_TEST

START_TEST(the_long_level_adds_the_sustained_test_and_its_series)
{
	json_t *doc;
	json_t *su;
	json_t *series;
	json_t *p;

	run->req.level = DEVCHECK_LONG;
	run->sustained_ms = 60000; /* 120 buckets of 0.5 s */
	run->sustained.started = true;
	run->sustained.first = 80;
	run->sustained.last = 60;
	run->sustained.duration_ms = 60000;
	run->buckets[0] = (struct bucket){.sum = 160, .runs = 2, .temp = 70, .power = NAN, .clock = NAN};
	run->buckets[9] = (struct bucket){.sum = 60, .runs = 1, .temp = NAN, .power = 300, .clock = 1500};
	doc = devcheck_run_json(run);
	su = test_of(doc, "sustained");

	ck_assert_str_eq(str(doc, "level"), "long");
	ck_assert_uint_eq(json_array_size(json_object_get(doc, "tests")), 4);
	ck_assert_str_eq(str(json_array_get(json_object_get(doc, "tests"), 2), "name"), "sustained");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "budget"), "sustained_ms")), 60000);
	ck_assert_double_eq_tol(num(su, "first_quarter"), 80, 1e-9);
	ck_assert_double_eq_tol(num(su, "last_quarter"), 60, 1e-9);
	ck_assert_double_eq_tol(num(su, "sustained_ratio"), 0.75, 1e-9);
	/* buckets without runs are left out; each point is its bucket's end, its mean and what was sampled */
	series = json_object_get(doc, "series");
	ck_assert_uint_eq(json_array_size(series), 2);
	p = json_array_get(series, 0);
	ck_assert_double_eq_tol(num(p, "t_s"), 0.5, 1e-9);
	ck_assert_double_eq_tol(num(p, "gflops"), 80, 1e-9);
	ck_assert_int_eq(json_integer_value(json_object_get(p, "runs")), 2);
	ck_assert_double_eq_tol(num(p, "temperature_celsius"), 70, 1e-9);
	ck_assert_ptr_null(json_object_get(p, "power_watts"));
	p = json_array_get(series, 1);
	ck_assert_double_eq_tol(num(p, "t_s"), 5.0, 1e-9);
	ck_assert_double_eq_tol(num(p, "power_watts"), 300, 1e-9);
	ck_assert_double_eq_tol(num(p, "clock_mhz"), 1500, 1e-9);
	json_decref(doc);
}
END_TEST

START_TEST(an_accelerator_shows_its_transfer_test)
{
	json_t *doc;
	json_t *t;
	struct devcheck_test *x = &run->transfer;

	/* a CPU has none */
	doc = devcheck_run_json(run);
	ck_assert_ptr_null(test_of(doc, "transfer"));
	ck_assert_ptr_null(json_object_get(json_object_get(doc, "budget"), "transfer_ms"));
	json_decref(doc);

	run->has_transfer = true;
	x->budget_ms = 1500;
	doc = devcheck_run_json(run);
	t = test_of(doc, "transfer");
	ck_assert_str_eq(str(t, "state"), "queued");
	ck_assert_ptr_null(json_object_get(t, "link"));
	ck_assert_ptr_null(json_object_get(t, "measured"));
	ck_assert_double_eq(num(json_object_get(doc, "budget"), "transfer_ms"), 1500);
	json_decref(doc);

	x->started = x->finished = true;
	x->runs = 2;
	x->n = 1024 * TRANSFER_ROW;
	x->bytes = x->n * 4;
	x->upload = 40;
	x->download = 30;
	x->pcie = (struct device_pcie){.generation = 1, .width = 16, .max_generation = 5, .max_width = 16};
	x->link = device_pcie_gbytes_per_s(&x->pcie);
	x->expected = x->link * 0.7;
	snprintf(x->expected_source, sizeof(x->expected_source), "uncalibrated");
	doc = devcheck_run_json(run);
	t = test_of(doc, "transfer");
	ck_assert_str_eq(str(t, "kind"), "transfer");
	ck_assert_double_eq(num(json_object_get(t, "size"), "bytes"), 16 << 20);
	ck_assert_double_eq(num(json_object_get(t, "size"), "m"), 1024);
	ck_assert_double_eq(num(t, "upload_gbytes_per_s"), 40);
	ck_assert_double_eq(num(t, "download_gbytes_per_s"), 30);
	ck_assert_double_eq(num(json_object_get(t, "link"), "max_generation"), 5);
	ck_assert_double_eq(num(json_object_get(t, "link"), "gbytes_per_s"), 63.02);
	ck_assert_double_eq_tol(num(t, "upload_ratio"), 40 / x->link, 1e-12);
	ck_assert_double_eq_tol(num(t, "download_ratio"), 30 / x->link, 1e-12);
	ck_assert_str_eq(str(t, "expected_source"), "uncalibrated");
	/* the figures of the throughput tests are not its own */
	ck_assert_ptr_null(json_object_get(t, "samples"));
	ck_assert_ptr_null(json_object_get(t, "ratio"));
	json_decref(doc);
}
END_TEST

START_TEST(telemetry_shows_what_was_sampled)
{
	json_t *doc;
	json_t *tel;

	run->tel.samples = 4;
	run->tel.source = "nvml";
	run->tel.temp_first = 40;
	run->tel.temp_max = 71;
	run->tel.slowdown_c = 87;
	run->tel.power_n = 2;
	run->tel.power_sum = 500;
	run->tel.power_max = 300;
	run->tel.clock_n = 4;
	run->tel.clock_sum = 6000;
	run->tel.clock_min = 1200;
	run->tel.clock_max_rated = 1980;
	run->tel.throttle_known = true;
	run->tel.throttle_seen = DEVICE_THROTTLE_SW_POWER_CAP;
	run->tel.ecc_first = 0;
	run->tel.ecc_last = 2;
	run->tel.retired_pending = 0;
	doc = devcheck_run_json(run);
	tel = json_object_get(doc, "telemetry");

	ck_assert_int_eq(json_integer_value(json_object_get(tel, "samples")), 4);
	ck_assert_str_eq(str(tel, "source"), "nvml");
	ck_assert_double_eq_tol(num(json_object_get(tel, "temperature_celsius"), "start"), 40, 1e-9);
	ck_assert_double_eq_tol(num(json_object_get(tel, "temperature_celsius"), "max"), 71, 1e-9);
	ck_assert_double_eq_tol(num(json_object_get(tel, "temperature_celsius"), "slowdown"), 87, 1e-9);
	ck_assert_double_eq_tol(num(json_object_get(tel, "power_watts"), "mean"), 250, 1e-9);
	ck_assert_double_eq_tol(num(json_object_get(tel, "power_watts"), "max"), 300, 1e-9);
	ck_assert_double_eq_tol(num(json_object_get(tel, "clock_mhz"), "mean"), 1500, 1e-9);
	ck_assert_double_eq_tol(num(json_object_get(tel, "clock_mhz"), "min"), 1200, 1e-9);
	ck_assert_double_eq_tol(num(json_object_get(tel, "clock_mhz"), "max_rated"), 1980, 1e-9);
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(tel, "throttle_reasons"), 0)), "sw_power_cap");
	ck_assert_double_eq_tol(num(json_object_get(tel, "ecc_uncorrected"), "end"), 2, 1e-9);
	ck_assert(json_is_false(json_object_get(tel, "retired_pages_pending")));
	json_decref(doc);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("devcheck_doc");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, names);
	tcase_add_test(tc, a_queued_check_has_its_tests_queued_and_no_figures);
	tcase_add_test(tc, a_judged_check_shows_its_figures_and_verdicts);
	tcase_add_test(tc, a_wrong_or_unexpected_figure_is_not_shown_as_a_measurement);
	tcase_add_test(tc, tests_end_in_the_words_of_a_job);
	tcase_add_test(tc, the_long_level_adds_the_sustained_test_and_its_series);
	tcase_add_test(tc, telemetry_shows_what_was_sampled);
	tcase_add_test(tc, an_accelerator_shows_its_transfer_test);
	suite_add_tcase(s, tc);
	return s;
}
