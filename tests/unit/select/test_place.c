/*
 * Unit tests for place.c with the executor: a job sent with the constraints of a selection lands on the device that
 * selection names (preference, policy, memory, allow_tpu), falls back along the selection's order, and a pinned
 * device is checked by the same constraints. Devices are built by hand; every device runs jobs through a fake
 * backend that notes nothing but succeeds, so where a job ran is the only thing that differs.
 */
#include <string.h>

#include "check_main.h"
#include "core/config.h"
#include "exec/exec.h"
#include "select/place.h"
#include "select/select.h"

static struct device devs[4];

static bool serves_all(const struct device *dev)
{
	(void)dev;
	return true;
}

static enum acceld_err ok_open(const struct device *dev, unsigned threads, void **state, char *err, size_t errsz)
{
	(void)dev;
	(void)threads;
	(void)err;
	(void)errsz;
	*state = NULL;
	return ACCELD_OK;
}

static enum acceld_err ok_run(void *state, struct kernel_work *w, struct backend_timing *t, char *err,
			      size_t errsz)
{
	struct kernel_shape s = {w->m, w->n, w->k};

	(void)state;
	(void)err;
	(void)errsz;
	if (w->out)
		memset(w->out, 0, kernel_output_len(w->kernel, &s) * sizeof(float));
	t->kernel_ms = 1.0;
	t->transfer_ms = 0.0;
	return ACCELD_OK;
}

static void ok_close(void *state)
{
	(void)state;
}

static const struct backend_ops everywhere = {.name = "fake", .serves_what = "every device", .serves = serves_all,
					      .open = ok_open, .run = ok_run, .close = ok_close};
static const struct backend_ops *const backends[] = {&everywhere, NULL};

static struct config cfg;
static struct exec *ex;

/* cpu:0 cheap and slow; gpu:0 fast, dear, 16 GiB; gpu:1 slower, cheaper, 80 GiB; tpu:0 fastest of all */
static void setup(void)
{
	char err[256];
	struct exec_opts o;

	ck_assert_int_eq(config_load(&cfg, 0, NULL, NULL, err, sizeof(err)), 0);
	device_init(&devs[0], DEVICE_CPU);
	DEVICE_SET(devs[0].id, "cpu:0");
	devs[0].memory_total_bytes = 8ull << 30;
	devs[0].peak.fp32_tflops = 1;
	devs[0].price.usd_per_hour = 0.1;
	device_init(&devs[1], DEVICE_GPU);
	DEVICE_SET(devs[1].id, "gpu:0");
	devs[1].memory_total_bytes = 16ull << 30;
	devs[1].peak.fp32_tflops = 60;
	devs[1].price.usd_per_hour = 10;
	device_init(&devs[2], DEVICE_GPU);
	DEVICE_SET(devs[2].id, "gpu:1");
	devs[2].memory_total_bytes = 80ull << 30;
	devs[2].peak.fp32_tflops = 20;
	devs[2].price.usd_per_hour = 2;
	device_init(&devs[3], DEVICE_TPU);
	DEVICE_SET(devs[3].id, "tpu:0");
	devs[3].memory_total_bytes = 32ull << 30;
	devs[3].peak.fp32_tflops = 100;
	devs[3].price.usd_per_hour = 4;
	for (int i = 0; i < 4; i++)
		devs[i].executable = true;
	exec_opts_from_config(&cfg, &o);
	o.devices = devs;
	o.ndevices = 4;
	o.backends = backends;
	ck_assert_int_eq(exec_new(&o, &ex), ACCELD_OK);
}

static void teardown(void)
{
	exec_free(ex);
	config_release(&cfg);
}

static enum acceld_err choose(void *ctx, const struct select_request *sreq, struct select_result *res)
{
	(void)ctx;
	return select_choose(devs, 4, sreq, NULL, 0, res);
}

/* The device selection names for sreq (with executable=true and the kernel, as placement asks), or "". */
static void selected(const struct select_request *sreq, enum kernel_id k, char *out, size_t outsz)
{
	struct select_request s = *sreq;
	struct select_result res;

	s.executable = true;
	s.kernel = (int)k;
	out[0] = '\0';
	if (select_choose(devs, 4, &s, NULL, 0, &res) == ACCELD_OK)
		snprintf(out, outsz, "%s", res.device->id);
	select_result_release(&res);
}

/* Places and runs an sgemm with sreq; returns where it ran ("" when refused, with why filled). */
static void run_with(const struct select_request *sreq, bool fallback, char *ran_on, size_t ransz,
		     struct refusal *why)
{
	struct exec_request r;
	struct exec_job *job = NULL;
	json_t *doc;

	exec_request_init(&r);
	r.kernel = KERNEL_SGEMM;
	r.shape = (struct kernel_shape){.m = 64, .n = 64, .k = 64};
	r.fallback = fallback;
	ran_on[0] = '\0';
	if (place_rank_devices(choose, NULL, sreq, &r, why) != ACCELD_OK || exec_submit(ex, &r, NULL, NULL, &job, why) !=
									    ACCELD_OK) {
		exec_request_release(&r);
		return;
	}
	exec_job_wait(job);
	doc = exec_job_json(job);
	snprintf(ran_on, ransz, "%s", json_string_value(json_object_get(doc, "device")));
	json_decref(doc);
	exec_job_unref(job);
	exec_request_release(&r);
}

START_TEST(jobs_land_where_selection_says)
{
	static const struct {
		const char *prefer, *policy, *min_memory, *allow_tpu;
		const char *want;
	} cases[] = {
		{"auto", "priority", NULL, "true", "tpu:0"},
		{"auto", "priority", NULL, "false", "gpu:0"},
		{"gpu", "priority", NULL, "true", "gpu:0"},
		{"gpu", "cheapest", NULL, "true", "gpu:1"},
		{"gpu", "priority", "20GiB", "true", "gpu:1"},
		{"auto", "cheapest", NULL, "true", "cpu:0"},
		{"auto", "fastest", NULL, "false", "gpu:0"},
		{"auto", "efficient", NULL, "true", "tpu:0"},
		{"cpu", "priority", NULL, "true", "cpu:0"},
		{"tpu", "priority", NULL, "false", "gpu:0"},
		{"auto", "fastest", "40GiB", "true", "gpu:1"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct select_request s;
		struct refusal why = {.err = ACCELD_OK};
		char err[256], want[DEVICE_ID_MAX], ran[DEVICE_ID_MAX];

		select_request_init(&s, &cfg);
		ck_assert_int_eq(select_request_set(&s, "prefer", cases[i].prefer, err, sizeof(err)), ACCELD_OK);
		ck_assert_int_eq(select_request_set(&s, "policy", cases[i].policy, err, sizeof(err)), ACCELD_OK);
		ck_assert_int_eq(select_request_set(&s, "allow_tpu", cases[i].allow_tpu, err, sizeof(err)), ACCELD_OK);
		if (cases[i].min_memory)
			ck_assert_int_eq(select_request_set(&s, "min_memory_bytes", cases[i].min_memory, err,
							    sizeof(err)),
					 ACCELD_OK);
		selected(&s, KERNEL_SGEMM, want, sizeof(want));
		ck_assert_str_eq(want, cases[i].want);
		run_with(&s, true, ran, sizeof(ran), &why);
		ck_assert_msg(strcmp(ran, want) == 0, "case %zu: /select names %s, the job ran on '%s' (%s %s)", i, want,
			      ran, reason_name(why.reason), why.detail);
		json_decref(why.extra);
	}
}
END_TEST

START_TEST(constraints_refuse_and_fallback_is_the_callers)
{
	struct select_request s;
	struct refusal why = {.err = ACCELD_OK};
	char err[256], ran[DEVICE_ID_MAX];

	/* nothing has 1 TiB: refused, naming the constraint */
	select_request_init(&s, &cfg);
	ck_assert_int_eq(select_request_set(&s, "min_memory_bytes", "1099511627776", err, sizeof(err)), ACCELD_OK);
	run_with(&s, true, ran, sizeof(ran), &why);
	ck_assert_str_eq(ran, "");
	ck_assert_int_eq(why.err, ACCELD_ECONFLICT);
	ck_assert_str_eq(reason_name(why.reason), "NO_MATCHING_DEVICE");
	ck_assert_msg(strstr(why.detail, "min_memory_bytes") != NULL, "%s", why.detail);

	/* a TPU preferred but not allowed: another kind only with fallback */
	select_request_init(&s, &cfg);
	ck_assert_int_eq(select_request_set(&s, "prefer", "tpu", err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(select_request_set(&s, "allow_tpu", "false", err, sizeof(err)), ACCELD_OK);
	run_with(&s, false, ran, sizeof(ran), &why);
	ck_assert_str_eq(ran, "");
	ck_assert_str_eq(reason_name(why.reason), "NO_MATCHING_DEVICE");
	ck_assert_msg(strstr(why.detail, "fallback=false") != NULL, "%s", why.detail);

	/* a pinned device is held to the constraints: excluded, it falls back only when allowed */
	select_request_init(&s, &cfg);
	ck_assert_int_eq(select_request_set(&s, "device", "gpu:0", err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(select_request_set(&s, "min_memory_bytes", "20GiB", err, sizeof(err)), ACCELD_OK);
	run_with(&s, false, ran, sizeof(ran), &why);
	ck_assert_str_eq(ran, "");
	ck_assert_str_eq(reason_name(why.reason), "NO_MATCHING_DEVICE");
	run_with(&s, true, ran, sizeof(ran), &why);
	ck_assert_str_eq(ran, "tpu:0"); /* the first with 20 GiB in the auto order TPU > GPU > CPU */

	/* pinned and fine: there it runs, whatever the policy would prefer */
	select_request_init(&s, &cfg);
	ck_assert_int_eq(select_request_set(&s, "device", "cpu:0", err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(select_request_set(&s, "policy", "fastest", err, sizeof(err)), ACCELD_OK);
	run_with(&s, false, ran, sizeof(ran), &why);
	ck_assert_str_eq(ran, "cpu:0");

	/* an unknown pinned id is the executor's 404 */
	select_request_init(&s, &cfg);
	ck_assert_int_eq(select_request_set(&s, "device", "gpu:9", err, sizeof(err)), ACCELD_OK);
	run_with(&s, false, ran, sizeof(ran), &why);
	ck_assert_int_eq(why.err, ACCELD_ENOTFOUND);
	ck_assert_str_eq(reason_name(why.reason), "UNKNOWN_DEVICE");
}
END_TEST

/* The devices a placed job may fall back to follow the selection's order: its kind ranked, then the others. */
START_TEST(fallback_order_follows_selection)
{
	struct select_request s;
	struct exec_request r;
	struct refusal why;
	char err[256];

	select_request_init(&s, &cfg);
	ck_assert_int_eq(select_request_set(&s, "prefer", "gpu", err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(select_request_set(&s, "policy", "cheapest", err, sizeof(err)), ACCELD_OK);
	exec_request_init(&r);
	r.kernel = KERNEL_SAXPY;
	r.shape.n = 10;
	r.fallback = true;
	ck_assert_int_eq(place_rank_devices(choose, NULL, &s, &r, &why), ACCELD_OK);
	ck_assert_uint_eq(r.ndevices, 4);
	ck_assert_str_eq(r.devices[0], "gpu:1");
	ck_assert_str_eq(r.devices[1], "gpu:0");
	/* then the other kinds in the fallback order of a GPU preference: TPU, then CPU */
	ck_assert_str_eq(r.devices[2], "tpu:0");
	ck_assert_str_eq(r.devices[3], "cpu:0");
	ck_assert(!r.pinned);
	ck_assert_ptr_nonnull(strstr(r.placement, "cheapest"));
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("place");
	TCase *tc = tcase_create("place");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, jobs_land_where_selection_says);
	tcase_add_test(tc, constraints_refuse_and_fallback_is_the_callers);
	tcase_add_test(tc, fallback_order_follows_selection);
	suite_add_tcase(s, tc);
	return s;
}
