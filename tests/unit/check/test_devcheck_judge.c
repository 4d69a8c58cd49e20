/*
 * Unit tests of the judging rules (devcheck_judge.c) on test states built by hand: no executor, no thread, no
 * device. Each rule is met on both sides of its line, so a change of wording or of a threshold shows here before
 * the black-box tests. The settings are the configuration's defaults: warn below 25 %, fail below 10 %, throttling
 * below 90 %, clocks below 50 %.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "check/devcheck_int.h"

static const struct devcheck_settings settings = {
	.warn_percent = 25,
	.fail_percent = 10,
	.throttle_percent = 90,
	.clock_percent = 50,
};

/* sgemm as a ramp and its repeats leave it: runs verified runs, the best of them, against expected (NAN: none). */
static void sgemm_ran(struct devcheck_test *t, unsigned runs, double best, double expected)
{
	devcheck_test_init(t, "sgemm", "matrix", "GFLOP/s");
	t->started = true;
	t->finished = true;
	t->runs = runs;
	t->best = best;
	t->median = best;
	t->expected = expected;
	t->worst_error = 0.01;
}

/* The sustained phase after runs runs whose first quarter averaged first and whose last quarter averaged last. */
static void sustained_ran(struct devcheck_test *t, unsigned runs, double first, double last)
{
	devcheck_test_init(t, "sustained", "sustained", "GFLOP/s");
	t->started = true;
	t->finished = true;
	t->runs = runs;
	t->first = first;
	t->last = last;
	t->best = first > last ? first : last;
	t->duration_ms = 60000;
}

/* Telemetry of nsamples clean samples from source: no temperature, clock, ECC or throttle figure known. */
static void tel_sampled(struct devcheck_telemetry *x, unsigned nsamples, const char *source)
{
	devcheck_tel_init(x);
	x->samples = nsamples;
	x->source = source;
}

/* The verdict of the telemetry test for x, its rule in t->rule. */
static enum devcheck_verdict tel_verdict(const struct devcheck_telemetry *x, struct devcheck_test *t)
{
	devcheck_test_init(t, "telemetry", "telemetry", NULL);
	devcheck_judge_telemetry(&settings, x, t);
	ck_assert(t->has_verdict);
	ck_assert(t->started && t->finished);
	return t->verdict;
}

START_TEST(figure_lines_pass_warn_fail)
{
	struct devcheck_test t;

	sgemm_ran(&t, 5, 30, 100);
	devcheck_judge_figure(&settings, &t);
	ck_assert(t.has_verdict);
	ck_assert_int_eq(t.verdict, DEVCHECK_PASS);
	ck_assert_str_eq(t.rule, "measured 30 GFLOP/s is 30 % of the expected 100 GFLOP/s (warn below 25 %, fail "
				 "below 10 %)");
	sgemm_ran(&t, 5, 20, 100);
	devcheck_judge_figure(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_WARN);
	ck_assert_str_eq(t.rule, "measured 20 GFLOP/s is 20 % of the expected 100 GFLOP/s (warn below 25 %)");
	sgemm_ran(&t, 5, 5, 100);
	devcheck_judge_figure(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_FAIL);
	ck_assert_str_eq(t.rule, "measured 5 GFLOP/s is 5 % of the expected 100 GFLOP/s (fail below 10 %)");
	/* a figure on a line is not below it */
	sgemm_ran(&t, 5, 25, 100);
	devcheck_judge_figure(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_PASS);
	sgemm_ran(&t, 5, 10, 100);
	devcheck_judge_figure(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_WARN);
	/* the best run counts, not the median */
	sgemm_ran(&t, 5, 30, 100);
	t.median = 5;
	devcheck_judge_figure(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_PASS);
}
END_TEST

START_TEST(figure_triad_speaks_its_unit)
{
	struct devcheck_test t;

	devcheck_test_init(&t, "triad", "memory", "GB/s");
	t.runs = 3;
	t.best = 1.5;
	t.expected = 10;
	devcheck_judge_figure(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_WARN);
	ck_assert_str_eq(t.rule, "measured 1.5 GB/s is 15 % of the expected 10 GB/s (warn below 25 %)");
}
END_TEST

START_TEST(wrong_result_fails_whatever_the_figure)
{
	struct devcheck_test t;

	sgemm_ran(&t, 5, 120, 100);
	t.wrong = 1;
	t.worst_error = 3.5;
	devcheck_judge_figure(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_FAIL);
	ck_assert_str_eq(t.rule, "wrong result: 1 run did not match the double-precision reference (worst error 3.5 x "
				 "the tolerance)");
	/* also with no expected figure, and before the question whether a run completed */
	sgemm_ran(&t, 0, NAN, NAN);
	t.wrong = 2;
	t.worst_error = 40;
	devcheck_judge_figure(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_FAIL);
	ck_assert_str_eq(t.rule, "wrong result: 2 runs did not match the double-precision reference (worst error 40 x "
				 "the tolerance)");
}
END_TEST

START_TEST(no_run_fails_with_the_reason)
{
	struct devcheck_test t;

	/* stopped before its first run */
	devcheck_test_init(&t, "sgemm", "matrix", "GFLOP/s");
	t.expected = 100;
	devcheck_judge_figure(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_FAIL);
	ck_assert_str_eq(t.rule, "no run completed: the check stopped first");
	/* the first run failed: its failure is the rule */
	devcheck_test_init(&t, "sgemm", "matrix", "GFLOP/s");
	t.expected = 100;
	t.failed = true;
	snprintf(t.failure, sizeof(t.failure), "DEVICE_FAILURE: job job-1 failed: CL_OUT_OF_RESOURCES");
	devcheck_judge_figure(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_FAIL);
	ck_assert_str_eq(t.rule, "no run completed: DEVICE_FAILURE: job job-1 failed: CL_OUT_OF_RESOURCES");
	/* runs counted but no figure read */
	sgemm_ran(&t, 2, NAN, 100);
	devcheck_judge_figure(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_FAIL);
	ck_assert_str_eq(t.rule, "no run completed: the check stopped first");
}
END_TEST

START_TEST(no_expected_figure_records_only)
{
	struct devcheck_test t;

	sgemm_ran(&t, 5, 80, NAN);
	devcheck_judge_figure(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_PASS);
	ck_assert_str_eq(t.rule, "every result verified; no expected figure is known for this device (no spec table "
				 "row or computed peak), so 80 GFLOP/s is recorded only");
	/* an expected figure of 0 is none */
	sgemm_ran(&t, 5, 0.5, 0);
	devcheck_judge_figure(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_PASS);
	ck_assert_ptr_nonnull(strstr(t.rule, "so 0.5 GFLOP/s is recorded only"));
}
END_TEST

START_TEST(failed_run_after_good_ones_fails)
{
	struct devcheck_test t;

	sgemm_ran(&t, 3, 30, 100);
	t.failed = true;
	snprintf(t.failure, sizeof(t.failure), "OUT_OF_MEMORY: job job-4 failed: cannot allocate 3 GiB");
	devcheck_judge_figure(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_FAIL);
	ck_assert_str_eq(t.rule, "a run failed: OUT_OF_MEMORY: job job-4 failed: cannot allocate 3 GiB (before it: "
				 "measured 30 GFLOP/s is 30 % of the expected 100 GFLOP/s (warn below 25 %, fail below "
				 "10 %))");
	/* a warning becomes a failure too */
	sgemm_ran(&t, 3, 20, 100);
	t.failed = true;
	snprintf(t.failure, sizeof(t.failure), "DEVICE_FAILURE: lost");
	devcheck_judge_figure(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_FAIL);
	ck_assert_str_eq(t.rule, "a run failed: DEVICE_FAILURE: lost (before it: measured 20 GFLOP/s is 20 % of the "
				 "expected 100 GFLOP/s (warn below 25 %))");
	/* a figure that fails on its own keeps its own rule */
	sgemm_ran(&t, 3, 5, 100);
	t.failed = true;
	snprintf(t.failure, sizeof(t.failure), "DEVICE_FAILURE: lost");
	devcheck_judge_figure(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_FAIL);
	ck_assert_str_eq(t.rule, "measured 5 GFLOP/s is 5 % of the expected 100 GFLOP/s (fail below 10 %)");
}
END_TEST

START_TEST(sustained_throttle_rule)
{
	struct devcheck_test t;

	sustained_ran(&t, 40, 100, 80);
	devcheck_judge_sustained(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_WARN);
	ck_assert_str_eq(t.rule, "throughput fell from 100 to 80 GFLOP/s (80.0 %) over 60 s of load (warn below 90 %): "
				 "thermal or power throttling");
	sustained_ran(&t, 40, 100, 95);
	devcheck_judge_sustained(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_PASS);
	ck_assert_str_eq(t.rule, "throughput held at 95.0 % of the first runs' 100 GFLOP/s over 60 s of load (warn "
				 "below 90 %)");
	/* on the line: held */
	sustained_ran(&t, 40, 100, 90);
	devcheck_judge_sustained(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_PASS);
	/* a faster end is no fault */
	sustained_ran(&t, 40, 100, 130);
	devcheck_judge_sustained(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_PASS);
	/* too few runs for a trend, however far it fell */
	sustained_ran(&t, 7, 100, 10);
	devcheck_judge_sustained(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_PASS);
	ck_assert_str_eq(t.rule, "every result verified; 7 runs are too few to judge a trend (8 needed)");
	sustained_ran(&t, 8, 100, 10);
	devcheck_judge_sustained(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_WARN);
	/* no first quarter to compare with */
	sustained_ran(&t, 20, NAN, 10);
	devcheck_judge_sustained(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_PASS);
}
END_TEST

START_TEST(sustained_faults_fail)
{
	struct devcheck_test t;

	sustained_ran(&t, 40, 100, 99);
	t.wrong = 1;
	devcheck_judge_sustained(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_FAIL);
	ck_assert_str_eq(t.rule, "wrong result under sustained load: 1 run did not match the reference");
	sustained_ran(&t, 40, 100, 99);
	t.failed = true;
	snprintf(t.failure, sizeof(t.failure), "DEVICE_FAILURE: Xid 79");
	devcheck_judge_sustained(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_FAIL);
	ck_assert_str_eq(t.rule, "a run failed under sustained load: DEVICE_FAILURE: Xid 79");
	devcheck_test_init(&t, "sustained", "sustained", "GFLOP/s");
	t.failed = true;
	snprintf(t.failure, sizeof(t.failure), "no sgemm size to sustain: the sgemm test did not complete");
	devcheck_judge_sustained(&settings, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_FAIL);
	ck_assert_str_eq(t.rule, "no run completed: no sgemm size to sustain: the sgemm test did not complete");
}
END_TEST

START_TEST(telemetry_without_findings_passes)
{
	struct devcheck_telemetry x;
	struct devcheck_test t;

	tel_sampled(&x, 0, NULL);
	ck_assert_int_eq(tel_verdict(&x, &t), DEVCHECK_PASS);
	ck_assert_str_eq(t.rule, "the device reports no health telemetry (temperature, clocks, ECC)");
	tel_sampled(&x, 4, NULL);
	ck_assert_int_eq(tel_verdict(&x, &t), DEVCHECK_PASS);
	ck_assert_str_eq(t.rule, "the device reports no health telemetry (temperature, clocks, ECC)");
	tel_sampled(&x, 1, "cpufreq");
	ck_assert_int_eq(tel_verdict(&x, &t), DEVCHECK_PASS);
	ck_assert_str_eq(t.rule, "no fault in 1 cpufreq sample");
	/* healthy figures: cool, clocks near the maximum, no ECC error, no page waiting */
	tel_sampled(&x, 12, "nvml");
	x.temp_first = 40;
	x.temp_max = 70;
	x.slowdown_c = 87;
	x.clock_n = 2;
	x.clock_sum = 3600;
	x.clock_max_rated = 2000;
	x.ecc_first = 0;
	x.ecc_last = 0;
	x.retired_pending = 0;
	x.throttle_known = true;
	x.throttle_seen = DEVICE_THROTTLE_IDLE | DEVICE_THROTTLE_SW_POWER_CAP; /* no fault of the device */
	ck_assert_int_eq(tel_verdict(&x, &t), DEVCHECK_PASS);
	ck_assert_str_eq(t.rule, "no fault in 12 nvml samples");
}
END_TEST

START_TEST(telemetry_ecc_and_retired_pages_fail)
{
	struct devcheck_telemetry x;
	struct devcheck_test t;

	tel_sampled(&x, 3, "nvml");
	x.ecc_first = 1;
	x.ecc_last = 3;
	ck_assert_int_eq(tel_verdict(&x, &t), DEVCHECK_FAIL);
	ck_assert_str_eq(t.rule, "3 uncorrectable ECC errors since the driver loaded (1 at the start of the check)");
	x.ecc_first = 1;
	x.ecc_last = 1;
	ck_assert_int_eq(tel_verdict(&x, &t), DEVCHECK_FAIL);
	ck_assert_str_eq(t.rule, "1 uncorrectable ECC error since the driver loaded (1 at the start of the check)");
	tel_sampled(&x, 3, "nvml");
	x.retired_pending = 1;
	ck_assert_int_eq(tel_verdict(&x, &t), DEVCHECK_FAIL);
	ck_assert_str_eq(t.rule, "retired pages or remapped rows wait for a GPU reset");
}
END_TEST

START_TEST(telemetry_throttle_reasons_warn)
{
	struct devcheck_telemetry x;
	struct devcheck_test t;

	tel_sampled(&x, 3, "nvml");
	x.throttle_known = true;
	x.throttle_seen = DEVICE_THROTTLE_HW_SLOWDOWN | DEVICE_THROTTLE_SW_POWER_CAP | DEVICE_THROTTLE_HW_THERMAL;
	ck_assert_int_eq(tel_verdict(&x, &t), DEVCHECK_WARN);
	/* only the harmful reasons are named */
	ck_assert_str_eq(t.rule, "clocks held down during the check by hw_slowdown, hw_thermal");
	x.throttle_seen = DEVICE_THROTTLE_HW_POWER_BRAKE;
	ck_assert_int_eq(tel_verdict(&x, &t), DEVCHECK_WARN);
	ck_assert_str_eq(t.rule, "clocks held down during the check by hw_power_brake");
	/* reasons a driver did not say it knows are not read */
	x.throttle_known = false;
	ck_assert_int_eq(tel_verdict(&x, &t), DEVCHECK_PASS);
}
END_TEST

START_TEST(telemetry_slowdown_temperature_warns)
{
	struct devcheck_telemetry x;
	struct devcheck_test t;

	tel_sampled(&x, 3, "nvml");
	x.temp_first = 60;
	x.temp_max = 87;
	x.slowdown_c = 87;
	ck_assert_int_eq(tel_verdict(&x, &t), DEVCHECK_WARN);
	ck_assert_str_eq(t.rule, "reached 87 C, at or past its slowdown temperature of 87 C");
	x.temp_max = 86;
	ck_assert_int_eq(tel_verdict(&x, &t), DEVCHECK_PASS);
	/* no threshold known: any temperature passes */
	x.temp_max = 110;
	x.slowdown_c = NAN;
	ck_assert_int_eq(tel_verdict(&x, &t), DEVCHECK_PASS);
}
END_TEST

START_TEST(telemetry_clock_percent_warns)
{
	struct devcheck_telemetry x;
	struct devcheck_test t;

	tel_sampled(&x, 2, "nvml");
	x.clock_min = 700;
	x.clock_n = 2;
	x.clock_sum = 1600;
	x.clock_max_rated = 2000;
	ck_assert_int_eq(tel_verdict(&x, &t), DEVCHECK_WARN);
	ck_assert_str_eq(t.rule, "ran at 800 MHz on average, 40.0 % of its maximum 2000 MHz (warn below 50 %)");
	/* the mean counts, not the lowest sample; on the line is not below it */
	x.clock_sum = 2000;
	ck_assert_int_eq(tel_verdict(&x, &t), DEVCHECK_PASS);
	/* no rated maximum: nothing to compare with */
	x.clock_sum = 200;
	x.clock_max_rated = NAN;
	ck_assert_int_eq(tel_verdict(&x, &t), DEVCHECK_PASS);
}
END_TEST

START_TEST(telemetry_worst_finding_decides_and_every_one_is_said)
{
	struct devcheck_telemetry x;
	struct devcheck_test t;

	tel_sampled(&x, 5, "nvml");
	x.temp_max = 92;
	x.slowdown_c = 87;
	x.ecc_first = 0;
	x.ecc_last = 2;
	ck_assert_int_eq(tel_verdict(&x, &t), DEVCHECK_FAIL);
	ck_assert_str_eq(t.rule, "2 uncorrectable ECC errors since the driver loaded (0 at the start of the check); "
				 "reached 92 C, at or past its slowdown temperature of 87 C");
	/* a test judged again starts from nothing */
	tel_sampled(&x, 5, "nvml");
	devcheck_judge_telemetry(&settings, &x, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_PASS);
	ck_assert_str_eq(t.rule, "no fault in 5 nvml samples");
}
END_TEST

/* A run of the level with sgemm, triad and telemetry as a check leaves them, all passing. */
static void run_ran(struct devcheck_run *run, enum devcheck_level level)
{
	memset(run, 0, sizeof(*run));
	run->req.level = level;
	sgemm_ran(&run->matrix, 5, 80, 100);
	devcheck_test_init(&run->memory, "triad", "memory", "GB/s");
	run->memory.runs = 5;
	run->memory.best = 8;
	run->memory.expected = 10;
	sustained_ran(&run->sustained, 40, 100, 98);
	devcheck_test_init(&run->telemetry, "telemetry", "telemetry", NULL);
	tel_sampled(&run->tel, 6, "cpufreq");
}

START_TEST(check_takes_its_worst_test)
{
	static struct devcheck_run run;

	run_ran(&run, DEVCHECK_QUICK);
	devcheck_judge(&settings, &run);
	ck_assert(run.has_verdict);
	ck_assert_int_eq(run.verdict, DEVCHECK_PASS);
	/* a tie goes to the first test in the document's order */
	ck_assert_str_eq(run.rule, "sgemm: measured 80 GFLOP/s is 80 % of the expected 100 GFLOP/s (warn below 25 %, "
				   "fail below 10 %)");
	ck_assert_str_eq(run.telemetry.rule, "no fault in 6 cpufreq samples");
	/* the quick level does not judge the sustained phase */
	ck_assert(!run.sustained.has_verdict);

	run_ran(&run, DEVCHECK_QUICK);
	run.memory.best = 2;
	devcheck_judge(&settings, &run);
	ck_assert_int_eq(run.verdict, DEVCHECK_WARN);
	ck_assert_str_eq(run.rule, "triad: measured 2 GB/s is 20 % of the expected 10 GB/s (warn below 25 %)");
	ck_assert_int_eq(run.matrix.verdict, DEVCHECK_PASS);

	run_ran(&run, DEVCHECK_QUICK);
	run.memory.best = 2;
	run.tel.retired_pending = 1;
	devcheck_judge(&settings, &run);
	ck_assert_int_eq(run.verdict, DEVCHECK_FAIL);
	ck_assert_str_eq(run.rule, "telemetry: retired pages or remapped rows wait for a GPU reset");

	/* the long level: a throttled sustained phase decides */
	run_ran(&run, DEVCHECK_LONG);
	run.sustained.last = 50;
	devcheck_judge(&settings, &run);
	ck_assert_int_eq(run.verdict, DEVCHECK_WARN);
	ck_assert_msg(strncmp(run.rule, "sustained: throughput fell from 100 to 50 GFLOP/s", 49) == 0, "%s", run.rule);

	/* a check stopped before any run: sgemm, the first, fails with the reason */
	run_ran(&run, DEVCHECK_QUICK);
	devcheck_test_init(&run.matrix, "sgemm", "matrix", "GFLOP/s");
	devcheck_test_init(&run.memory, "triad", "memory", "GB/s");
	devcheck_judge(&settings, &run);
	ck_assert_int_eq(run.verdict, DEVCHECK_FAIL);
	ck_assert_str_eq(run.rule, "sgemm: no run completed: the check stopped first");
	ck_assert_int_eq(run.memory.verdict, DEVCHECK_FAIL);
}
END_TEST

/* A transfer test after runs verified runs at up and down GB/s over a link of link GB/s (NAN: unknown). */
static void transfer_ran(struct devcheck_test *t, unsigned runs, double up, double down, double link)
{
	devcheck_test_init(t, "transfer", "transfer", "GB/s");
	t->started = true;
	t->finished = true;
	t->runs = runs;
	t->upload = up;
	t->download = down;
	t->link = link;
}

START_TEST(transfer_warns_and_never_fails)
{
	struct devcheck_settings s = settings;
	struct devcheck_test t;
	static struct devcheck_run run;

	s.transfer_percent = 70;
	/* both ways at 70 % or more of the link pass; either way below warns */
	transfer_ran(&t, 3, 50, 45, 63.0154);
	devcheck_judge_transfer(&s, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_PASS);
	ck_assert_str_eq(t.rule, "host to device 50 GB/s (79.3 %), device to host 45 GB/s (71.4 %) of the link's "
				 "theoretical 63.02 GB/s (warn below 70 %)");
	transfer_ran(&t, 3, 50, 20, 63.0154);
	devcheck_judge_transfer(&s, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_WARN);
	ck_assert_msg(strstr(t.rule, "device to host 20 GB/s (31.7 %)") != NULL, "%s", t.rule);
	/* far below, even nothing moved: a warning, never a failure */
	transfer_ran(&t, 3, 0.5, 0.4, 63.0154);
	devcheck_judge_transfer(&s, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_WARN);
	transfer_ran(&t, 0, NAN, NAN, 63.0154);
	t.failed = true;
	snprintf(t.failure, sizeof(t.failure), "DEVICE_FAILURE: lost");
	devcheck_judge_transfer(&s, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_WARN);
	ck_assert_str_eq(t.rule, "no transfer run completed: DEVICE_FAILURE: lost; the transfer test warns only");
	transfer_ran(&t, 2, 10, 10, 63.0154);
	t.wrong = 1;
	devcheck_judge_transfer(&s, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_WARN);
	/* an unknown link: the rates are recorded only */
	transfer_ran(&t, 3, 5, 4, NAN);
	devcheck_judge_transfer(&s, &t);
	ck_assert_int_eq(t.verdict, DEVCHECK_PASS);
	ck_assert_str_eq(t.rule, "host to device 5 GB/s, device to host 4 GB/s; the PCIe link is unknown, so they are "
				 "recorded only");

	/* in a check: judged when the device has a link, and its warning is the check's when nothing is worse */
	run_ran(&run, DEVCHECK_QUICK);
	run.has_transfer = true;
	transfer_ran(&run.transfer, 3, 10, 10, 63.0154);
	devcheck_judge(&s, &run);
	ck_assert_int_eq(run.verdict, DEVCHECK_WARN);
	ck_assert_msg(strncmp(run.rule, "transfer: host to device 10 GB/s", 32) == 0, "%s", run.rule);
	run_ran(&run, DEVCHECK_QUICK);
	transfer_ran(&run.transfer, 3, 10, 10, 63.0154);
	devcheck_judge(&s, &run);
	ck_assert_int_eq(run.verdict, DEVCHECK_PASS);
	ck_assert(!run.transfer.has_verdict);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("devcheck_judge");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, figure_lines_pass_warn_fail);
	tcase_add_test(tc, figure_triad_speaks_its_unit);
	tcase_add_test(tc, wrong_result_fails_whatever_the_figure);
	tcase_add_test(tc, no_run_fails_with_the_reason);
	tcase_add_test(tc, no_expected_figure_records_only);
	tcase_add_test(tc, failed_run_after_good_ones_fails);
	tcase_add_test(tc, sustained_throttle_rule);
	tcase_add_test(tc, sustained_faults_fail);
	tcase_add_test(tc, telemetry_without_findings_passes);
	tcase_add_test(tc, telemetry_ecc_and_retired_pages_fail);
	tcase_add_test(tc, telemetry_throttle_reasons_warn);
	tcase_add_test(tc, telemetry_slowdown_temperature_warns);
	tcase_add_test(tc, telemetry_clock_percent_warns);
	tcase_add_test(tc, telemetry_worst_finding_decides_and_every_one_is_said);
	tcase_add_test(tc, check_takes_its_worst_test);
	tcase_add_test(tc, transfer_warns_and_never_fails);
	suite_add_tcase(s, tc);
	return s;
}
