/*
 * Unit tests for jobdoc.c: the sizes object of each kernel; the params each kernel takes (a seed only for generated
 * inputs, float32 scalars in their shortest form); a document with every figure unknown (no zeros: the timing object
 * empty, no times, cost, throughput or result); a succeeded sgemm with every member (trigger and check, request,
 * precision, program cache, instants, placement and fallback, timing, throughput and fraction of peak, result,
 * verification, cost); the memory-bound kernels' fraction of peak; unknown figures inside a result and a verification
 * as null; dot's value and full output; and failed jobs, which show their error and no result.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "core/jsonval.h"
#include "exec/jobdoc.h"

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static double num(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	ck_assert_msg(json_is_number(v), "%s is not a number", key);
	return json_number_value(v);
}

/* Whether o has exactly the members named (NULL-terminated). */
static void members(const json_t *o, const char *const *names)
{
	size_t n = 0;

	for (; names[n] != NULL; n++)
		ck_assert_msg(json_object_get(o, names[n]) != NULL, "no member %s", names[n]);
	ck_assert_msg(json_object_size(o) == n, "%zu members, want %zu: %s", json_object_size(o), n,
		      json_dumps(o, JSON_COMPACT));
}

START_TEST(sizes_follow_the_kernel)
{
	const struct kernel_shape s = {.m = 3, .n = 5, .k = 7};
	json_t *o;

	for (enum kernel_id k = KERNEL_SAXPY; k < KERNEL_COUNT; k++) {
		o = jobdoc_sizes_json(k, &s);
		ck_assert_int_eq(json_integer_value(json_object_get(o, "n")), 5);
		if (k == KERNEL_SGEMM) {
			members(o, (const char *const[]){"m", "n", "k", NULL});
			ck_assert_int_eq(json_integer_value(json_object_get(o, "m")), 3);
			ck_assert_int_eq(json_integer_value(json_object_get(o, "k")), 7);
		} else if (k == KERNEL_SOFTMAX) {
			members(o, (const char *const[]){"m", "n", NULL});
		} else {
			members(o, (const char *const[]){"n", NULL});
		}
		json_decref(o);
	}
}
END_TEST

/* A job shows what it took: the scalars of its kernel, and a seed only when its inputs were generated. */
START_TEST(params_follow_the_kernel)
{
	static const char *const want[KERNEL_COUNT] = {
		[KERNEL_SAXPY] = "{\"alpha\":0.1,\"seed\":7}",
		[KERNEL_TRIAD] = "{\"s\":3.3,\"seed\":7}",
		[KERNEL_DOT] = "{\"seed\":7}",
		[KERNEL_SGEMM] = "{\"alpha\":0.1,\"beta\":-2.5,\"seed\":7}",
		[KERNEL_SOFTMAX] = "{\"seed\":7}",
	};
	struct jobdoc d;
	json_t *o;
	char *text;

	for (enum kernel_id k = KERNEL_SAXPY; k < KERNEL_COUNT; k++) {
		jobdoc_init(&d);
		d.id = "00cd";
		d.state = "queued";
		d.kernel = k;
		d.shape = (struct kernel_shape){.m = 2, .n = 2, .k = 2};
		d.has_request = true;
		d.alpha = 0.1f; /* a float32: written 0.1, not 0.10000000149011612 */
		d.beta = -2.5f;
		d.scale = 3.3f;
		d.seed = 7;
		o = jobdoc_json(&d);
		text = jsonval_dumps(json_object_get(o, "params"), JSON_COMPACT);
		ck_assert_str_eq(text, want[k]);
		free(text);
		ck_assert_ptr_null(json_object_get(o, "trigger")); /* not known: left out */
		json_decref(o);

		/* inline inputs: no seed; dot and softmax take nothing */
		d.inline_inputs = true;
		o = jobdoc_json(&d);
		ck_assert_ptr_null(json_object_get(json_object_get(o, "params"), "seed"));
		ck_assert_uint_eq(json_object_size(json_object_get(o, "params")),
				  k == KERNEL_SGEMM ? 2 : (k == KERNEL_DOT || k == KERNEL_SOFTMAX ? 0 : 1));
		json_decref(o);
	}
}
END_TEST

/* A figure that is not known is left out (or null where the member always appears), never written as 0. */
START_TEST(unknown_figures_are_left_out)
{
	struct jobdoc d;
	json_t *o;

	jobdoc_init(&d);
	d.id = "0001";
	d.state = "queued";
	d.kernel = KERNEL_SGEMM;
	d.shape = (struct kernel_shape){.m = 2, .n = 2, .k = 2};
	ck_assert(isnan(d.queued_ms) && isnan(d.kernel_ms) && isnan(d.total_ms) && isnan(d.flops) && isnan(d.value));
	ck_assert(isnan(d.cost_usd) && isnan(d.peak_gflops) && isnan(d.peak_gbps));
	ck_assert_int_eq(d.precision, -1);
	ck_assert_int_eq(d.cached, -1);
	o = jobdoc_json(&d);
	members(o, (const char *const[]){"id", "state", "kernel", "device", "sizes", "timing", NULL});
	ck_assert_str_eq(str(o, "id"), "0001");
	ck_assert_str_eq(str(o, "state"), "queued");
	ck_assert_str_eq(str(o, "kernel"), "sgemm");
	ck_assert_str_eq(str(o, "device"), ""); /* not placed yet */
	ck_assert_uint_eq(json_object_size(json_object_get(o, "timing")), 0);
	json_decref(o);

	/* an empty backend is unknown too; the history's source is said */
	d.backend = "";
	d.source = "history";
	d.device = "cpu:0";
	o = jobdoc_json(&d);
	ck_assert_ptr_null(json_object_get(o, "backend"));
	ck_assert_str_eq(str(o, "source"), "history");
	ck_assert_str_eq(str(o, "device"), "cpu:0");
	json_decref(o);
}
END_TEST

static struct jobdata_summary summary = {
	.checksum = 12.5, .min = -1.0, .max = 2.0, .mean = 0.5, .first = {1.0f, -1.0f, 2.0f}, .nfirst = 3};

static struct kernel_verification verification = {.verified = true,
						   .max_abs_error = 1e-6,
						   .worst_ratio = 0.25,
						   .checked = 4096,
						   .method = "double-precision naive loop over every entry"};

/* A succeeded sgemm with every figure known. */
static void full_sgemm(struct jobdoc *d)
{
	jobdoc_init(d);
	d->id = "00ab";
	d->state = "succeeded";
	d->kernel = KERNEL_SGEMM;
	d->shape = (struct kernel_shape){.m = 64, .n = 64, .k = 64};
	d->device = "gpu:0";
	d->backend = "opencl";
	d->trigger = "check";
	d->check_id = "chk-00000000000000aa";
	d->has_request = true;
	d->alpha = 1.5f;
	d->beta = 0.0f;
	d->scale = 1.0f;
	d->seed = 42;
	d->timeout_ms = 60000;
	d->precision_asked = KERNEL_PRECISION_TF32;
	d->precision = KERNEL_PRECISION_HIGHEST;
	d->cached = 0;
	d->placement = "preferred gpu";
	d->fell_back = true;
	d->fallback_from = "tpu";
	d->fallback_reason = "no tpu on this host";
	d->created_ms = 1767225600000;    /* 2026-01-01T00:00:00.000Z */
	d->started_ms = 1767225600250;
	d->finished_ms = 1767225601000;
	d->queued_ms = 250.0;
	d->prepare_ms = 1.0;
	d->compile_ms = 20.0;
	d->transfer_ms = 0.5;
	d->kernel_ms = 2.0;
	d->total_ms = 750.0;
	d->flops = 2.0 * 64 * 64 * 64; /* 524288 */
	d->bytes = 3.0 * 64 * 64 * 4;  /* 49152 */
	d->peak_gflops = 1.048576;     /* the run reaches 0.262144 GFLOP/s: a quarter */
	d->peak_gbps = 1000.0;
	d->summary = &summary;
	d->verification = &verification;
	d->cost_usd = 0.0125;
}

START_TEST(a_succeeded_sgemm_in_full)
{
	struct jobdoc d;
	json_t *o;
	json_t *params;
	json_t *t;
	json_t *tp;
	json_t *res;
	json_t *v;

	full_sgemm(&d);
	o = jobdoc_json(&d);
	members(o, (const char *const[]){"id", "state", "kernel", "device", "backend", "trigger", "check_id", "sizes",
					 "params", "inputs",
					 "return", "timeout_ms", "precision_asked", "precision", "program_cached",
					 "created_at", "started_at", "finished_at", "placement", "fell_back",
					 "fallback_from", "fallback_reason", "timing", "throughput", "result",
					 "verified", "verification", "cost_usd", NULL});
	ck_assert_str_eq(str(o, "backend"), "opencl");
	ck_assert_str_eq(str(o, "trigger"), "check");
	ck_assert_str_eq(str(o, "check_id"), "chk-00000000000000aa");
	params = json_object_get(o, "params");
	members(params, (const char *const[]){"alpha", "beta", "seed", NULL}); /* sgemm takes no s */
	ck_assert_double_eq(num(params, "alpha"), 1.5);
	ck_assert_double_eq(num(params, "beta"), 0.0);
	ck_assert_int_eq(json_integer_value(json_object_get(params, "seed")), 42);
	ck_assert_str_eq(str(o, "inputs"), "generated");
	ck_assert_str_eq(str(o, "return"), "summary");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "timeout_ms")), 60000);
	/* asked for TF32, ran at float32 */
	ck_assert_str_eq(str(o, "precision_asked"), "tf32");
	ck_assert_str_eq(str(o, "precision"), "highest");
	ck_assert(json_is_false(json_object_get(o, "program_cached")));
	ck_assert_str_eq(str(o, "created_at"), "2026-01-01T00:00:00.000Z");
	ck_assert_str_eq(str(o, "started_at"), "2026-01-01T00:00:00.250Z");
	ck_assert_str_eq(str(o, "finished_at"), "2026-01-01T00:00:01.000Z");
	ck_assert_str_eq(str(o, "placement"), "preferred gpu");
	ck_assert(json_is_true(json_object_get(o, "fell_back")));
	ck_assert_str_eq(str(o, "fallback_from"), "tpu");
	ck_assert_str_eq(str(o, "fallback_reason"), "no tpu on this host");

	t = json_object_get(o, "timing");
	members(t, (const char *const[]){"queued_ms", "prepare_ms", "setup_ms", "compile_ms", "transfer_ms",
					 "kernel_ms", "total_ms", NULL});
	ck_assert_double_eq(num(t, "setup_ms"), num(t, "compile_ms"));
	ck_assert_double_eq(num(t, "queued_ms"), 250.0);
	ck_assert_double_eq(num(t, "kernel_ms"), 2.0);
	ck_assert_double_eq(num(t, "total_ms"), 750.0);

	/* 524288 FLOP and 49152 bytes in 2 ms; sgemm is compute-bound: the fraction is of the FLOP peak */
	tp = json_object_get(o, "throughput");
	members(tp, (const char *const[]){"gflops", "gbytes_per_s", "fraction_of_peak", NULL});
	ck_assert_double_eq_tol(num(tp, "gflops"), 0.262144, 1e-12);
	ck_assert_double_eq_tol(num(tp, "gbytes_per_s"), 0.024576, 1e-12);
	ck_assert_double_eq_tol(num(tp, "fraction_of_peak"), 0.25, 1e-12);

	res = json_object_get(o, "result");
	members(res, (const char *const[]){"checksum", "summary", NULL}); /* no output kept */
	ck_assert_double_eq(num(res, "checksum"), 12.5);
	ck_assert_double_eq(num(json_object_get(res, "summary"), "mean"), 0.5);
	ck_assert_double_eq(num(json_object_get(res, "summary"), "min"), -1.0);
	ck_assert_double_eq(num(json_object_get(res, "summary"), "max"), 2.0);
	ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(res, "summary"), "first")), 3);
	ck_assert_double_eq(json_number_value(json_array_get(json_object_get(json_object_get(res, "summary"), "first"),
							      2)),
			    2.0);

	ck_assert(json_is_true(json_object_get(o, "verified")));
	v = json_object_get(o, "verification");
	members(v, (const char *const[]){"mode", "method", "checked", "max_abs_error", "max_error_to_tolerance", NULL});
	ck_assert_str_eq(str(v, "mode"), "full");
	ck_assert_str_eq(str(v, "method"), "double-precision naive loop over every entry");
	ck_assert_int_eq(json_integer_value(json_object_get(v, "checked")), 4096);
	ck_assert_double_eq(num(v, "max_error_to_tolerance"), 0.25);
	ck_assert_double_eq(num(o, "cost_usd"), 0.0125);
	json_decref(o);

	/* inline inputs, the whole output asked, a cached program, no fallback (its reason is not shown) */
	d.inline_inputs = true;
	d.full = true;
	d.cached = 1;
	d.fell_back = false;
	d.fallback_from = "";
	o = jobdoc_json(&d);
	ck_assert_str_eq(str(o, "inputs"), "inline");
	members(json_object_get(o, "params"), (const char *const[]){"alpha", "beta", NULL}); /* no seed */
	ck_assert_str_eq(str(o, "return"), "full");
	ck_assert(json_is_true(json_object_get(o, "program_cached")));
	ck_assert(json_is_false(json_object_get(o, "fell_back")));
	ck_assert_ptr_null(json_object_get(o, "fallback_from"));
	ck_assert_ptr_null(json_object_get(o, "fallback_reason"));
	json_decref(o);
}
END_TEST

/* Figures that are not known, or not finite, inside members that always appear are null, never 0. */
START_TEST(unknown_results_are_null)
{
	struct jobdoc d;
	struct jobdata_summary s = {.checksum = NAN, .min = INFINITY, .max = -INFINITY, .mean = NAN,
				    .first = {NAN, 1.0f}, .nfirst = 2};
	struct kernel_verification v = {.verified = false, .max_abs_error = INFINITY, .worst_ratio = INFINITY,
					 .checked = 3, .method = "double-precision loop over every element"};
	json_t *o;
	json_t *sum;

	full_sgemm(&d);
	d.kernel = KERNEL_SAXPY;
	d.summary = &s;
	d.verification = &v;
	d.cost_usd = NAN;
	d.compile_ms = NAN;
	d.peak_gbps = NAN;
	d.created_ms = 0;
	o = jobdoc_json(&d);
	sum = json_object_get(json_object_get(o, "result"), "summary");
	ck_assert(json_is_null(json_object_get(json_object_get(o, "result"), "checksum")));
	ck_assert(json_is_null(json_object_get(sum, "min")));
	ck_assert(json_is_null(json_object_get(sum, "max")));
	ck_assert(json_is_null(json_object_get(sum, "mean")));
	ck_assert(json_is_null(json_array_get(json_object_get(sum, "first"), 0)));
	ck_assert_double_eq(json_number_value(json_array_get(json_object_get(sum, "first"), 1)), 1.0);
	ck_assert(json_is_false(json_object_get(o, "verified")));
	ck_assert(json_is_null(json_object_get(json_object_get(o, "verification"), "max_abs_error")));
	ck_assert(json_is_null(json_object_get(json_object_get(o, "verification"), "max_error_to_tolerance")));
	/* optional figures are left out */
	ck_assert_ptr_null(json_object_get(o, "cost_usd"));
	ck_assert_ptr_null(json_object_get(json_object_get(o, "timing"), "compile_ms"));
	ck_assert_ptr_null(json_object_get(o, "created_at"));
	ck_assert_ptr_nonnull(json_object_get(o, "started_at"));
	/* saxpy has no precision and no precision_asked */
	ck_assert_ptr_null(json_object_get(o, "precision"));
	ck_assert_ptr_null(json_object_get(o, "precision_asked"));
	/* memory-bound without a bandwidth peak: no fraction (not the FLOP one) */
	ck_assert_ptr_null(json_object_get(json_object_get(o, "throughput"), "fraction_of_peak"));
	json_decref(o);
}
END_TEST

START_TEST(memory_bound_fraction_of_peak)
{
	struct jobdoc d;
	json_t *o;

	full_sgemm(&d);
	d.kernel = KERNEL_TRIAD;
	d.shape = (struct kernel_shape){.n = 1000000};
	d.flops = 2e6;
	d.bytes = 12e6;
	d.kernel_ms = 1.0; /* 12 GB/s of a 48 GB/s peak */
	d.peak_gbps = 48.0;
	d.peak_gflops = 1.0;
	o = jobdoc_json(&d);
	ck_assert_double_eq_tol(num(json_object_get(o, "throughput"), "gbytes_per_s"), 12.0, 1e-9);
	ck_assert_double_eq_tol(num(json_object_get(o, "throughput"), "gflops"), 2.0, 1e-9);
	ck_assert_double_eq_tol(num(json_object_get(o, "throughput"), "fraction_of_peak"), 0.25, 1e-12);
	json_decref(o);

	/* a peak of 0 says nothing */
	d.peak_gbps = 0.0;
	o = jobdoc_json(&d);
	ck_assert_ptr_null(json_object_get(json_object_get(o, "throughput"), "fraction_of_peak"));
	json_decref(o);

	/* no throughput without a kernel time, or without the work's size */
	d.kernel_ms = 0.0;
	o = jobdoc_json(&d);
	ck_assert_ptr_null(json_object_get(o, "throughput"));
	json_decref(o);
	d.kernel_ms = NAN;
	o = jobdoc_json(&d);
	ck_assert_ptr_null(json_object_get(o, "throughput"));
	json_decref(o);
	d.kernel_ms = 1.0;
	d.bytes = NAN;
	o = jobdoc_json(&d);
	ck_assert_ptr_null(json_object_get(o, "throughput"));
	json_decref(o);
}
END_TEST

START_TEST(dot_value_and_outputs)
{
	struct jobdoc d;
	struct jobdata_summary s;
	const float out[3] = {0.5f, NAN, -2.0f};
	json_t *o;
	json_t *res;

	jobdata_summarise_value(3.25, &s);
	full_sgemm(&d);
	d.kernel = KERNEL_DOT;
	d.summary = &s;
	d.value = 3.25;
	o = jobdoc_json(&d);
	res = json_object_get(o, "result");
	ck_assert_double_eq(num(res, "value"), 3.25);
	ck_assert_ptr_null(json_object_get(res, "output"));
	json_decref(o);
	/* the whole output of dot is its value */
	d.full = true;
	o = jobdoc_json(&d);
	ck_assert_double_eq(num(json_object_get(o, "result"), "output"), 3.25);
	json_decref(o);
	d.value = NAN;
	o = jobdoc_json(&d);
	ck_assert(json_is_null(json_object_get(json_object_get(o, "result"), "value")));
	json_decref(o);

	/* an output kept in full, a non-finite entry as null */
	full_sgemm(&d);
	d.kernel = KERNEL_SAXPY;
	d.output = out;
	d.output_len = 3;
	o = jobdoc_json(&d);
	res = json_object_get(json_object_get(o, "result"), "output");
	ck_assert_uint_eq(json_array_size(res), 3);
	ck_assert_double_eq(json_number_value(json_array_get(res, 0)), 0.5);
	ck_assert(json_is_null(json_array_get(res, 1)));
	ck_assert_double_eq(json_number_value(json_array_get(res, 2)), -2.0);
	ck_assert_ptr_null(json_object_get(json_object_get(o, "result"), "value"));
	json_decref(o);

	/* in a list (GET /run) a job is its summary: no output, whatever return asked, dot's value included */
	d.full = true;
	d.listed = true;
	o = jobdoc_json(&d);
	ck_assert_ptr_nonnull(json_object_get(json_object_get(o, "result"), "checksum"));
	ck_assert_ptr_null(json_object_get(json_object_get(o, "result"), "output"));
	ck_assert_str_eq(json_string_value(json_object_get(o, "return")), "full");
	json_decref(o);
	d.kernel = KERNEL_DOT;
	d.output = NULL;
	d.value = 3.25;
	o = jobdoc_json(&d);
	ck_assert_ptr_null(json_object_get(json_object_get(o, "result"), "output"));
	ck_assert_double_eq(num(json_object_get(o, "result"), "value"), 3.25);
	json_decref(o);
}
END_TEST

/* A job that did not succeed shows its error, and none of a success's figures even when they were filled in. */
START_TEST(failed_jobs_show_their_error)
{
	struct jobdoc d;
	json_t *o;
	json_t *e;

	full_sgemm(&d);
	d.state = "failed";
	d.error_reason = "BACKEND_FAILED";
	d.error_detail = "clEnqueueNDRangeKernel: CL_OUT_OF_RESOURCES";
	o = jobdoc_json(&d);
	ck_assert_str_eq(str(o, "state"), "failed");
	ck_assert_ptr_null(json_object_get(o, "throughput"));
	ck_assert_ptr_null(json_object_get(o, "result"));
	ck_assert_ptr_null(json_object_get(o, "verified"));
	ck_assert_ptr_null(json_object_get(o, "verification"));
	e = json_object_get(o, "error");
	members(e, (const char *const[]){"reason", "detail", NULL});
	ck_assert_str_eq(str(e, "reason"), "BACKEND_FAILED");
	ck_assert_str_eq(str(e, "detail"), "clEnqueueNDRangeKernel: CL_OUT_OF_RESOURCES");
	/* timing and cost are still what was measured */
	ck_assert_double_eq(num(json_object_get(o, "timing"), "kernel_ms"), 2.0);
	ck_assert_double_eq(num(o, "cost_usd"), 0.0125);
	json_decref(o);

	d.state = "timed_out";
	d.error_reason = "TIMEOUT";
	d.error_detail = NULL;
	o = jobdoc_json(&d);
	ck_assert_str_eq(str(json_object_get(o, "error"), "detail"), "");
	json_decref(o);

	/* a success has no error member */
	full_sgemm(&d);
	o = jobdoc_json(&d);
	ck_assert_ptr_null(json_object_get(o, "error"));
	json_decref(o);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("jobdoc");
	TCase *tc = tcase_create("jobdoc");

	tcase_add_test(tc, sizes_follow_the_kernel);
	tcase_add_test(tc, params_follow_the_kernel);
	tcase_add_test(tc, unknown_figures_are_left_out);
	tcase_add_test(tc, a_succeeded_sgemm_in_full);
	tcase_add_test(tc, unknown_results_are_null);
	tcase_add_test(tc, memory_bound_fraction_of_peak);
	tcase_add_test(tc, dot_value_and_outputs);
	tcase_add_test(tc, failed_jobs_show_their_error);
	suite_add_tcase(s, tc);
	return s;
}
