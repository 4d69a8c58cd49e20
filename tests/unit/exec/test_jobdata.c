/*
 * Unit tests for jobdata.c: aligned buffers; generated inputs that depend only on the seed, the input and the index
 * (the same with one thread or four, a prefix of a longer run, the SplitMix64 values themselves), in [-1, 1);
 * summaries of outputs (checksum, min, max, mean, the leading values) and of dot's value; and verification of every
 * kernel against the double-precision reference: float32 results pass, a wrong or NaN entry fails with its error,
 * the tolerance's edge for saxpy, TF32 products allowed only when sgemm ran at TF32, and the sampled checks of a large
 * sgemm and softmax.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "exec/jobdata.h"

static struct pool *one;
static struct pool *four;

static void setup(void)
{
	one = pool_new(1);
	four = pool_new(4);
}

static void teardown(void)
{
	pool_free(one);
	pool_free(four);
}

static float *generated(struct pool *p, size_t n, uint64_t seed, unsigned input)
{
	float *v = jobdata_alloc(n);

	ck_assert_ptr_nonnull(v);
	jobdata_generate(p, v, n, seed, input);
	return v;
}

/* The generator as jobdata.h describes it, written out again: SplitMix64's finaliser over a counter. */
static float reference_value(uint64_t seed, unsigned input, size_t i)
{
	uint64_t z = seed * 0x2545f4914f6cdd1dull + input + (uint64_t)i * 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (float)(z >> 40) * (float)(1.0 / 8388608.0) - 1.0f;
}

START_TEST(aligned_buffers)
{
	float *a = jobdata_alloc(0);
	float *b = jobdata_alloc(1001);

	ck_assert_ptr_nonnull(a); /* one float at least */
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq((uintptr_t)a % 64, 0);
	ck_assert_uint_eq((uintptr_t)b % 64, 0);
	a[0] = 1.0f;
	b[1000] = 2.0f;
	free(a);
	free(b);
	/* a count whose bytes overflow size_t */
	ck_assert_ptr_null(jobdata_alloc(SIZE_MAX / sizeof(float) + 1));
}
END_TEST

START_TEST(generation_is_deterministic_per_seed)
{
	const size_t n = 300000; /* several of the pool's 65536-element grains */
	float *a = generated(one, n, 7, 0);
	float *b = generated(four, n, 7, 0);
	float *prefix = generated(four, 10, 7, 0);
	float *other_seed = generated(four, n, 8, 0);
	float *other_input = generated(four, n, 7, 1);
	size_t same_seed = 0;
	size_t same_input = 0;
	float mn = 1.0f;
	float mx = -1.0f;

	/* the same values whatever the thread count, and element i does not depend on n */
	ck_assert_int_eq(memcmp(a, b, n * sizeof(float)), 0);
	ck_assert_int_eq(memcmp(a, prefix, 10 * sizeof(float)), 0);
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(a[i] >= -1.0f && a[i] < 1.0f, "a[%zu] = %g", i, a[i]);
		mn = a[i] < mn ? a[i] : mn;
		mx = a[i] > mx ? a[i] : mx;
		same_seed += a[i] == other_seed[i];
		same_input += a[i] == other_input[i];
	}
	/* the range is covered, and another seed or input gives other values (a few equal by chance at most) */
	ck_assert(mn < -0.999f && mx > 0.999f);
	ck_assert_uint_lt(same_seed, 100);
	ck_assert_uint_lt(same_input, 100);
	/* the counter-based generator itself: a seed names the same inputs in every release */
	for (size_t i = 0; i < n; i += 997) {
		ck_assert_msg(a[i] == reference_value(7, 0, i), "a[%zu] = %.9g, want %.9g", i, a[i],
			      reference_value(7, 0, i));
		ck_assert(other_input[i] == reference_value(7, 1, i));
		ck_assert(other_seed[i] == reference_value(8, 0, i));
	}
	free(a);
	free(b);
	free(prefix);
	free(other_seed);
	free(other_input);
}
END_TEST

START_TEST(summaries)
{
	const float small[] = {1.0f, -2.0f, 3.5f, 0.25f};
	struct jobdata_summary s;
	const size_t n = 200001;
	float *big = jobdata_alloc(n);
	double want = 0.0;

	jobdata_summarise(one, small, 4, &s);
	ck_assert_double_eq(s.checksum, 2.75);
	ck_assert_double_eq(s.min, -2.0);
	ck_assert_double_eq(s.max, 3.5);
	ck_assert_double_eq(s.mean, 0.6875);
	ck_assert_uint_eq(s.nfirst, 4);
	ck_assert_int_eq(memcmp(s.first, small, sizeof(small)), 0);

	/* integers sum exactly, so every split of the work gives the same figures */
	for (size_t i = 0; i < n; i++) {
		big[i] = (float)((int)(i % 7) - 3);
		want += big[i];
	}
	big[123457] = -9.0f;
	big[199999] = 11.0f;
	want += -9.0 - (double)((int)(123457 % 7) - 3) + 11.0 - (double)((int)(199999 % 7) - 3);
	for (int k = 0; k < 2; k++) {
		jobdata_summarise(k ? four : one, big, n, &s);
		ck_assert_double_eq(s.checksum, want);
		ck_assert_double_eq(s.min, -9.0);
		ck_assert_double_eq(s.max, 11.0);
		ck_assert_double_eq(s.mean, want / (double)n);
		ck_assert_uint_eq(s.nfirst, JOBDATA_FIRST);
		ck_assert_int_eq(memcmp(s.first, big, JOBDATA_FIRST * sizeof(float)), 0);
	}
	free(big);

	/* an empty output: nothing to sum, and no extremes (not finite, so documents show null) */
	jobdata_summarise(four, small, 0, &s);
	ck_assert_double_eq(s.checksum, 0.0);
	ck_assert_double_eq(s.mean, 0.0);
	ck_assert_uint_eq(s.nfirst, 0);
	ck_assert(!isfinite(s.min) && !isfinite(s.max));

	jobdata_summarise_value(-4.25, &s);
	ck_assert_double_eq(s.checksum, -4.25);
	ck_assert_double_eq(s.min, -4.25);
	ck_assert_double_eq(s.max, -4.25);
	ck_assert_double_eq(s.mean, -4.25);
	ck_assert_uint_eq(s.nfirst, 1);
	ck_assert(s.first[0] == -4.25f);
}
END_TEST

/* A work item of kernel k over the given buffers. */
static struct backend_work work(enum kernel_id k, size_t m, size_t n, size_t kk, const float *a, const float *b,
				const float *c, float *out)
{
	struct backend_work w;

	memset(&w, 0, sizeof(w));
	w.kernel = k;
	w.m = m;
	w.n = n;
	w.k = kk;
	w.alpha = 1.0f;
	w.s = 1.0f;
	w.in[0] = a;
	w.in[1] = b;
	w.in[2] = c;
	w.out = out;
	w.dot = NAN;
	return w;
}

static void expect_verified(struct pool *p, const struct backend_work *w, size_t checked, const char *method)
{
	struct jobdata_verification v;

	jobdata_verify(p, w, &v);
	ck_assert_msg(v.verified, "%s: worst ratio %g, max error %g", method, v.worst_ratio, v.max_abs_error);
	ck_assert(v.worst_ratio <= 1.0);
	ck_assert_uint_eq(v.checked, checked);
	ck_assert_str_eq(v.method, method);
}

static void expect_refused(struct pool *p, const struct backend_work *w, double min_error)
{
	struct jobdata_verification v;

	jobdata_verify(p, w, &v);
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
	struct backend_work w = work(KERNEL_SAXPY, 0, n, 0, x, y, NULL, out);

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
	w.s = -0.75f;
	for (size_t i = 0; i < n; i++)
		out[i] = x[i] + w.s * y[i];
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
	struct backend_work w = work(KERNEL_SAXPY, 0, 1, 0, x, y, NULL, out);
	struct jobdata_verification v;

	out[0] = 2.0f + 1.5e-6f; /* 2.00000143: 0.72 of the tolerance 2e-6 */
	jobdata_verify(one, &w, &v);
	ck_assert(v.verified);
	ck_assert_double_eq_tol(v.worst_ratio, (double)(out[0] - 2.0f) / 2e-6, 1e-6);
	ck_assert_double_eq_tol(v.max_abs_error, (double)out[0] - 2.0, 1e-12);
	out[0] = 2.0f + 3e-6f; /* 1.4 of it */
	jobdata_verify(one, &w, &v);
	ck_assert(!v.verified);
	ck_assert(v.worst_ratio > 1.0 && v.worst_ratio < 2.0);
}
END_TEST

START_TEST(verify_dot)
{
	const size_t n = 100000;
	float *x = generated(four, n, 11, 0);
	float *y = generated(four, n, 11, 1);
	struct backend_work w = work(KERNEL_DOT, 0, n, 0, x, y, NULL, NULL);
	struct jobdata_verification v;
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
	w.dot = acc;
	expect_verified(four, &w, 1, "double-precision sum of every product");
	/* the bound, (2e-6 + min(n, 65536) u) of the summed magnitudes, is loose at this length: 500 is beyond it */
	tol = (2e-6 + 65536.0 / 16777216.0) * mag;
	ck_assert(tol > 50.0 && tol < 500.0);
	w.dot = exact + 500.0;
	jobdata_verify(four, &w, &v);
	ck_assert(!v.verified);
	ck_assert_double_eq_tol(v.max_abs_error, 500.0, 1e-6);
	ck_assert_double_eq_tol(v.worst_ratio, 500.0 / tol, 1e-6);
	w.dot = exact + 0.5 * tol;
	jobdata_verify(four, &w, &v);
	ck_assert(v.verified);
	ck_assert_double_eq_tol(v.worst_ratio, 0.5, 1e-6);
	w.dot = NAN;
	expect_refused(one, &w, INFINITY);
	free(x);
	free(y);
}
END_TEST

/* C = alpha * A * B + beta * C0 in double, stored as float32. */
static void gemm(const struct backend_work *w, float *out)
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
	struct backend_work w = work(KERNEL_SGEMM, m, n, k, a, b, c, out);

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
	struct backend_work w = work(KERNEL_SGEMM, m, n, k, a, b, NULL, out);
	struct jobdata_verification v;

	/* positive terms, so the tolerance's scale is the value itself; then an error of 1e-4 of it */
	for (size_t i = 0; i < m * k; i++)
		a[i] = fabsf(a[i]);
	for (size_t i = 0; i < k * n; i++)
		b[i] = fabsf(b[i]);
	gemm(&w, out);
	for (size_t i = 0; i < m * n; i++)
		out[i] *= 1.0f + 1e-4f;
	w.precision = KERNEL_PRECISION_HIGHEST;
	jobdata_verify(one, &w, &v);
	ck_assert(!v.verified);
	w.precision = KERNEL_PRECISION_TF32;
	expect_verified(one, &w, m * n, "double-precision naive loop over every entry");
	w.precision = KERNEL_PRECISION_BF16;
	expect_verified(one, &w, m * n, "double-precision naive loop over every entry");
	/* 0.5% is beyond TF32's allowance (2 x 2^-11), within bfloat16's (2 x 2^-8) */
	for (size_t i = 0; i < m * n; i++)
		out[i] *= 1.0f + 5e-3f;
	w.precision = KERNEL_PRECISION_TF32;
	jobdata_verify(one, &w, &v);
	ck_assert(!v.verified);
	w.precision = KERNEL_PRECISION_BF16;
	jobdata_verify(one, &w, &v);
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
	struct backend_work w = work(KERNEL_SGEMM, m, n, k, a, b, NULL, out);

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
	struct backend_work w = work(KERNEL_SOFTMAX, m, n, 0, x, NULL, NULL, out);

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
	struct backend_work w = work(KERNEL_SOFTMAX, m, n, 0, x, NULL, NULL, out);

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

Suite *make_suite(void)
{
	Suite *s = suite_create("jobdata");
	TCase *tc = tcase_create("jobdata");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, aligned_buffers);
	tcase_add_test(tc, generation_is_deterministic_per_seed);
	tcase_add_test(tc, summaries);
	tcase_add_test(tc, verify_saxpy_and_triad);
	tcase_add_test(tc, verify_tolerance_edge);
	tcase_add_test(tc, verify_dot);
	tcase_add_test(tc, verify_sgemm_every_entry);
	tcase_add_test(tc, verify_sgemm_precision);
	tcase_add_test(tc, verify_sgemm_sampled);
	tcase_add_test(tc, verify_softmax_every_row);
	tcase_add_test(tc, verify_softmax_sampled);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}
