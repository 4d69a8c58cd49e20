/*
 * Unit tests for kernel.c: names, inputs and parameters, buffer lengths (saturating), the work of a run; every row
 * of the table complete, and every built-in backend that claims a kernel running it (the native one here, its result
 * verified); the texts made from the table; and verification of every kernel against the double-precision
 * reference: float32 results pass, a wrong or NaN entry fails with its error, the tolerance's edge for saxpy, TF32
 * products allowed only when sgemm ran at TF32, and the sampled checks of a large sgemm and softmax.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "check_pools.h"
#include "core/pool.h"
#include "exec/backend.h"
#include "exec/jobdata.h"
#include "exec/kernel.h"

START_TEST(names_parse_both_ways)
{
	enum kernel_id k;

	for (unsigned i = 0; i < KERNEL_COUNT; i++) {
		ck_assert(kernel_parse(kernel_name((enum kernel_id)i), &k));
		ck_assert_int_eq(k, (int)i);
		ck_assert_ptr_nonnull(strstr(kernel_names_text(), kernel_name(k)));
	}
	ck_assert(!kernel_parse("fft", &k));
	ck_assert(!kernel_parse(NULL, &k));
	ck_assert_str_eq(kernel_name(KERNEL_COUNT), "?");
	/* what the sizes mean, n always the kernel's own n */
	ck_assert_str_eq(kernel_sizes_text(KERNEL_SAXPY), "n, the vector length");
	ck_assert_str_eq(kernel_sizes_text(KERNEL_SGEMM), "m, n and k: C[m x n] = A[m x k] x B[k x n]");
	ck_assert_ptr_nonnull(strstr(kernel_sizes_text(KERNEL_SOFTMAX), "n is the row length"));
	ck_assert_str_eq(kernel_sizes_text(KERNEL_COUNT), "?");
}
END_TEST

START_TEST(inputs_and_parameters)
{
	const char *const *in = kernel_inputs(KERNEL_SGEMM);

	ck_assert_str_eq(in[0], "a");
	ck_assert_str_eq(in[1], "b");
	ck_assert_str_eq(in[2], "c");
	ck_assert_ptr_null(in[3]);
	ck_assert(kernel_input_optional(KERNEL_SGEMM, 2));
	ck_assert(!kernel_input_optional(KERNEL_SGEMM, 0));
	ck_assert_str_eq(kernel_inputs(KERNEL_TRIAD)[0], "b");
	ck_assert_ptr_null(kernel_inputs(KERNEL_SOFTMAX)[1]);
	ck_assert_uint_eq(kernel_params(KERNEL_SAXPY), KERNEL_PARAM_ALPHA);
	ck_assert_uint_eq(kernel_params(KERNEL_SOFTMAX), KERNEL_PARAM_M);
	ck_assert_uint_eq(kernel_params(KERNEL_DOT), 0);
	ck_assert(kernel_compute_bound(KERNEL_SGEMM));
	ck_assert(!kernel_compute_bound(KERNEL_SOFTMAX));
	ck_assert(kernel_shape_complete(KERNEL_SGEMM, &(struct kernel_shape){.m = 1, .n = 2, .k = 3}));
	ck_assert(!kernel_shape_complete(KERNEL_SGEMM, &(struct kernel_shape){.m = 1, .n = 2}));
	ck_assert(!kernel_shape_complete(KERNEL_SOFTMAX, &(struct kernel_shape){.n = 2}));
	ck_assert(kernel_shape_complete(KERNEL_DOT, &(struct kernel_shape){.n = 2}));
}
END_TEST

START_TEST(lengths_saturate)
{
	struct kernel_shape s = {.m = 3, .n = 5, .k = 7};
	struct kernel_shape huge = {.m = UINT64_MAX / 2, .n = 4, .k = 3};

	ck_assert_uint_eq(kernel_input_len(KERNEL_SGEMM, &s, 0), 21);
	ck_assert_uint_eq(kernel_input_len(KERNEL_SGEMM, &s, 1), 35);
	ck_assert_uint_eq(kernel_input_len(KERNEL_SGEMM, &s, 2), 15);
	ck_assert_uint_eq(kernel_output_len(KERNEL_SGEMM, &s), 15);
	ck_assert_uint_eq(kernel_total_len(KERNEL_SGEMM, &s), 21 + 35 + 15 + 15);
	ck_assert_uint_eq(kernel_output_len(KERNEL_DOT, &s), 1);
	ck_assert_uint_eq(kernel_total_len(KERNEL_SAXPY, &s), 15);
	ck_assert_uint_eq(kernel_output_len(KERNEL_SOFTMAX, &huge), UINT64_MAX);
	ck_assert_uint_eq(kernel_total_len(KERNEL_SOFTMAX, &huge), UINT64_MAX);
}
END_TEST

START_TEST(work_counts)
{
	struct kernel_shape v = {.n = 1000};
	struct kernel_shape g = {.m = 1024, .n = 512, .k = 256};
	struct kernel_shape sm = {.m = 30, .n = 50};

	ck_assert_double_eq(kernel_flops(KERNEL_SAXPY, &v), 2000);
	ck_assert_double_eq(kernel_bytes(KERNEL_SAXPY, &v), 12000);
	ck_assert_double_eq(kernel_bytes(KERNEL_TRIAD, &v), 12000);
	ck_assert_double_eq(kernel_bytes(KERNEL_DOT, &v), 8000);
	ck_assert_double_eq(kernel_flops(KERNEL_SGEMM, &g), 2.0 * 1024 * 512 * 256);
	/* A and B read, C read (it may be given) and the output written */
	ck_assert_double_eq(kernel_bytes(KERNEL_SGEMM, &g), 4.0 * (1024 * 256 + 256 * 512 + 2.0 * 1024 * 512));
	/* softmax counts every row */
	ck_assert_double_eq(kernel_flops(KERNEL_SOFTMAX, &sm), 4.0 * 30 * 50);
	ck_assert_double_eq(kernel_bytes(KERNEL_SOFTMAX, &sm), 8.0 * 30 * 50);
}
END_TEST

START_TEST(every_row_is_complete)
{
	for (unsigned i = 0; i < KERNEL_COUNT; i++) {
		enum kernel_id k = (enum kernel_id)i;
		unsigned p = kernel_params(k);
		struct kernel_shape s = {.m = (p & KERNEL_PARAM_M) ? 3 : 0, .n = 5, .k = (p & KERNEL_PARAM_K) ? 7 : 0};
		const char *const *in = kernel_inputs(k);
		unsigned ninputs = 0;

		ck_assert_str_ne(kernel_name(k), "?");
		ck_assert_msg(strlen(kernel_sizes_text(k)) > 0, "%s: no sizes text", kernel_name(k));
		ck_assert_msg(strncmp(kernel_help_flags(k), "--", 2) == 0, "%s: no help flags", kernel_name(k));
		ck_assert_msg(strlen(kernel_help_text(k)) > 0, "%s: no help", kernel_name(k));
		ck_assert(kernel_shape_complete(k, &s));
		/* every input has a name and dimensions, the sizes of which the kernel takes */
		for (; in[ninputs] != NULL; ninputs++) {
			const char *dims = kernel_input_dims(k, ninputs);

			ck_assert_msg(strlen(dims) == 1 || strlen(dims) == 2, "%s input %u: dims '%s'", kernel_name(k),
				      ninputs, dims);
			for (const char *d = dims; *d; d++)
				ck_assert_ptr_nonnull(kernel_size_of(&s, *d));
			ck_assert_uint_gt(kernel_input_len(k, &s, ninputs), 0);
		}
		ck_assert_uint_ge(ninputs, 1);
		ck_assert_uint_le(ninputs, KERNEL_MAX_INPUTS);
		ck_assert_uint_eq(kernel_input_len(k, &s, ninputs), 0);
		ck_assert_str_eq(kernel_input_dims(k, ninputs), "");
		ck_assert_uint_le(kernel_output_rank(k), 2);
		ck_assert_uint_gt(kernel_output_len(k, &s), 0);
		ck_assert(kernel_flops(k, &s) > 0);
		ck_assert(kernel_bytes(k, &s) > 0);
		ck_assert_ptr_nonnull(strstr(kernel_names_text(), kernel_name(k)));
	}
	/* the figures' kernels are rows, the matrix one compute-bound, the memory one not */
	ck_assert(kernel_compute_bound(kernel_for_figure(KERNEL_FIGURE_MATRIX)));
	ck_assert(!kernel_compute_bound(kernel_for_figure(KERNEL_FIGURE_MEMORY)));
}
END_TEST

/* Runs kernel k on ops's first device of the fake registry: a small shape, generated inputs, verified. */
static void run_verified(const struct backend_ops *ops, void *state, enum kernel_id k)
{
	unsigned p = kernel_params(k);
	struct kernel_work w = {.kernel = k, .m = (p & KERNEL_PARAM_M) ? 9 : 0, .n = 33,
				.k = (p & KERNEL_PARAM_K) ? 5 : 0, .alpha = 1.5f, .beta = 0.5f, .scale = 3.0f,
				.value = NAN};
	struct kernel_shape s = {.m = w.m, .n = w.n, .k = w.k};
	struct backend_timing t = {.compile_ms = NAN, .cached = -1};
	struct kernel_verification v;
	float *in[KERNEL_MAX_INPUTS] = {NULL};
	float *out = NULL;
	char err[256] = "";

	for (unsigned i = 0; i < KERNEL_MAX_INPUTS; i++)
		if (kernel_input_generated(&w, i))
			w.in[i] = in[i] = generated(one, (size_t)kernel_input_len(k, &s, i), 7, i);
	if (kernel_output_rank(k) > 0)
		w.out = out = jobdata_alloc((size_t)kernel_output_len(k, &s));
	ck_assert_msg(ops->run(state, &w, &t, err, sizeof(err)) == ACCELD_OK, "%s %s: %s", ops->name, kernel_name(k),
		      err);
	kernel_verify(one, &w, &v);
	ck_assert_msg(v.verified, "%s %s: worst ratio %g", ops->name, kernel_name(k), v.worst_ratio);
	ck_assert_uint_gt(v.checked, 0);
	for (unsigned i = 0; i < KERNEL_MAX_INPUTS; i++)
		free(in[i]);
	free(out);
}

START_TEST(every_backend_runs_what_it_claims)
{
	struct device cpu;
	void *state = NULL;
	char err[256];

	/* every built-in backend claims every kernel: a new row needs a function in each of them */
	for (size_t b = 0; backend_builtin[b] != NULL; b++)
		for (unsigned i = 0; i < KERNEL_COUNT; i++)
			ck_assert_msg(backend_runs(backend_builtin[b], (enum kernel_id)i), "%s has no %s",
				      backend_builtin[b]->name, kernel_name((enum kernel_id)i));
	ck_assert(!backend_runs(&backend_native, KERNEL_COUNT));
	/* the native backend runs here: each kernel it claims, verified against the table's reference */
	memset(&cpu, 0, sizeof(cpu));
	snprintf(cpu.id, sizeof(cpu.id), "cpu:0");
	cpu.type = DEVICE_CPU;
	ck_assert_int_eq(backend_native.open(&cpu, 2, &state, err, sizeof(err)), ACCELD_OK);
	for (unsigned i = 0; i < KERNEL_COUNT; i++)
		if (backend_runs(&backend_native, (enum kernel_id)i))
			run_verified(&backend_native, state, (enum kernel_id)i);
	backend_native.close(state);
}
END_TEST

START_TEST(texts_from_the_table)
{
	char out[256];

	ck_assert_str_eq(kernel_names_join(0, "|", out, sizeof(out)), "saxpy|triad|dot|sgemm|softmax");
	ck_assert_str_eq(kernel_names_text(), "saxpy, triad, dot, sgemm, softmax");
	ck_assert_str_eq(kernel_names_join(KERNEL_PARAM_M, " and ", out, sizeof(out)), "sgemm and softmax");
	ck_assert_str_eq(kernel_param_owners(KERNEL_PARAM_ALPHA | KERNEL_PARAM_BETA, out, sizeof(out)),
			 "saxpy's alpha; sgemm's alpha and beta");
	ck_assert_str_eq(kernel_param_owners(KERNEL_PARAM_SCALE, out, sizeof(out)), "triad's s");
	ck_assert_str_eq(kernel_sizes_brief(out, sizeof(out)), "n; m, n, k for sgemm; m, n for softmax");
	ck_assert_str_eq(kernel_param_name(KERNEL_PARAM_SCALE), "s");
	ck_assert_str_eq(kernel_param_name(3), "?");
	ck_assert_str_eq(kernel_input_dims(KERNEL_SGEMM, 1), "kn");
	ck_assert_str_eq(kernel_help_example(KERNEL_SAXPY), "--n 1048576");
	ck_assert_ptr_null(kernel_help_example(KERNEL_DOT));
	ck_assert_int_eq(kernel_for_figure(KERNEL_FIGURE_MATRIX), KERNEL_SGEMM);
	ck_assert_int_eq(kernel_for_figure(KERNEL_FIGURE_MEMORY), KERNEL_TRIAD);
	/* the transfer test needs one input and an output of one size, both moved whole */
	ck_assert_int_eq(kernel_for_figure(KERNEL_FIGURE_TRANSFER), KERNEL_SOFTMAX);
	ck_assert_uint_eq(kernel_input_len(KERNEL_SOFTMAX, &(struct kernel_shape){.m = 3, .n = 5}, 0), 15);
	ck_assert_uint_eq(kernel_output_len(KERNEL_SOFTMAX, &(struct kernel_shape){.m = 3, .n = 5}), 15);
}
END_TEST

START_TEST(optional_inputs_generated_by_their_weight)
{
	struct kernel_work w = {.kernel = KERNEL_SGEMM, .m = 2, .n = 2, .k = 2, .alpha = 1.0f, .beta = 0.0f};

	ck_assert(kernel_input_generated(&w, 0));
	ck_assert(kernel_input_generated(&w, 1));
	ck_assert(!kernel_input_generated(&w, 2)); /* beta 0: c is zeros */
	w.beta = 0.5f;
	ck_assert(kernel_input_generated(&w, 2));
	w.kernel = KERNEL_DOT;
	ck_assert(!kernel_input_generated(&w, 2));
}
END_TEST

/* A work item of kernel k over the given buffers. */
static struct kernel_work work(enum kernel_id k, size_t m, size_t n, size_t kk, const float *a, const float *b,
				const float *c, float *out)
{
	struct kernel_work w;

	memset(&w, 0, sizeof(w));
	w.kernel = k;
	w.m = m;
	w.n = n;
	w.k = kk;
	w.alpha = 1.0f;
	w.scale = 1.0f;
	w.in[0] = a;
	w.in[1] = b;
	w.in[2] = c;
	w.out = out;
	w.value = NAN;
	return w;
}

static void expect_verified(struct pool *p, const struct kernel_work *w, size_t checked, const char *method)
{
	struct kernel_verification v;

	kernel_verify(p, w, &v);
	ck_assert_msg(v.verified, "%s: worst ratio %g, max error %g", method, v.worst_ratio, v.max_abs_error);
	ck_assert(v.worst_ratio <= 1.0);
	ck_assert_uint_eq(v.checked, checked);
	ck_assert_str_eq(v.method, method);
}

static void expect_refused(struct pool *p, const struct kernel_work *w, double min_error)
{
	struct kernel_verification v;

	kernel_verify(p, w, &v);
	ck_assert_msg(!v.verified, "verified with worst ratio %g", v.worst_ratio);
	ck_assert(v.worst_ratio > 1.0);
	ck_assert_msg(v.max_abs_error >= min_error, "max error %g", v.max_abs_error);
}

START_TEST(verify_saxpy_and_triad)
{
	const size_t n = 100000;
	float *x = generated(four, n, 3, 0);
	float *y = generated(four, n, 3, 1);
	float *out = jobdata_alloc(n);
	struct kernel_work w = work(KERNEL_SAXPY, 0, n, 0, x, y, NULL, out);

	w.alpha = 2.5f;
	for (size_t i = 0; i < n; i++)
		out[i] = w.alpha * x[i] + y[i]; /* float32, as a kernel computes it */
	expect_verified(one, &w, n, "double-precision loop over every element");
	expect_verified(four, &w, n, "double-precision loop over every element");
	out[4242] += 0.01f;
	expect_refused(four, &w, 0.009);
	out[4242] = NAN;
	expect_refused(four, &w, INFINITY);

	w = work(KERNEL_TRIAD, 0, n, 0, x, y, NULL, out);
	w.scale = -0.75f;
	for (size_t i = 0; i < n; i++)
		out[i] = x[i] + w.scale * y[i];
	expect_verified(four, &w, n, "double-precision loop over every element");
	/* triad is b + s*c: saxpy's reading of the same buffers (alpha*x + y) does not match */
	w.kernel = KERNEL_SAXPY;
	w.alpha = -0.75f;
	expect_refused(four, &w, 0.0);
	free(x);
	free(y);
	free(out);
}
END_TEST

/* The tolerance of saxpy and triad: 1e-6 of |first term| + |second term|. */
START_TEST(verify_tolerance_edge)
{
	const float x[1] = {1.0f};
	const float y[1] = {1.0f};
	float out[1];
	struct kernel_work w = work(KERNEL_SAXPY, 0, 1, 0, x, y, NULL, out);
	struct kernel_verification v;

	out[0] = 2.0f + 1.5e-6f; /* 2.00000143: 0.72 of the tolerance 2e-6 */
	kernel_verify(one, &w, &v);
	ck_assert(v.verified);
	ck_assert_double_eq_tol(v.worst_ratio, (double)(out[0] - 2.0f) / 2e-6, 1e-6);
	ck_assert_double_eq_tol(v.max_abs_error, (double)out[0] - 2.0, 1e-12);
	out[0] = 2.0f + 3e-6f; /* 1.4 of it */
	kernel_verify(one, &w, &v);
	ck_assert(!v.verified);
	ck_assert(v.worst_ratio > 1.0 && v.worst_ratio < 2.0);
}
END_TEST

START_TEST(verify_dot)
{
	const size_t n = 100000;
	float *x = generated(four, n, 11, 0);
	float *y = generated(four, n, 11, 1);
	struct kernel_work w = work(KERNEL_DOT, 0, n, 0, x, y, NULL, NULL);
	struct kernel_verification v;
	float acc = 0.0f;
	double exact = 0.0;
	double mag = 0.0;
	double tol;

	/* a naive float32 sum carries its rounding; the k * u bound covers it */
	for (size_t i = 0; i < n; i++) {
		acc += x[i] * y[i];
		exact += (double)x[i] * y[i];
		mag += fabs((double)x[i] * y[i]);
	}
	w.value = acc;
	expect_verified(four, &w, 1, "double-precision sum of every product");
	/* the bound, (2e-6 + min(n, 65536) u) of the summed magnitudes, is loose at this length: 500 is beyond it */
	tol = (2e-6 + 65536.0 / 16777216.0) * mag;
	ck_assert(tol > 50.0 && tol < 500.0);
	w.value = exact + 500.0;
	kernel_verify(four, &w, &v);
	ck_assert(!v.verified);
	ck_assert_double_eq_tol(v.max_abs_error, 500.0, 1e-6);
	ck_assert_double_eq_tol(v.worst_ratio, 500.0 / tol, 1e-6);
	w.value = exact + 0.5 * tol;
	kernel_verify(four, &w, &v);
	ck_assert(v.verified);
	ck_assert_double_eq_tol(v.worst_ratio, 0.5, 1e-6);
	w.value = NAN;
	expect_refused(one, &w, INFINITY);
	free(x);
	free(y);
}
END_TEST

/* C = alpha * A * B + beta * C0 in double, stored as float32. */
static void gemm(const struct kernel_work *w, float *out)
{
	for (size_t i = 0; i < w->m; i++)
		for (size_t j = 0; j < w->n; j++) {
			double acc = 0.0;

			for (size_t p = 0; p < w->k; p++)
				acc += (double)w->in[0][i * w->k + p] * w->in[1][p * w->n + j];
			acc *= w->alpha;
			if (w->in[2] != NULL)
				acc += (double)w->beta * w->in[2][i * w->n + j];
			out[i * w->n + j] = (float)acc;
		}
}

START_TEST(verify_sgemm_every_entry)
{
	const size_t m = 33, n = 17, k = 65;
	float *a = generated(four, m * k, 5, 0);
	float *b = generated(four, k * n, 5, 1);
	float *c = generated(four, m * n, 5, 2);
	float *out = jobdata_alloc(m * n);
	struct kernel_work w = work(KERNEL_SGEMM, m, n, k, a, b, c, out);

	w.alpha = 1.5f;
	w.beta = -0.5f;
	gemm(&w, out);
	expect_verified(four, &w, m * n, "double-precision naive loop over every entry");
	/* beta counts: the same output read without C is wrong */
	w.in[2] = NULL;
	expect_refused(four, &w, 0.0);
	w.in[2] = c;
	out[m * n - 1] += 0.5f;
	expect_refused(one, &w, 0.49);
	free(a);
	free(b);
	free(c);
	free(out);
}
END_TEST

/* Products rounded to TF32 err more than float32's: allowed when the run says it used TF32 (or bfloat16). */
START_TEST(verify_sgemm_precision)
{
	const size_t m = 8, n = 8, k = 64;
	float *a = generated(one, m * k, 9, 0);
	float *b = generated(one, k * n, 9, 1);
	float *out = jobdata_alloc(m * n);
	struct kernel_work w = work(KERNEL_SGEMM, m, n, k, a, b, NULL, out);
	struct kernel_verification v;

	/* positive terms, so the tolerance's scale is the value itself; then an error of 1e-4 of it */
	for (size_t i = 0; i < m * k; i++)
		a[i] = fabsf(a[i]);
	for (size_t i = 0; i < k * n; i++)
		b[i] = fabsf(b[i]);
	gemm(&w, out);
	for (size_t i = 0; i < m * n; i++)
		out[i] *= 1.0f + 1e-4f;
	w.precision = KERNEL_PRECISION_HIGHEST;
	kernel_verify(one, &w, &v);
	ck_assert(!v.verified);
	w.precision = KERNEL_PRECISION_TF32;
	expect_verified(one, &w, m * n, "double-precision naive loop over every entry");
	w.precision = KERNEL_PRECISION_BF16;
	expect_verified(one, &w, m * n, "double-precision naive loop over every entry");
	/* 0.5% is beyond TF32's allowance (2 x 2^-11), within bfloat16's (2 x 2^-8) */
	for (size_t i = 0; i < m * n; i++)
		out[i] *= 1.0f + 5e-3f;
	w.precision = KERNEL_PRECISION_TF32;
	kernel_verify(one, &w, &v);
	ck_assert(!v.verified);
	w.precision = KERNEL_PRECISION_BF16;
	kernel_verify(one, &w, &v);
	ck_assert(v.verified);
	free(a);
	free(b);
	free(out);
}
END_TEST

/* Beyond 1.5e8 multiply-adds, 1024 sampled entries are checked. */
START_TEST(verify_sgemm_sampled)
{
	const size_t m = 600, n = 600, k = 600;
	float *a = jobdata_alloc(m * k);
	float *b = generated(four, k * n, 13, 1);
	float *out = jobdata_alloc(m * n);
	struct kernel_work w = work(KERNEL_SGEMM, m, n, k, a, b, NULL, out);

	/* A of ones: every row of C is B's column sums */
	for (size_t i = 0; i < m * k; i++)
		a[i] = 1.0f;
	for (size_t j = 0; j < n; j++) {
		double sum = 0.0;

		for (size_t p = 0; p < k; p++)
			sum += b[p * n + j];
		for (size_t i = 0; i < m; i++)
			out[i * n + j] = (float)sum;
	}
	expect_verified(four, &w, 1024, "double-precision naive loop over 1024 sampled entries");
	expect_verified(one, &w, 1024, "double-precision naive loop over 1024 sampled entries");
	for (size_t i = 0; i < m * n; i++)
		out[i] += 1.0f;
	expect_refused(four, &w, 0.99);
	free(a);
	free(b);
	free(out);
}
END_TEST

START_TEST(verify_softmax_every_row)
{
	const size_t m = 5, n = 300;
	float *x = generated(four, m * n, 17, 0);
	float *out = jobdata_alloc(m * n);
	struct kernel_work w = work(KERNEL_SOFTMAX, m, n, 0, x, NULL, NULL, out);

	for (size_t i = 0; i < m; i++) {
		double mx = x[i * n];
		double sum = 0.0;

		for (size_t j = 0; j < n; j++)
			mx = x[i * n + j] > mx ? x[i * n + j] : mx;
		for (size_t j = 0; j < n; j++)
			sum += exp((double)x[i * n + j] - mx);
		for (size_t j = 0; j < n; j++)
			out[i * n + j] = (float)(exp((double)x[i * n + j] - mx) / sum);
	}
	expect_verified(four, &w, m * n, "double-precision softmax of every row");
	/* a row that does not sum to one */
	out[2 * n + 7] *= 1.01f;
	expect_refused(four, &w, 0.0);
	free(x);
	free(out);
}
END_TEST

/* Beyond 1.6e7 elements, 64 sampled rows. */
START_TEST(verify_softmax_sampled)
{
	const size_t m = 65, n = 246154; /* 16000010 elements */
	float *x = jobdata_alloc(m * n);
	float *out = jobdata_alloc(m * n);
	struct kernel_work w = work(KERNEL_SOFTMAX, m, n, 0, x, NULL, NULL, out);

	/* equal inputs: every output is 1/n */
	memset(x, 0, m * n * sizeof(float));
	for (size_t i = 0; i < m * n; i++)
		out[i] = (float)(1.0 / (double)n);
	expect_verified(four, &w, 64 * n, "double-precision softmax of 64 sampled rows");
	for (size_t i = 0; i < m * n; i++)
		out[i] = (float)(2.0 / (double)n);
	expect_refused(four, &w, 0.0);
	free(x);
	free(out);
}
END_TEST

/* The sample of a vector: every element of a small output in order; 4,096 distinct ones of a larger output,
 * (c0 + j * cs) mod len, the same for the same seed. Sampled verification of a correct run passes and finds a
 * single wrong element. */
START_TEST(sample_plan_and_verification)
{
	static const uint64_t lens[] = {4096 * 3, 10007, 1u << 20, 4097};
	struct kernel_sample s, again;
	struct pool *p = pool_new(2);
	float sample[KERNEL_SAMPLE_MAX];
	float *x, *y;
	struct kernel_work w = {.kernel = KERNEL_SAXPY, .n = 50000, .alpha = 3.0f, .seed = 11, .generate = true,
			      .sample = sample};
	struct kernel_verification v;

	kernel_sample_plan(1, 100, 9, &s);
	ck_assert(s.count == 100 && kernel_sample_whole(&s) && s.nrows == 1 && s.ncols == 100);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		unsigned char *seen = calloc(lens[i], 1);

		kernel_sample_plan(1, lens[i], 9, &s);
		kernel_sample_plan(1, lens[i], 9, &again);
		ck_assert(s.c0 == again.c0 && s.cs == again.cs && s.count == KERNEL_SAMPLE_MAX);
		ck_assert(s.nrows == 1 && s.ncols == KERNEL_SAMPLE_MAX && !kernel_sample_whole(&s));
		for (size_t j = 0; j < s.count; j++) {
			uint64_t e = kernel_sample_index(&s, j);

			ck_assert(e == (s.c0 + j * s.cs) % lens[i]);
			ck_assert(e < lens[i] && !seen[e]);
			seen[e] = 1;
		}
		free(seen);
	}
	/* a run as the native backend makes it: inputs by the C twin, the sample taken from the output */
	x = malloc(w.n * sizeof(float));
	y = malloc(w.n * sizeof(float));
	for (size_t e = 0; e < w.n; e++) {
		x[e] = kernel_gen_value(kernel_gen_key(w.seed, 0), e);
		y[e] = kernel_gen_value(kernel_gen_key(w.seed, 1), e);
	}
	kernel_sample_of(w.kernel, &(struct kernel_shape){.n = w.n}, w.seed, &s);
	w.grid = s;
	w.nsample = s.count;
	for (size_t j = 0; j < s.count; j++) {
		uint64_t e = kernel_sample_index(&s, j);

		sample[j] = w.alpha * x[e] + y[e];
	}
	kernel_verify_sample(p, &w, &v);
	ck_assert(v.verified && v.sampled);
	ck_assert_uint_eq(v.checked, KERNEL_SAMPLE_MAX);
	sample[1234] += 1e-3f;
	kernel_verify_sample(p, &w, &v);
	ck_assert(!v.verified);
	free(x);
	free(y);
	pool_free(p);
}
END_TEST

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The sample of a matrix is a grid: R distinct rows by C distinct columns, no element twice, the whole output in
 * order when it has at most 4,096 elements, the same for the same seed. */
START_TEST(sample_grid_of_a_matrix)
{
	static const struct {
		uint64_t rows, cols;
		size_t nrows, ncols;
	} cases[] = {{8192, 8192, 64, 64}, {8192, 10, 409, 10},  {10, 100000, 10, 409}, {70, 90, 64, 64},
		     {3, 8000, 3, 1365},   {5000, 1, 4096, 1},   {1, 5000, 1, 4096},    {64, 64, 64, 64},
		     {30, 30, 30, 30},     {4097, 1, 4096, 1},   {1000003, 999983, 64, 64}, {128, 33, 124, 33}};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct kernel_sample s, again;
		uint64_t len = cases[i].rows * cases[i].cols;
		unsigned char *row_seen = calloc(cases[i].rows, 1), *col_seen = calloc(cases[i].cols, 1);
		size_t nrows = 0, ncols = 0;
		uint64_t *seen = calloc(KERNEL_SAMPLE_MAX, sizeof(*seen));

		kernel_sample_plan(cases[i].rows, cases[i].cols, 77 + i, &s);
		kernel_sample_plan(cases[i].rows, cases[i].cols, 77 + i, &again);
		ck_assert_msg(s.nrows == cases[i].nrows && s.ncols == cases[i].ncols, "%zu: %zu x %zu", i, s.nrows,
			      s.ncols);
		ck_assert(s.count == s.nrows * s.ncols && s.count <= KERNEL_SAMPLE_MAX);
		ck_assert(memcmp(&s, &again, sizeof(s)) == 0);
		ck_assert(kernel_sample_whole(&s) == (len <= KERNEL_SAMPLE_MAX));
		for (size_t j = 0; j < s.count; j++) {
			uint64_t r = kernel_sample_row(&s, j), c = kernel_sample_col(&s, j), e = kernel_sample_index(&s, j);

			ck_assert(r < cases[i].rows && c < cases[i].cols && e == r * cases[i].cols + c);
			if (len <= KERNEL_SAMPLE_MAX)
				ck_assert_uint_eq(e, j);
			/* row j / C and column j % C of the grid */
			ck_assert(r == kernel_sample_row(&s, j / s.ncols * s.ncols));
			ck_assert(c == kernel_sample_col(&s, j % s.ncols));
			nrows += !row_seen[r];
			ncols += !col_seen[c];
			row_seen[r] = col_seen[c] = 1;
			seen[j] = e;
		}
		ck_assert_uint_eq(nrows, s.nrows);
		ck_assert_uint_eq(ncols, s.ncols);
		qsort(seen, s.count, sizeof(*seen), cmp_u64);
		for (size_t j = 1; j < s.count; j++) /* no element twice */
			ck_assert(seen[j - 1] != seen[j]);
		free(row_seen);
		free(col_seen);
		free(seen);
	}
}
END_TEST

/* The reference of one sampled sgemm element in double, naively from the generator. */
static double gemm_sample_ref(const struct kernel_work *w, size_t j)
{
	uint64_t r = kernel_sample_row(&w->grid, j), c = kernel_sample_col(&w->grid, j);
	uint32_t ka = kernel_gen_key(w->seed, 0), kb = kernel_gen_key(w->seed, 1), kc = kernel_gen_key(w->seed, 2);
	double sum = 0.0;

	for (uint64_t q = 0; q < w->k; q++)
		sum += (double)kernel_gen_value(ka, r * w->k + q) * kernel_gen_value(kb, q * w->n + c);
	return w->alpha * sum + (w->beta != 0.0f ? w->beta * (double)kernel_gen_value(kc, r * w->n + c) : 0.0);
}

/* Sampled sgemm and softmax verification over the grid: a correct sample passes (sgemm over several chunks of k,
 * and with rows and columns that fill no whole block), and one wrong element anywhere in it is caught. */
START_TEST(sample_grid_verification)
{
	static const struct kernel_shape shapes[] = {{1, 100000, 2500}, {70, 90, 37}, {4099, 7, 13}, {100, 100, 64}};
	struct pool *p = pool_new(2);
	float *sample = malloc(KERNEL_SAMPLE_MAX * sizeof(float));
	struct kernel_verification v;

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		struct kernel_work w = {.kernel = KERNEL_SGEMM, .m = shapes[i].m, .n = shapes[i].n, .k = shapes[i].k,
				      .alpha = 1.25f, .beta = i % 2 ? 0.5f : 0.0f, .seed = 5 + i, .generate = true,
				      .sample = sample};

		kernel_sample_of(w.kernel, &shapes[i], w.seed, &w.grid);
		w.nsample = w.grid.count;
		for (size_t j = 0; j < w.nsample; j++)
			sample[j] = (float)gemm_sample_ref(&w, j);
		kernel_verify_sample(p, &w, &v);
		ck_assert_msg(v.verified && v.sampled, "%zu: %g", i, v.worst_ratio);
		ck_assert_uint_eq(v.checked, w.nsample);
		ck_assert(v.worst_ratio < 0.05);
		sample[w.nsample - 1 - i * 7] += 1.0f;
		kernel_verify_sample(p, &w, &v);
		ck_assert_msg(!v.verified, "%zu", i);
	}
	{
		/* softmax: 3 rows of 8000 (a grid of 3 x 1365), the output made from the generator in double */
		struct kernel_work w = {.kernel = KERNEL_SOFTMAX, .m = 3, .n = 8000, .seed = 9, .generate = true,
				      .sample = sample};
		uint32_t key = kernel_gen_key(w.seed, 0);

		kernel_sample_of(w.kernel, &(struct kernel_shape){.m = w.m, .n = w.n}, w.seed, &w.grid);
		ck_assert(w.grid.nrows == 3 && w.grid.ncols == 1365);
		w.nsample = w.grid.count;
		for (size_t j = 0; j < w.nsample; j++) {
			uint64_t r = kernel_sample_row(&w.grid, j);
			double mx = -1e300, sum = 0.0;

			for (uint64_t q = 0; q < w.n; q++)
				mx = fmax(mx, kernel_gen_value(key, r * w.n + q));
			for (uint64_t q = 0; q < w.n; q++)
				sum += exp(kernel_gen_value(key, r * w.n + q) - mx);
			sample[j] = (float)(exp(kernel_gen_value(key, kernel_sample_index(&w.grid, j)) - mx) / sum);
		}
		kernel_verify_sample(p, &w, &v);
		ck_assert(v.verified && v.checked == w.nsample);
		ck_assert_str_eq(v.method, "double-precision reference of 4095 sampled elements (3 rows x 1365 columns)");
		sample[2000] *= 1.01f;
		kernel_verify_sample(p, &w, &v);
		ck_assert(!v.verified);
	}
	free(sample);
	pool_free(p);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("kernel");
	TCase *tc = tcase_create("kernel");

	tcase_add_test(tc, names_parse_both_ways);
	tcase_add_test(tc, inputs_and_parameters);
	tcase_add_test(tc, lengths_saturate);
	tcase_add_test(tc, work_counts);
	tcase_add_test(tc, every_row_is_complete);
	tcase_add_test(tc, texts_from_the_table);
	tcase_add_test(tc, optional_inputs_generated_by_their_weight);
	suite_add_tcase(s, tc);
	tc = tcase_create("runs");
	tcase_add_checked_fixture(tc, check_pools_setup, check_pools_teardown);
	tcase_add_test(tc, every_backend_runs_what_it_claims);
	tcase_add_test(tc, verify_saxpy_and_triad);
	tcase_add_test(tc, verify_tolerance_edge);
	tcase_add_test(tc, verify_dot);
	tcase_add_test(tc, verify_sgemm_every_entry);
	tcase_add_test(tc, verify_sgemm_precision);
	tcase_add_test(tc, verify_sgemm_sampled);
	tcase_add_test(tc, verify_softmax_every_row);
	tcase_add_test(tc, verify_softmax_sampled);
	tcase_add_test(tc, sample_plan_and_verification);
	tcase_add_test(tc, sample_grid_of_a_matrix);
	tcase_add_test(tc, sample_grid_verification);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}
